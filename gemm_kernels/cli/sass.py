"""``sass``: build a kernel for sm_100a (no GPU needed) and print its SASS or a resource summary.

    python -m gemm_kernels sass --chapter 3 --summary
    python -m gemm_kernels sass --chapter 7 --hot-loops
    python -m gemm_kernels sass --kernel gemm_kernels.kernels.v1_basic:kernel --sig "void(uint64, int32)"
"""
from __future__ import annotations

import sys

from ._common import CliError, KernelRef, chapter_kernel, check_output, load_function, positive_int


def add_parser(subparsers):
    p = subparsers.add_parser(
        "sass", help="build for sm_100a and print SASS or a resource summary",
        description="Compile a kernel to PTX, link it to a cubin for the target and disassemble it. "
                    "Works without a GPU.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--chapter", type=int, metavar="N", help="the kernel of chapter N (gemm_kernels.CHAPTERS)")
    src.add_argument("--kernel", metavar="MODULE:FUNCTION",
                     help="a kernel function or numba.cuda.jit dispatcher, e.g. pkg.mod:func")
    p.add_argument("--sig", help="numba signature, e.g. 'void(uint64, int32)' (required with --kernel; "
                                 "overrides the chapter's)")
    p.add_argument("--arch", default="sm_100a", help="target (default sm_100a; sm_90a also works)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--summary", action="store_true",
                      help="registers, shared/local memory, spills and an opcode histogram")
    what.add_argument("--ptx", action="store_true", help="print the PTX instead of the SASS")
    what.add_argument("--hot-loops", action="store_true",
                      help="instruction counts of the MMA, TMA-producer and epilogue loops per unit of work, "
                           "by category; flags MEMBAR.*GPU and CALL inside any loop (gemm_kernels.sass_loops)")
    what.add_argument("--ordering", action="store_true",
                      help="check that every ordinary load of mbarrier-published shared memory (the CLC "
                           "response) comes after a wait on its barrier on every path (gemm_kernels.sass_order; "
                           "--chapter, or --kernel whose module names its shared-memory plan ``plan``); exit 1 "
                           "if one does not")
    p.add_argument("--loads-per-stage", type=int, metavar="N",
                   help="TMA loads per pipeline stage, to count the producer loop per k-block (default: the "
                        "chapter's, else 2)")
    p.add_argument("--full-opcodes", action="store_true", help="histogram by full opcode (with modifiers)")
    p.add_argument("--lineinfo", action="store_true", help="with source line info")
    p.add_argument("--max-registers", type=positive_int, metavar="N", help="register cap (ptxas -maxrregcount)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    from gemm_kernels.runtime.build import build

    try:
        if args.chapter is not None:
            ref = chapter_kernel(args.chapter)
            if args.sig:
                ref.signature = args.sig
        else:
            if not args.sig:
                raise CliError("--kernel needs --sig (e.g. --sig 'void(uint64, int32)')")
            ref = KernelRef(load_function(args.kernel), args.sig, args.kernel)
        check_output("--out", args.out)
        try:
            b = build(ref.kernel, ref.signature, arch=args.arch, lineinfo=args.lineinfo,
                      max_registers=args.max_registers)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - numba's or ptxas's error, said in one line
            raise CliError(_why_it_did_not_build(ref, args.arch, e)) from e
    except (CliError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    if args.summary:
        text = b.summary(base=not args.full_opcodes)
    elif args.ptx:
        text = b.ptx
    elif args.hot_loops:
        from gemm_kernels.sass_loops import chapter_loads_per_stage, report

        if not b.sass:
            print("error: no SASS (nvdisasm not found); --hot-loops needs it", file=sys.stderr)
            return 1
        lps = args.loads_per_stage or (chapter_loads_per_stage(args.chapter) if args.chapter is not None else 2)
        text = report(b.sass, lps, label=ref.label)
    elif args.ordering:
        from gemm_kernels.sass_order import chapter_plan, check, report as ordering_report

        plan = chapter_plan(args.chapter) if args.chapter is not None else _module_plan(args.kernel)
        if not b.sass or plan is None:
            print("error: --ordering needs the SASS (nvdisasm) and the kernel's shared-memory plan (--chapter, "
                  "or --kernel MODULE:FUNCTION where MODULE defines ``plan``)", file=sys.stderr)
            return 2
        loads = check(b.sass, plan)
        print(ordering_report(loads, ref.label))
        return 1 if any(ld.problem for ld in loads) else 0
    else:
        if not b.sass:
            print("error: no SASS (nvdisasm not found); try --summary or --ptx", file=sys.stderr)
            return 1
        text = b.sass
    if args.out:
        with open(args.out, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        print(f"wrote {args.out} ({ref.label}, {b.arch})", file=sys.stderr)
    else:
        print(text)
    return 0


def _why_it_did_not_build(ref, arch, err) -> str:
    """One line for a failed build: a kernel that uses tcgen05 built for a target without it is
    named as such (ptxas would list every instruction it rejects); else the first error line."""
    from gemm_kernels.runtime.build import build

    if arch != "sm_100a":
        try:
            ptx = build(ref.kernel, ref.signature, arch="sm_100a").ptx
        except Exception:  # noqa: BLE001 - it does not build for sm_100a either: say the original error
            ptx = ""
        if "tcgen05." in ptx:
            return (f"{ref.label} uses tcgen05 (the Blackwell tensor core's instructions), which {arch} does not "
                    f"have: build it with --arch sm_100a")
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    first = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "")
    return f"cannot build {ref.label} for {arch} (signature {ref.signature!r}): {type(err).__name__}: {first}"


def _module_plan(spec):
    """The shared-memory plan (an ``SmemPlan`` named ``plan``) of the module of ``MODULE:FUNCTION``, or None."""
    import importlib

    from gemm_kernels.smem_plan import SmemPlan

    plan = getattr(importlib.import_module(spec.split(":")[0]), "plan", None)
    return plan if isinstance(plan, SmemPlan) else None
