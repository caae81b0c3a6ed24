"""The hot loops of a kernel's SASS, counted per unit of work and by category.

Static counts of an nvdisasm listing (``nvdisasm -c``), the method of
``../shared/reference/cutlass-comparison.md``: every backward branch defines a loop, its body being
the instructions from the branch target up to the branch. The three hot loops of a GEMM are

* the MMA loop, the smallest loop holding a UTCHMMA (step 11: UTCQMMA for FP8, UTCOMMA for FP4), per
  k-block of 64 fp16, 128 FP8 or 256 FP4 elements (four MMAs, 128 bytes of each row);
* the TMA-producer loop, the smallest loop holding a UTMALDG, per k-block (UTMALDG / loads per stage),
  and per TMA load (UTMALDG): the figure that compares producers loading a different number of tiles
  per stage (chapter 9 loads three, two A halves and B; CUTLASS two);
* the epilogue loop, the smallest loop holding an LDTM, per 128 fp16 columns of one thread's row
  (LDTM.x32 / 4).

NOPs are not counted; both sides of a branch inside a loop are (a static count, not a trace).
Not loops of the kernel: the "waterfall" ptxas wraps around a uniform-datapath instruction issued
from divergent code (``ELECT`` ... ``BRA.U.ANY`` back): it runs once per distinct value in the warp,
so once when one lane issues. Its instructions count in the loop around it.

Independently of those three, every GPU-scope memory barrier (``MEMBAR.*.GPU``) and every CALL (the
software 64-bit division ``__cuda_sm20_div_s64`` and friends) that lies inside a loop is flagged,
with the innermost loop that holds it: neither belongs in a loop a kernel runs per tile or per
k-block. CALLs of ptxas's TMEM guardrail traps (``__cuda_sm10x_tcgen05_guardrail_trap_*``, on the
never-taken error path of tcgen05.dealloc) are not work and are not flagged.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;?\s*$")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_BRANCH_TARGET = re.compile(r"\bBRA\b[^`]*`\((\.L_x_\d+)\)")

#: (category, regex on the opcode), first match wins
CATEGORIES = (
    ("mma/commit", r"^(UTCHMMA|UTCBAR|UTCQMMA|UTCOMMA|UTCIMMA|UTCCP)"),  # step 11: FP4 MMA, tcgen05.cp
    ("tma", r"^(UTMALDG|UTMASTG|UTMACMDFLUSH|UTMACCTL|UTMAPF|UBLKCP)"),
    ("tmem ld", r"^LDTM"),
    ("cvt f16", r"^F2FP"),
    ("st.shared", r"^STS"),
    ("mbarrier", r"^SYNCS"),
    ("barrier/fence", r"^(BAR|MEMBAR|FENCE|DEPBAR|ERRBAR|CGAERRBAR|CCTL|WARPSYNC|BSSY|BSYNC|ELECT|YIELD|NANOSLEEP)"),
    ("uniform moves", r"^(R2UR|S2UR|S2R|CS2R|UMOV|ULDC|LDC)"),
    ("64-bit int", r"(\.X\b|\.EX\b|\.U64|\.S64|WIDE|\.64\b)"),
    ("division", r"^(I2F\.U32\.RP|I2F\.U64\.RP|MUFU\.RCP|F2I\.FTZ|F2I\.U64|CALL)"),
    ("branch", r"^(BRA|EXIT|RET|JMP)"),
)
OTHER = "other"
CATEGORY_NAMES = tuple(name for name, _ in CATEGORIES) + (OTHER,)
_FLAGS = (("MEMBAR.GPU", r"^MEMBAR\.\S*GPU"), ("CALL", r"^CALL"))
_NOT_FLAGGED = re.compile(r"guardrail_trap")

#: CUTLASS's own Blackwell GEMM counted the same way (static nvdisasm SASS of the sm_100a build, NOPs
#: excluded, per k-block of 64 and per 128 fp16 columns per thread): NVIDIA CUTLASS's CuTe DSL 4.8.1
#: example dense_gemm_persistent.py (examples/python/CuTeDSL/cute/blackwell/kernel/dense_gemm/), fp16
#: in and out, fp32 accumulation, K-major A and B, TMA-store epilogue, compiled without a GPU in two
#: configurations, one CTA per 128 x 128 tile and a 2-CTA pair per 256 x 256 tile. Source:
#: ../shared/reference/cutlass-comparison.md ("Where ours costs more"). Its producer issues two TMA
#: loads per stage (A and B).
CUTLASS_HOT_LOOPS = {
    "1-CTA": {"MMA": 40.5, "TMA producer": 33.0, "epilogue": 160.0},
    "2-CTA": {"MMA": 48.5, "TMA producer": 37.0, "epilogue": 176.0},
}
CUTLASS_LOADS_PER_STAGE = 2

HOT_LOOPS = (  # kind, the opcode that marks it, the unit
    ("MMA", r"^(UTCHMMA|UTCQMMA|UTCOMMA)", "k-block"),
    ("TMA producer", r"^UTMALDG", "k-block"),
    ("epilogue", r"^LDTM", "128 cols/thread"),
)


def opcode(text):
    """The full opcode of an instruction's text (predicate and brace stripped): ``LDTM.x32``."""
    t = re.sub(r"^\{\s*", "", text)
    t = re.sub(r"^@!?U?P[T0-9]+\s+", "", t)
    return t.split()[0] if t else ""


def category(op):
    for name, pat in CATEGORIES:
        if re.search(pat, op):
            return name
    return OTHER


@dataclass
class Loop:
    function: str
    start: int  # address of the branch target
    end: int  # address of the backward branch
    body: list  # instruction texts, NOPs excluded
    branch: str = ""  # the backward branch's text
    addrs: list = field(default_factory=list)  # the address of each body instruction

    @property
    def waterfall(self):
        """ptxas's per-instruction ELECT/BRA.U.ANY loop around a uniform op issued by one lane."""
        return "BRA.U.ANY" in self.branch

    @property
    def size(self):
        return len(self.body)

    def opcodes(self):
        return [opcode(t) for t in self.body]

    def flags(self):
        """The flagged instructions in the loop, as (address, text):
        e.g. (0x8b0, 'CALL.ABS.NOINC `(__cuda_sm20_div_s64)')."""
        return [(a, t) for a, t in zip(self.addrs, self.body)
                if any(re.match(p, opcode(t)) for _, p in _FLAGS) and not _NOT_FLAGGED.search(t)]


@dataclass
class HotLoop:
    kind: str
    unit: str
    loop: Loop
    units: float
    categories: Counter = field(default_factory=Counter)

    @property
    def per_unit(self):
        return self.loop.size / self.units

    @property
    def loads(self):
        """The TMA loads (UTMALDG) in the loop."""
        return sum(o.startswith("UTMALDG") for o in self.loop.opcodes())

    @property
    def per_load(self):
        """Instructions per TMA load, or None for a loop without one."""
        return self.loop.size / self.loads if self.loads else None


def parse(sass):
    """{function name: [(address, text) or ('label', name)]} of an ``nvdisasm -c`` listing."""
    funcs, cur = {}, None
    for line in sass.splitlines():
        m = _SECTION.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        if cur is None:
            continue
        s = line.strip()
        m = _LABEL.match(s)
        if m:
            cur.append(("label", m.group(1)))
            continue
        m = _INSTR.match(line)
        if m:
            cur.append((int(m.group(1), 16), m.group(2).strip().rstrip(";").strip()))
    return funcs


def loops(sass):
    """Every loop (backward branch) of every function of the listing, innermost first by size."""
    out = []
    for fname, items in parse(sass).items():
        target, pending = {}, []
        for it in items:
            if it[0] == "label":
                pending.append(it[1])
            else:
                for lab in pending:
                    target[lab] = it[0]
                pending = []
        instrs = [it for it in items if it[0] != "label"]
        for addr, text in instrs:
            m = _BRANCH_TARGET.search(text)
            if m and m.group(1) in target and target[m.group(1)] <= addr:
                lo = target[m.group(1)]
                span = [(a, t) for a, t in instrs if lo <= a <= addr]
                if not _reaches(span, target):
                    continue  # out-of-line code jumping back (e.g. a BRA.DIV slow path): not a loop
                kept = [(a, t) for a, t in span if opcode(t) != "NOP"]
                out.append(Loop(fname, lo, addr, [t for _, t in kept], text, [a for a, _ in kept]))
    return sorted(out, key=lambda lp: lp.size)


def _unconditional(text):
    """A branch or exit that never falls through: no predicate and no condition operand."""
    return bool(re.match(r"^(BRA(\.U)?\s+`|EXIT\s*$|RET\b|JMP\b)", text))


def _reaches(span, target):
    """Whether control flow starting at the first instruction of ``span`` reaches its last one
    without leaving the span: only then is the backward branch at the end a loop's back edge."""
    index = {a: i for i, (a, _) in enumerate(span)}
    seen, todo = set(), [0]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if i == len(span) - 1:
            return True
        a, text = span[i]
        m = _BRANCH_TARGET.search(text)
        if m and target.get(m.group(1)) in index:
            todo.append(index[target[m.group(1)]])
        if not _unconditional(text):
            todo.append(i + 1)
    return False


#: The writeback loop's unit: fp16 columns of one thread's row (a 128 x 128 tile's row).
EPILOGUE_UNIT_COLS = 128


def _units(kind, ops, loads_per_stage):
    if kind == "MMA":
        return sum(o.startswith(("UTCHMMA", "UTCQMMA", "UTCOMMA")) for o in ops) / 4
    if kind == "TMA producer":
        return sum(o.startswith("UTMALDG") for o in ops) / loads_per_stage
    cols = 0
    for o in ops:
        if o.startswith("LDTM"):
            m = re.search(r"\.x(\d+)", o)
            cols += int(m.group(1)) if m else 32
    return cols / EPILOGUE_UNIT_COLS


def hot_loops(sass, loads_per_stage=2):
    """The MMA, TMA-producer and epilogue loops (those present), as HotLoop records."""
    lps = [lp for lp in loops(sass) if not lp.waterfall]
    out = []
    for kind, pat, unit in HOT_LOOPS:
        cands = [lp for lp in lps if any(re.match(pat, o) for o in lp.opcodes())]
        if not cands:
            continue
        lp = cands[0]
        out.append(HotLoop(kind, unit, lp, _units(kind, lp.opcodes(), loads_per_stage),
                           Counter(category(o) for o in lp.opcodes())))
    return out


def flagged_loops(sass):
    """Each MEMBAR.*GPU or CALL inside a loop, grouped by the innermost loop that holds it:
    [(loop, [flagged instruction texts])], smallest loop first."""
    lps = [lp for lp in loops(sass) if not lp.waterfall]
    by_loop = {}
    for lp in lps:
        for addr, text in lp.flags():
            key = (lp.function, addr)
            if key not in by_loop:  # lps is sorted by size: the first loop is the innermost
                by_loop[key] = (lp, text)
    out = {}
    for lp, text in by_loop.values():
        out.setdefault(id(lp), (lp, []))[1].append(text)
    return sorted(out.values(), key=lambda x: x[0].size)


def report(sass, loads_per_stage=2, label=""):
    """The text ``python -m gemm_kernels sass --hot-loops`` prints."""
    lines = []
    hls = hot_loops(sass, loads_per_stage)
    head = f"{label}: " if label else ""
    if not hls:
        lines.append(f"{head}no hot loop (no UTCHMMA, UTMALDG or LDTM inside a loop)")
    for h in hls:
        lines.append(f"{head}{h.kind} loop {h.loop.start:05x}..{h.loop.end:05x}: {h.loop.size} instructions = "
                     f"{h.units:g} x {h.unit} -> {h.per_unit:.1f} per {h.unit}")
        if h.kind == "TMA producer":
            lines.append(f"    {h.loads} UTMALDG ({loads_per_stage} per stage) -> {h.per_load:.1f} per TMA load")
        for name in CATEGORY_NAMES:
            if h.categories.get(name):
                lines.append(f"    {name:16s} {h.categories[name] / h.units:7.1f}")
    flagged = flagged_loops(sass)
    if flagged:
        for lp, texts in flagged:
            lines.append(f"{head}FLAG: loop {lp.start:05x}..{lp.end:05x} ({lp.size} instructions) holds "
                         + "; ".join(sorted(set(texts))))
    else:
        lines.append(f"{head}no MEMBAR.*GPU and no CALL inside any loop")
    return "\n".join(lines)


def table(rows):
    """A Markdown table of per-unit totals: rows = [(label, {kind: per_unit}, n_flagged)]."""
    kinds = [k for k, _, _ in HOT_LOOPS]
    out = ["| chapter | " + " | ".join(f"{k} / {u}" for k, _, u in HOT_LOOPS) + " | loops with MEMBAR.GPU or CALL |",
           "|---|" + "---|" * (len(kinds) + 1)]
    for label, per, nflag in rows:
        cells = [f"{per[k]:.1f}" if k in per else "-" for k in kinds]
        out.append(f"| {label} | " + " | ".join(cells) + f" | {nflag} |")
    return "\n".join(out)


def chapter_loads_per_stage(chapter):
    """TMA loads per pipeline stage of a chapter's kernel (the module's STAGE_TILES, else A + B)."""
    import sys

    from . import CHAPTERS

    kernel = CHAPTERS[chapter].kernel
    mod = sys.modules.get(getattr(getattr(kernel, "py_func", kernel), "__module__", ""), None)
    return getattr(mod, "STAGE_TILES", 2)


def chapter_hot_loops(chapter, arch="sm_100a"):
    """([HotLoop], flagged loops, the Build) of a chapter's kernel."""
    from . import CHAPTERS
    from .runtime.build import build

    ch = CHAPTERS[chapter]
    b = build(ch.kernel, ch.signature, arch=arch)
    return hot_loops(b.sass, chapter_loads_per_stage(chapter)), flagged_loops(b.sass), b


def chapter_summary(chapter, arch="sm_100a"):
    """({kind: per-unit count}, flagged loops, the Build) of a chapter's kernel."""
    hls, flagged, b = chapter_hot_loops(chapter, arch)
    return {h.kind: h.per_unit for h in hls}, flagged, b


def kernel_hot_loops(kernel, signature, loads_per_stage=2, arch="sm_100a"):
    """({kind: per-unit count}, number of flagged loops) of any kernel: what the chapters print to
    compare a kernel with a variant of it."""
    from .runtime.build import build

    b = build(kernel, signature, arch=arch)
    return ({h.kind: round(h.per_unit, 1) for h in hot_loops(b.sass, loads_per_stage)},
            len(flagged_loops(b.sass)))
