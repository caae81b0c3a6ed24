"""How a PTX operation is declared: its inline-PTX Numba intrinsic and, beside it, its Python twin.

Every operation in `gemm_kernels.ptx` is a Numba ``@intrinsic`` (so kernels compile to real PTX)
that also carries ``op.twin``: the Python function the emulator substitutes for it when it runs the
same kernel source on the CPU. ``asm_op`` builds the common case, a single inline-asm statement:

    mbarrier_init = asm_op(
        "mbarrier_init",
        "mbarrier.init.shared::cta.b64 [{bar}], {count};",
        operands=(("bar", u32), ("count", u32)),
        doc="...")

    @twin(mbarrier_init)
    def _(bar, count):
        ...  # the same effect on the emulator's state

Placeholders ``{name}`` name operands and results; literal PTX braces are doubled (``{{ }}``) as in
``str.format``. Results come first in LLVM's operand numbering; we hide that.

Numba traps handled here (see the project notes): Python int literals type as int64, so every
operand is cast to its declared PTX width in codegen; asm that touches memory or ordering declares
``~{memory}`` and is marked side-effecting so LLVM neither reorders nor deletes it; every call is
``convergent`` (as clang marks CUDA inline asm), so LLVM cannot hoist or duplicate a warp-collective
instruction into divergent code.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

u16, u32, u64, f32 = types.uint16, types.uint32, types.uint64, types.float32

_CONSTRAINT = {u16: "h", u32: "r", u64: "l", f32: "f"}
_IRTYPE = {u16: ir.IntType(16), u32: ir.IntType(32), u64: ir.IntType(64), f32: ir.FloatType()}
_NPTYPE = {u16: np.uint16, u32: np.uint32, u64: np.uint64, f32: np.float32}

#: every declared op, by name (the emulator uses it to find twins; tests use it to build each op)
REGISTRY: dict[str, object] = {}


def _numbered(template: str, names: list[str]) -> str:
    return template.format(**{n: f"${i}" for i, n in enumerate(names)})


def asm_op(name, template, *, operands=(), results=(), doc, memory=True):
    """Declare one inline-PTX operation as a Numba intrinsic.

    operands/results: sequences of (name, numba type) with types among u16, u32, u64, f32.
    One result returns a scalar; several return a UniTuple (all of one type).
    """
    op_names = [n for n, _ in operands]
    res_names = [n for n, _ in results]
    text = _numbered(template, res_names + op_names)
    constraints = [f"={_CONSTRAINT[t]}" for _, t in results] + [_CONSTRAINT[t] for _, t in operands]
    if memory:
        constraints.append("~{memory}")
    constraint_str = ",".join(constraints)
    op_types = [t for _, t in operands]
    res_types = [t for _, t in results]
    if not res_types:
        ret = types.void
    elif len(res_types) == 1:
        ret = res_types[0]
    else:
        assert len(set(res_types)) == 1, "results of one op share a type"
        ret = types.UniTuple(res_types[0], len(res_types))

    def typer(*argtys):
        if len(argtys) != len(op_types):
            return None
        sig = ret(*argtys)

        def codegen(context, builder, sig, args):
            vals = [context.cast(builder, v, aty, want) for v, aty, want in zip(args, sig.args, op_types)]
            if not res_types:
                lret = ir.VoidType()
            elif len(res_types) == 1:
                lret = _IRTYPE[res_types[0]]
            else:
                lret = ir.LiteralStructType([_IRTYPE[t] for t in res_types])
            fty = ir.FunctionType(lret, [_IRTYPE[t] for t in op_types])
            # convergent: LLVM must not move the asm into or out of divergent code (the
            # .sync.aligned instructions require the whole warp to execute them together)
            out = builder.call(ir.InlineAsm(fty, text, constraint_str, side_effect=True), vals,
                               attrs=("convergent",))
            if len(res_types) > 1:
                tup = context.get_value_type(ret)
                acc = ir.Constant(tup, ir.Undefined)
                for i in range(len(res_types)):
                    acc = builder.insert_value(acc, builder.extract_value(out, i), i)
                return acc
            if not res_types:
                return context.get_dummy_value()
            return out

        return sig, codegen

    op = _make_intrinsic(name, op_names, typer)
    op.__doc__ = f"``{template}``\n\n{doc}"
    op.ptx = text
    op.template = template
    op.operand_types = tuple(op_types)
    op.result_types = tuple(res_types)
    op.twin = None
    REGISTRY[name] = op
    return op


def _make_intrinsic(name, params, typer):
    """Numba intrinsics need a typing function with one named parameter per operand (no *args)."""
    plist = ", ".join(params)
    src = f"def {name}(typingctx{', ' if plist else ''}{plist}):\n    return _typer({plist})\n"
    ns = {"_typer": typer}
    exec(src, ns)  # noqa: S102 - builds a signature Numba can inspect
    return intrinsic(ns[name])


def custom_op(fn, *, doc=None):
    """Register a hand-written ``@intrinsic`` (for ops that are not one asm statement)."""
    op = intrinsic(fn)
    if doc:
        op.__doc__ = doc
    op.twin = None
    op.ptx = None
    REGISTRY[fn.__name__] = op
    return op


def twin(op):
    """Attach the decorated Python function to ``op`` as its emulator twin."""

    def deco(fn):
        op.twin = fn
        fn.__name__ = getattr(op, "_name", fn.__name__)
        return fn

    return deco
