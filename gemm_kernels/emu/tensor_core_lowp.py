"""The tensor core's low-precision kinds (step 11): kind::f8f6f4 (FP8 without scale factors),
kind::mxf8f6f4.block_scale (MXFP8) and kind::mxf4nvf4.block_scale (NVFP4), and tcgen05.cp, which puts
scale factors into TMEM.

Numerics. Every element and scale-factor code is decoded exactly by ml_dtypes (the formats' own
definitions; tests/test_quant.py checks every code). Within one MMA each product a * sa * b * sb is
exact in float64 (at most 4 + 4 significand bits from the elements and 4 + 4 from the scales), the
K products of a row and column are summed in float64 and rounded to float32 once, and that sum is
added to the float32 accumulator (one more rounding). The PTX ISA does not say in which order or
width the tensor core sums inside one MMA; this is the exact-then-round model, and
ARCHITECTURE.md says what it assumes and what the H200's FP8 wgmma recording shows about Hopper.

Scale factors in TMEM (PTX ISA 9.7.16.10.7: scale_A is M x SFA_N, one TMEM word of 4 bytes per
row, present in all four 32-lane partitions): row r of A reads lane r % 32 (+ 32 q for partition q),
column (scale-A-tmem's column) + r // 32, and bytes of that word: byte ``sfa_id`` (one scale factor,
MXFP8's block32 with K = 32) or bytes 0..3 (four, NVFP4's block16 with K = 64). Likewise B by column
n. That is where ``tcgen05.cp .32x128b.warpx4`` puts the 512-byte atom of gemm_kernels.quant's packed
layout, so the layout is checked end to end by running a copy and an MMA.

Rules for the new ways to be wrong: an MMA reads scale-factor words that no tcgen05.cp wrote
(``UninitializedRead``); the four lane partitions disagree (a copy without .warpx4 replication:
``DescriptorError``); a UE4M3 scale factor with its sign bit set (``DescriptorError``: the format is
unsigned); an MMA reads scale factors that an accumulator overwrote after the copy (``TmemHazard``: the
accumulator's columns overlap the scale factors'); a copy reads shared memory a TMA copy is still
writing (``SharedMemoryHazard``, as an MMA);
a copy's source changes before it executed (``SharedMemoryHazard``). Modelled: cta_group::1 for the
block-scaled kinds and cta_group::2 with M = 256 (each CTA holding the scale factors of its own
rows of A and of all of B's columns, copied from its own shared memory by the pair's tcgen05.cp:
CUTLASS's arrangement; the ISA says only that a cta_group::2 copy writes both CTAs' TMEM), both
cta_groups for kind::f8f6f4; K-major operands; E4M3/E5M2 and E2M1 only.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import layouts
from . import costmodel, tensor_core
from .context import thread as _thread
from .errors import DescriptorError, MemoryFault, SharedMemoryHazard, TmemHazard, UninitializedRead
from .hb import MMA, TC_WRITE
from .scheduler import AsyncOp
from .source import site, text
from .tensor_core import Mma, check_instr_desc, decode_instr_desc, decode_smem_desc
from .tmem_rules import check_allocated

#: kind -> K elements per MMA
K_OF = {"f8f6f4": 32, "mxf8f6f4": 32, "mxf4nvf4": 64}
#: A/B format codes of kind::f8f6f4 the emulator decodes
_F8_CODES = (0, 1)


@functools.cache
def _dtypes():
    """The ml_dtypes types, imported when an MMA first needs them: gemm_kernels.ptx (every kernel)
    imports this module, and only step 11's kernels need the low-precision formats."""
    import ml_dtypes  # why inside: every kernel imports this module, only step 11's MMAs need the formats

    return {"f8": {0: ml_dtypes.float8_e4m3fn, 1: ml_dtypes.float8_e5m2}, "e2m1": ml_dtypes.float4_e2m1fn,
            "scale": {"ue8m0": ml_dtypes.float8_e8m0fnu, "ue4m3": ml_dtypes.float8_e4m3fn}}
#: per TMEM word written by a tcgen05.cp: the copy's sequence number (0: never written by a copy)
_FILL_ATTR = "sf_fill"
#: TMEM column -> (description, site) of the MMA whose accumulator overwrote copied scale factors
_CLOBBER_ATTR = "sf_clobbered_by"


def _fill_map(tmem):
    fill = getattr(tmem, _FILL_ATTR, None)
    if fill is None:
        fill = np.zeros(tmem.cells.shape, dtype=np.int64)
        setattr(tmem, _FILL_ATTR, fill)
    return fill


def _words(tmem):
    return tmem.cells.view(np.uint32)


# -- tcgen05.cp -----------------------------------------------------------------------------------
class ScaleCopy(AsyncOp):
    """tcgen05.cp .32x128b.warpx4: 32 rows of 16 bytes from shared memory into TMEM lanes 0..31 (and
    their copies in lanes 32..127), 4 columns from the address's column."""

    unit = "tensor core"
    _seq = 0

    def __init__(self, thread, cta, taddr, s_desc):
        self.site = site(2)
        lane, self.col = (int(taddr) >> 16) & 0xFFFF, int(taddr) & 0xFFFF
        super().__init__(thread, f"tcgen05.cp .32x128b.warpx4 into TMEM columns {self.col}..{self.col + 3} "
                                 f"of CTA {cta.rank_text()} (issued by {thread} at {text(self.site)})")
        if lane:
            raise MemoryFault(f"{self.description}: the TMEM address has lane {lane}; .warpx4 fills lanes 0..31 "
                              f"and copies them into every lane quarter, so the address names lane 0")
        d = decode_smem_desc(s_desc)
        if d["fixed"] != 1 or d["swizzle_code"] != 0 or d["base_offset"] or d["lbo_mode"]:
            raise DescriptorError(f"{self.description}: the source descriptor must be the no-swizzle sm_100 form "
                                  f"(bits 46-48 = 0b001, swizzle 0, base offset 0); got {d}")
        r = np.arange(32)
        self.addr = (d["start"] + (r // 8) * d["sbo"] + (r % 8) * 16)[:, None] + np.arange(16)[None, :]
        self.cta = cta
        check_allocated(thread, cta, self.col, 4, "tcgen05.cp", self.site)
        thread.tcgen05_op("tcgen05.cp", self.site, TC_WRITE)
        self.slot, self.vc = thread.warp.clock.async_op(MMA)
        lo, hi = int(self.addr.min()), int(self.addr.max()) + 1
        self.lo, self.hi = lo, hi
        cta.smem.check(lo, hi - lo, "tcgen05.cp source")
        cta.smem.check_fenced(lo, hi, f"the tcgen05.cp issued by {thread}", thread)
        for w in cta.smem_writers:
            if w.lo < hi and lo < w.hi:
                raise SharedMemoryHazard(
                    f"{thread} issued tcgen05.cp at {text(self.site)} reading scale factors at "
                    f"{cta.smem.name_of(lo)} while {w.description} is still writing them: wait on the stage's "
                    f"TMA barrier (then tcgen05.fence::after_thread_sync) before copying.")
        cta.smem.touch_async(self.addr.ravel(), False, self.slot, self.vc, self.site,
                             f"the tcgen05.cp issued by {thread} (scale factors at {cta.smem.name_of(lo)})", thread)
        self.snapshot = cta.smem.buffer[self.addr].copy()
        cta.smem_readers.append(self)
        ScaleCopy._seq += 1
        self.seq = ScaleCopy._seq
        self.start = max(thread.clock, getattr(cta, "tc_busy_until", 0.0))
        self.end = self.start + costmodel.of(thread).mma_cycles(128, 8, 16)  # a short tensor-core job
        cta.tc_busy_until = self.end

    def reads(self, cta, lo, hi):
        return cta is self.cta and self.lo < hi and lo < self.hi

    def execute(self):
        buf = self.cta.smem.buffer
        now = buf[self.addr]
        if not np.array_equal(now, self.snapshot):
            raise SharedMemoryHazard(f"{self.description}: its source at {self.cta.smem.name_of(self.lo)} changed "
                                     f"between issue and execution: wait for the commit before refilling it.")
        words = now.copy().view(np.uint32)  # (32, 4): lane, column
        tm = self.cta.tmem
        fill = _fill_map(tm)
        for q in range(4):
            _words(tm)[32 * q:32 * q + 32, self.col:self.col + 4] = words
            tm.written[32 * q:32 * q + 32, self.col:self.col + 4] = True
            fill[32 * q:32 * q + 32, self.col:self.col + 4] = self.seq
        self.cta.smem_readers.remove(self)


def issue_cp(taddr, s_desc, group):
    t = _thread()
    t.launch.use_cta_group(group, "tcgen05.cp", t)
    ctas = [t.cta]
    if group == 2:
        # the PTX ISA: the data goes into the TMEM of both CTAs of the pair. From each CTA's own shared
        # memory at the same offset (as a pair MMA reads its operands): not stated by the ISA; it is how
        # CUTLASS uses it (each CTA loads the scale factors of its own A rows, and all of B's)
        if t.cta.rank % 2:
            raise MemoryFault(f"{t} issued a cta_group::2 tcgen05.cp from the odd CTA of the pair; the even (leader) "
                              f"CTA issues for both")
        ctas.append(t.cta.cluster.ctas[t.cta.rank + 1])
    for cta in ctas:
        op = ScaleCopy(t, cta, taddr, s_desc)
        op.predecessor = t.last_mma  # tcgen05.cp and tcgen05.mma of one thread execute in issue order
        t.last_mma = op
        t.unretired_mma.append(op)  # tcgen05.commit tracks the copy too
        t.scheduler.submit(op)
    t.advance()


# -- MMAs -----------------------------------------------------------------------------------------
class LowpMma(Mma):
    """An MMA of a step-11 kind. ``Mma`` does the operand addresses, hazards, accumulator and trace;
    this class decodes the kind's descriptor, reads the scale factors and computes the product."""

    def __init__(self, thread, ctas, d_tmem, a_desc, b_desc, idesc, accumulate, cta_group, kind, sfa, sfb):
        self.kind = kind
        self.k = K_OF[kind]
        self.sfa = None if sfa is None else (int(sfa) >> 16 & 0xFFFF, int(sfa) & 0xFFFF)
        self.sfb = None if sfb is None else (int(sfb) >> 16 & 0xFFFF, int(sfb) & 0xFFFF)
        super().__init__(thread, ctas, d_tmem, a_desc, b_desc, idesc, accumulate, cta_group)
        if kind != "f8f6f4":
            # each CTA's TMEM: the scale factors of its own rows of A, and of all N columns of B
            n_cols_a, n_cols_b = -(-self.m // len(ctas) // 32), -(-self.n // 32)
            for cta in ctas:
                for (lane, col), name, ncols in ((self.sfa, "scale-A", n_cols_a), (self.sfb, "scale-B", n_cols_b)):
                    if lane:
                        raise MemoryFault(f"{self.description}: the {name} TMEM address has lane {lane}; scale "
                                          f"factors start at lane 0 (row r at lane r % 32 of every lane quarter)")
                    check_allocated(thread, cta, col, ncols, f"an MMA's {name} scale factors", self.site)

    def decode(self, idesc, cta_group):
        where = f"instruction descriptor 0x{int(idesc):08x} of a kind::{self.kind} MMA (cta_group::{cta_group})"
        if self.kind == "f8f6f4":
            d = decode_instr_desc(idesc)
            if d["a_fmt"] not in _F8_CODES or d["b_fmt"] not in _F8_CODES:
                raise DescriptorError(f"{where}: A/B formats {d['a_fmt']}/{d['b_fmt']} are not E4M3 (0) or E5M2 (1); "
                                      f"the 6- and 4-bit formats are not modelled")
            if d["d_fmt"] != 1:
                raise DescriptorError(f"{where}: D format {d['d_fmt']}: the emulator models an F32 (1) accumulator")
            check_instr_desc(dict(d, a_fmt=0, b_fmt=0), cta_group)  # the shape rules are kind::f16's
            return d
        f = layouts.decode_instr_desc_block_scaled(int(idesc), self.kind)
        if f["reserved"] or f["sparse"] or f["negate_a"] or f["negate_b"] or f["k96"]:
            raise DescriptorError(f"{where}: reserved, sparsity, negation or K=96 bits set; the kernels use the dense "
                                  f"K={K_OF[self.kind]} form")
        if f["a_major"] != "K" or f["b_major"] != "K":
            raise DescriptorError(f"{where}: MN-major operands are not modelled")
        if self.kind == "mxf8f6f4":
            ok = f["a_dtype"] in ("e4m3", "e5m2") and f["b_dtype"] in ("e4m3", "e5m2") and f["scale_dtype"] == "ue8m0"
        else:
            ok = f["a_dtype"] == f["b_dtype"] == "e2m1"
        if not ok:
            raise DescriptorError(f"{where}: formats A={f['a_dtype']} B={f['b_dtype']} scale={f['scale_dtype']} are "
                                  f"not valid for kind::{self.kind} (MXFP8: e4m3/e5m2 with ue8m0; NVFP4: e2m1)")
        per_mma = 1 if self.kind == "mxf8f6f4" else 4  # .block32 with K=32; .block16 with K=64
        if per_mma == 4 and (f["sfa_id"] or f["sfb_id"]):
            raise DescriptorError(f"{where}: .block16 reads all four bytes of each scale-factor word; its "
                                  f"scale-factor IDs must be 0 (found A {f['sfa_id']}, B {f['sfb_id']})")
        if cta_group == 1 and (f["m"] != 128 or not (8 <= f["n"] <= 256 and f["n"] % 8 == 0)):
            raise DescriptorError(f"{where}: cta_group::1 needs M = 128 and N a multiple of 8 in [8, 256] "
                                  f"(M={f['m']}, N={f['n']})")
        if cta_group == 2 and (f["m"] != 256 or not (16 <= f["n"] <= 256 and f["n"] % 16 == 0)):
            raise DescriptorError(f"{where}: cta_group::2 needs N a multiple of 16 in [16, 256], and the emulator "
                                  f"models M = 256 only (M={f['m']}, N={f['n']})")
        codes = {"e4m3": 0, "e5m2": 1, "e2m1": 1}
        return dict(f, d_fmt=1, a_fmt=codes[f["a_dtype"]], b_fmt=codes[f["b_dtype"]], per_mma=per_mma)

    # -- operands -------------------------------------------------------------------------------
    def _bytes(self, buf, addr):
        """The 32 bytes of each row at the fp16-element addresses ``addr`` (rows, 16)."""
        return np.stack([buf[addr], buf[addr + 1]], axis=-1).reshape(addr.shape[0], 32)

    def _elements(self, raw, fmt):
        if self.kind == "mxf4nvf4":
            nib = np.empty((raw.shape[0], 64), dtype=np.uint8)
            nib[:, 0::2] = raw & 0xF
            nib[:, 1::2] = raw >> 4
            return nib.view(_dtypes()["e2m1"]).astype(np.float64)
        return raw.view(_dtypes()["f8"][fmt]).astype(np.float64)

    def _scales(self, cta, base, rows, which):
        """(rows, K / block) scale factors of ``which`` operand from TMEM, as float64."""
        lane0, col0 = base
        tm = cta.tmem
        r = np.arange(rows)
        cols = col0 + r // 32
        fill = _fill_map(tm)
        words = _words(tm)
        quarters = np.stack([words[32 * q + r % 32, cols] for q in range(4)])
        filled = np.stack([fill[32 * q + r % 32, cols] for q in range(4)])
        if (filled < 0).any():
            q, i = (int(x[0]) for x in np.nonzero(filled < 0))
            what, sid = getattr(tm, _CLOBBER_ATTR)[int(cols[i])]
            raise TmemHazard(
                f"{self.description} at {text(self.site)} reads its {which} scale factors from TMEM column {cols[i]} "
                f"of CTA {cta.rank_text()}, which {what} at {text(sid)} overwrote with its accumulator after the "
                f"tcgen05.cp: the accumulator's columns overlap the scale factors'. Give the scale factors TMEM "
                f"columns of their own.")
        if not filled.all():
            q, i = (int(x[0]) for x in np.nonzero(filled == 0))
            raise UninitializedRead(
                f"{self.description} at {text(self.site)} reads its {which} scale factors from TMEM lane "
                f"{32 * q + i % 32}, column {cols[i]} of CTA {cta.rank_text()}, which no tcgen05.cp filled: issue "
                f"the copy of this k-block's scale factors (tcgen05.cp .32x128b.warpx4) before the MMA.")
        if not (quarters == quarters[0]).all():
            q, i = (int(x[0]) for x in np.nonzero(quarters != quarters[0]))
            raise DescriptorError(
                f"{self.description} at {text(self.site)}: the {which} scale factor of row {i} differs between lane "
                f"quarter 0 and lane quarter {q} (TMEM column {cols[i]}): the PTX ISA requires scale factors in all "
                f"four 32-lane partitions; copy them with .warpx4")
        word = quarters[0].astype("<u4").view(np.uint8).reshape(rows, 4)
        sdtype = _dtypes()["scale"][self.fmt["scale_dtype"]]
        if self.fmt["per_mma"] == 4:
            code = word
        else:
            sid = self.fmt["sfa_id"] if which == "A" else self.fmt["sfb_id"]
            code = word[:, sid:sid + 1]
        if self.fmt["scale_dtype"] == "ue4m3" and (code & 0x80).any():
            i = int(np.nonzero((code & 0x80).any(axis=1))[0][0])
            raise DescriptorError(f"{self.description}: the {which} scale factor of row {i} is a UE4M3 code with its "
                                  f"sign bit set (0x{int(code[i].max()):02x}); UE4M3 scale factors are unsigned")
        return np.ascontiguousarray(code).view(sdtype).astype(np.float64)

    def _product(self):
        bufs = self._operand_buffers()
        a_parts = [self._elements(self._bytes(buf, self.a_addr), self.fmt["a_fmt"]) for buf in bufs]
        b = np.concatenate([self._elements(self._bytes(buf, self.b_addr), self.fmt["b_fmt"]) for buf in bufs])
        if self.kind == "f8f6f4":
            return self._sum(np.concatenate(a_parts), b)
        rows = self.m // len(self.ctas)
        out = []
        for cta, a in zip(self.ctas, a_parts):  # each CTA's rows of D, with its own copies of the scale factors
            sa = self._scales(cta, self.sfa, rows, "A")
            sb = self._scales(cta, self.sfb, self.n, "B")
            block = self.k // sa.shape[1]
            out.append(self._sum(a * np.repeat(sa, block, axis=1), b * np.repeat(sb, block, axis=1)))
        return np.concatenate(out)

    def execute(self):
        super().execute()
        for cta in self.ctas:  # scale factors under this accumulator are gone
            fill = _fill_map(cta.tmem)
            cols = slice(self.d_col, self.d_col + self.n)
            if (fill[:, cols] > 0).any():
                fill[:, cols] = -1
                clobber = getattr(cta.tmem, _CLOBBER_ATTR, None) or {}
                clobber.update({c: (self.description, self.site) for c in range(self.d_col, self.d_col + self.n)})
                setattr(cta.tmem, _CLOBBER_ATTR, clobber)

    @staticmethod
    def _sum(a, b):
        """Exact products, summed in float64, rounded to float32 once (see the module's docstring)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return (a @ b.T).astype(np.float32)


def issue_mma(kind, group, d_tmem, a_desc, b_desc, idesc, sfa, sfb, accumulate):
    tensor_core.issue_mma(group, lambda t, ctas: LowpMma(t, ctas, d_tmem, a_desc, b_desc, idesc, accumulate, group,
                                                          kind, sfa, sfb))


# -- accumulation models, as functions (the replay of the H200 recording uses both) ---------------
def exact_sum(a, b):
    """The emulator's model of one MMA: ``a`` (M, K) and ``b`` (N, K) decoded values (float64); exact
    products, their sum rounded to float32 once."""
    return LowpMma._sum(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def _exponents(x):
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.abs(x)))
    return np.where(x == 0, -np.inf, e)


def aligned_sum(a, b, d=None, frac_bits=13):
    """Hopper's FP8 wgmma as the H200 recording shows it (tests/hopper/wgmma_fp8.py): each product
    a_k * b_k, and the accumulator ``d`` (float32, (M, N)) when given, is truncated toward zero to a
    multiple of 2**(E - frac_bits), E the largest of the products' exponent sums (exponent of a plus
    exponent of b) and d's exponent; the truncated terms are summed exactly and the sum is rounded
    to float32. Infinite or NaN terms give the IEEE sum. Returns float32 (M, N)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a[:, None, :] * b[None, :, :]
        ep = _exponents(a)[:, None, :] + _exponents(b)[None, :, :]
        ep = np.where(prods == 0, -np.inf, ep)
        if d is not None:
            d = np.asarray(d, dtype=np.float64)
            prods = np.concatenate([d[..., None], prods], axis=2)
            ep = np.concatenate([_exponents(d)[..., None], ep], axis=2)
        special = ~np.isfinite(prods).all(axis=2)
        emax = ep.max(axis=2, keepdims=True)
        q = np.exp2(np.where(np.isfinite(emax), emax, 0.0) - frac_bits)
        terms = np.trunc(np.where(np.isfinite(prods), prods, 0.0) / q) * q
        out = terms.sum(axis=2)
        out = np.where(special, prods.sum(axis=2), out)
    return out.astype(np.float32)
