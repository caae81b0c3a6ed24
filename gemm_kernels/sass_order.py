"""Do a kernel's ordinary loads of mbarrier-published data stay behind their waits in the SASS?

A wait on an mbarrier phase orders the loads after it only if it acquires. ``try_wait.relaxed``
orders nothing, and ptxas uses that freedom: in chapter 10 it once moved the scheduler warp's
``LDS.128`` of a cluster-launch-control response above the ``TRYWAIT`` on ``clc_full``, so the warp
decided whether to ask again from the slot's previous response. This module checks the compiled
code, not the source: for every generic shared-memory load (``LDS``) of a region that an mbarrier
phase publishes (``PUBLISHED``: region -> barrier, by the names of the kernel's ``SmemPlan``),

1. no path from the kernel's entry reaches the load without passing a wait (``SYNCS.PHASECHK``) on
   that barrier, and
2. no path from the load back to itself avoids such a wait (each execution reads after a new wait).

Paths run over a control-flow graph of single instructions (fall-through plus branch targets; an
unconditional branch, EXIT or RET has no fall-through). A wait counts only where it surely ran and
succeeded: unpredicated, with its result tested by the retry branch that follows it. Addresses are
resolved statically: the immediate of the ``[...]`` operand plus the constant offsets that the
reaching definitions of its registers carry (``UIADD3``/``IADD3``/``ULEA``/``LEA`` and moves, along
the control flow; a register with no such definition is a base or an index and adds nothing). The
plan's offsets are compile-time constants, so the chapters' loads and waits resolve to their
regions; a load whose address the paths into it disagree about is reported, not skipped, and so
is a generic ``LD`` (its address space is not visible in the listing).

What it does not decide: the stage and the phase (a load of response[0] after a wait on
clc_full[1] passes: both indices live in registers; the emulator checks stages and phases), and
code in called functions (the kernels' device functions are inlined: there is no CALL to follow)."""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from .sass_loops import _BRANCH_TARGET, _unconditional, opcode, parse

#: generic loads of these plan regions read data that a phase of the named barrier publishes (the
#: CLC unit writes a response and completes its bytes on clc_full). Regions filled by TMA and read
#: only by the tensor core (A/B stages) are not here: no ordinary load reads them.
PUBLISHED = {"CLC response": "clc_full"}

#: a CTA's shared-memory window starts with 1 KiB the system reserves (sm_90 and later; ptxas keeps
#: its TMEM allocator's state there); the kernel's dynamic shared memory, the plan's offset 0,
#: follows it. Observed in every chapter's SASS: the plan's base is built from ``UMOV ..., 0x400``.
DYNAMIC_SMEM_START = 0x400
RESERVED = "reserved (ptxas)"

#: regions that ordinary loads read but that no mbarrier publishes, and what orders them instead
OTHER_PUBLISHERS = {
    RESERVED: "ptxas's own bookkeeping (the TMEM allocator's state)",
    "TMEM address slot": "written by tcgen05.alloc, published by the tcgen05 fences around a CTA barrier",
}

_ADDR = re.compile(r"\[([^\]]*)\]")
_WAIT = re.compile(r"^SYNCS\.PHASECHK")
_LITERAL = re.compile(r"-?0x[0-9a-fA-F]+|-?\d+")
_MOVES = re.compile(r"^(MOV|R2UR|IMAD\.MOV|IMAD\.U32)")  # IMAD.U32 d, RZ, RZ, src is a move


@dataclass
class CheckedLoad:
    function: str
    address: int  # the load's SASS address
    text: str
    region: str
    barrier: str
    problem: str = ""  # empty when the load is ordered

    def __str__(self):
        verdict = self.problem or f"after a wait on {self.barrier} on every path"
        # two short lines (the page is narrow): the instruction, then what the check found
        return f"{self.address:05x} {self.text} ({self.region})\n        {verdict}"


def _operands(text):
    body = re.sub(r"^@!?U?P[T0-9]+\s+", "", text).split(None, 1)
    return [o.strip() for o in body[1].split(",")] if len(body) > 1 else []


def _is_register(tok):
    return bool(re.fullmatch(r"U?R\d+", tok))


class _Resolver:
    """Constant offsets of registers along the control flow: for instruction ``i`` and register
    ``reg``, the definitions of ``reg`` that reach ``i`` on some path (the nearest one on each path
    backwards). Each definition contributes (added literals, window constant): literals that
    add-chains (UIADD3/IADD3/ULEA/LEA and moves) carry into the register, and the UMOV immediates at
    the chains' roots (None where no root was a UMOV: the base came from elsewhere, and the literals
    alone are the plan offset). Any other definition is an index or a base and adds nothing. Where
    the reaching definitions disagree, the register is AMBIGUOUS, and so is every address built
    from it."""

    def __init__(self, instrs, succ):
        self.instrs = instrs
        self.pred = [[] for _ in instrs]
        for i, ss in enumerate(succ):
            for j in ss:
                self.pred[j].append(i)
        self.memo = {}

    def reaching(self, i, reg):
        """The indices of the definitions of ``reg`` that reach instruction ``i`` (-1: a path
        from the entry with none)."""
        found, seen, todo = set(), set(), list(self.pred[i]) or [-1]
        while todo:
            j = todo.pop()
            if j == -1:
                found.add(-1)
                continue
            if j in seen:
                continue
            seen.add(j)
            ops = _operands(self.instrs[j][1])
            if ops and ops[0] == reg:
                found.add(j)
            else:
                todo.extend(self.pred[j] or [-1])
        return found

    def offset(self, i, reg, depth=0):
        if reg in ("RZ", "URZ") or depth > 16:
            return (0, None)
        key = (i, reg)
        if key not in self.memo:
            self.memo[key] = AMBIGUOUS  # a definition that reaches itself through a loop
            values = {self._definition(j, depth) if j >= 0 else (0, None) for j in self.reaching(i, reg)}
            self.memo[key] = values.pop() if len(values) == 1 else AMBIGUOUS
        return self.memo[key]

    def _definition(self, j, depth):
        op = opcode(self.instrs[j][1])
        srcs = _operands(self.instrs[j][1])[1:]
        if op.startswith(("UIADD3", "IADD3")):
            return _sum([self._operand(j, s, depth) for s in srcs])
        if op.startswith(("ULEA", "LEA")) and len(srcs) >= 3:
            shift = int(srcs[2], 0) if _LITERAL.fullmatch(srcs[2]) else 0
            scaled, base = self._operand(j, srcs[0], depth), self._operand(j, srcs[1], depth)
            if AMBIGUOUS in (scaled, base):
                return AMBIGUOUS
            return _sum([(scaled[0] << shift, None if scaled[1] is None else scaled[1] << shift), base])
        if _MOVES.match(op) or op.startswith("UMOV"):
            src = srcs[-1]
            if _is_register(src):
                return self.offset(j, src, depth + 1)
            return (0, int(src, 0)) if _LITERAL.fullmatch(src) else (0, None)
        return (0, None)

    def _operand(self, j, tok, depth):
        if _is_register(tok):
            return self.offset(j, tok, depth + 1)
        return (int(tok, 0), None) if _LITERAL.fullmatch(tok) else (0, None)

    def address(self, i):
        """The plan offset that instruction ``i``'s memory operand names (negative: in the reserved
        window before the dynamic shared memory), None without a memory operand, AMBIGUOUS where
        the paths into ``i`` disagree about it."""
        m = _ADDR.search(self.instrs[i][1])
        if not m:
            return None
        parts = [self._operand(i, t.strip(), -1) for t in m.group(1).split("+")]
        if AMBIGUOUS in parts:
            return AMBIGUOUS
        literals, window = _sum(parts)
        # a base built here from the window's constant: the plan starts DYNAMIC_SMEM_START into it
        return literals if window is None else literals + window - DYNAMIC_SMEM_START


AMBIGUOUS = "ambiguous"


def _sum(parts):
    if AMBIGUOUS in parts:
        return AMBIGUOUS
    roots = [w for _, w in parts if w is not None]
    return sum(lit for lit, _ in parts), (sum(roots) if roots else None)


def _family(plan, offset):
    """The plan region family ("clc_full", not "clc_full[1]") holding plan offset ``offset``,
    RESERVED for the window before the dynamic shared memory, AMBIGUOUS, or None."""
    if offset is None or offset == AMBIGUOUS:
        return offset and AMBIGUOUS
    if offset < 0:
        return RESERVED
    for name, off, nbytes in plan.regions:
        if off <= offset < off + max(nbytes, 1):
            return name.split("[")[0]
    return None


def _tested_wait(instrs, i):
    """Whether the try_wait at ``i`` surely ran and its result is tested: unpredicated, and its
    predicate is branched on (``@!P BRA``, the retry) within the next few instructions, before
    anything redefines the predicate or branches. A predicated wait may not run, and an untested
    one may have failed: neither orders anything."""
    text = instrs[i][1]
    if re.match(r"^@", text):
        return False
    ops = _operands(text)
    pred = ops[0] if ops else ""
    for _, nxt in instrs[i + 1:i + 9]:
        if re.match(rf"^@!{pred}\s+BRA\b", nxt):
            return True
        nops = _operands(nxt)
        if (nops and nops[0] == pred) or re.search(r"\b(BRA|EXIT|RET)\b", nxt):
            return False
    return False


def _graph(items):
    """(instructions, successor lists) of one function's parsed listing."""
    target, pending, instrs = {}, [], []
    for it in items:
        if it[0] == "label":
            pending.append(it[1])
        else:
            for lab in pending:
                target[lab] = len(instrs)
            pending = []
            instrs.append(it)
    succ = []
    for i, (_, text) in enumerate(instrs):
        s = []
        body = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
        m = _BRANCH_TARGET.search(text)
        if m and m.group(1) in target:
            s.append(target[m.group(1)])
        if not (_unconditional(body) and text == body) and i + 1 < len(instrs):
            s.append(i + 1)  # a predicated branch or exit falls through when its predicate is false
        succ.append(s)
    return instrs, succ


def _reaches(succ, starts, goal, blocked):
    seen, todo = set(), deque(s for s in starts if s not in blocked)
    while todo:
        n = todo.popleft()
        if n == goal:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(s for s in succ[n] if s not in blocked and s not in seen)
    return False


def check(sass, plan, published=None):
    """Every ordinary load of a published region in ``sass``, as CheckedLoad (``problem`` set where
    a path reaches it without a wait on its barrier, or where its address or its kind cannot be
    decided)."""
    published = PUBLISHED if published is None else published
    out = []
    for fname, items in parse(sass).items():
        instrs, succ = _graph(items)
        resolve = _Resolver(instrs, succ)
        waits = {}  # barrier family -> the tested, unpredicated waits on it
        for i, (_, text) in enumerate(instrs):
            if _WAIT.match(opcode(text)) and _tested_wait(instrs, i):
                waits.setdefault(_family(plan, resolve.address(i)), set()).add(i)
        for i, (addr, text) in enumerate(instrs):
            op = opcode(text)
            if text.startswith("@!PT") or not re.match(r"^(LDS|LD)(\.|$)", op):
                continue  # @!PT LDS RZ, [RZ]: ptxas's never-executed padding
            if op.startswith("LD") and not op.startswith("LDS"):
                # a generic load may read shared memory through a generic address, which no listing
                # shows statically; the kernels read shared memory with ld.shared (LDS) only
                out.append(CheckedLoad(fname, addr, text, "generic address", "?", problem=(
                    "a generic load (LD): its address space is not known statically; read shared "
                    "memory with ld.shared")))
                continue
            region = _family(plan, resolve.address(i))
            if region in OTHER_PUBLISHERS:
                continue
            if region not in published:
                why = ("its address differs between the paths into it" if region == AMBIGUOUS else
                       f"reads {region}, which neither PUBLISHED nor OTHER_PUBLISHERS covers: say which barrier "
                       f"publishes it (or what else orders it) in gemm_kernels/sass_order.py")
                out.append(CheckedLoad(fname, addr, text, str(region), "?", problem=why))
                continue
            bar = published[region]
            blocked = waits.get(bar, set())
            load = CheckedLoad(fname, addr, text, region, bar)
            if not blocked:
                load.problem = f"no tested wait on {bar} anywhere in the function"
            elif _reaches(succ, [0], i, blocked):
                load.problem = (f"a path from the kernel's entry reaches it without a wait on {bar}: the wait is "
                                f"relaxed (ptxas may move the load above it) or missing; wait with acquire")
            elif _reaches(succ, succ[i], i, blocked):
                load.problem = f"it runs again without a new wait on {bar} in between"
            out.append(load)
    return out


def chapter_plan(chapter):
    """The shared-memory plan of a chapter's kernel as the chapter builds it."""
    from . import CHAPTERS

    return CHAPTERS[chapter]._mod().plan


def chapter_check(chapter, arch="sm_100a"):
    """check() of a chapter's kernel, built for ``arch``."""
    from . import CHAPTERS
    from .runtime.build import build

    ch = CHAPTERS[chapter]
    return check(build(ch.kernel, ch.signature, arch=arch).sass, chapter_plan(chapter))


def report(loads, label=""):
    if not loads:
        return f"{label}: no ordinary load of mbarrier-published data"
    bad = [ld for ld in loads if ld.problem]
    lines = [f"{label}: {len(loads)} ordinary load(s) of mbarrier-published data, {len(bad)} not ordered"]
    lines += [f"    {ld}" for ld in loads]
    return "\n".join(lines)
