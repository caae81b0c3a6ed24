"""A GEMM design, not a chapter, is what the model predicts: ``Design`` holds the choices a B200
GEMM kernel makes (tile, pair or single CTA, ring depth, accumulators, consumers, roles, schedule,
epilogue, multicast, tile order, K-split of the last wave), refuses a design that cannot fit on an
SM (shared memory, TMEM columns, threads and registers, MMA shapes) with the reason, and knows
which of the book's kernels implements it, if one does (``chapter_design``).

    from gemm_kernels import perf
    d = perf.Design(tile_m=128, tile_n=128, cta_group=2, stages=8, accumulators=4,
                    warp_specialized=True, persistent=True, epilogue="overlapped")
    p = perf.predict(d, 4096, 4096, 4096)   # p.tflops, p.tflops_low, p.tflops_high, p.bottleneck, p.split

``tile_m`` x ``tile_n`` is ONE CTA's output tile; a pair (``cta_group=2``) computes
(2 tile_m) x tile_n, each CTA loading its tile_m rows of A and half of the tile's B rows (PTX ISA,
tcgen05 cta_group::2 data split). ``consumers`` split the CTA's rows among MMA consumers, each
with its own accumulators. A design that one of the book's kernels implements is predicted by
running that kernel's share on the emulator (model.py); any other by the analytic model
(analytic.py), which uses the same chip, the same parameters and the same unit costs."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

#: tcgen05.mma kind::f16 shapes (PTX ISA, tcgen05 MMA shapes table): per cta_group, the MMA's M
#: over the CTAs it spans, and N's range and step
MMA_SHAPES = {1: ((64, 128), 8, 256, 8), 2: ((128, 256), 16, 256, 16)}
#: the largest dynamic shared memory one CTA may use on sm_100 (CUDA C++ Programming Guide, compute
#: capability 10.0: 227 KiB), the SM's register file and thread limit
SMEM_PER_CTA = 227 * 1024
REGISTERS_PER_SM = 65536
THREADS_PER_CTA = 1024
#: a writeback thread holds one 32-column chunk of fp32 accumulators (32 registers) and its
#: addresses and loop state; 64 registers is the least such a thread needs (an assumption of the
#: refusal, stated here, not a model parameter: the model's figures do not use it)
WRITEBACK_REGISTERS = 64
#: shared memory of the writeback's staging buffers for a TMA store (the book's kernels: four
#: 8 KiB subtiles), and of the barriers and the TMEM address slot
STAGING_BYTES = 4 * 8192
BARRIER_BYTES = 1024

EPILOGUES = ("serial", "overlapped")
STORES = ("tma", "st.global")
SCHEDULERS = ("static", "clc")
K_SPLITS = ("none", "last-wave")
DTYPES = ("fp16", "bf16")


@dataclass(frozen=True)
class Design:
    tile_m: int = 128  # one CTA's output tile: rows (a pair computes 2 tile_m rows)
    tile_n: int = 128  # and columns (the MMA's N)
    tile_k: int = 64  # the k-block one ring stage holds
    cta_group: int = 1  # 1, or 2: a CTA pair issues each MMA (tcgen05 cta_group::2)
    stages: int = 2  # ring depth
    accumulators: int = 1  # TMEM accumulator buffers per consumer
    consumers: int = 1  # MMA consumers (each its own rows and accumulators)
    warp_specialized: bool = False  # producer, MMA and writeback in their own warps
    persistent: bool = False  # one CTA (pair) per SM (pair) walks many tiles
    scheduler: str = "static"  # "static" (tile t on unit t mod units) or "clc" (cluster launch control)
    epilogue: str = "serial"  # "serial": the MMAs wait for the writeback; "overlapped": the next tile's run beside it
    epilogue_store: str = "tma"  # "tma" (staged in shared memory) or "st.global"
    multicast: int = 1  # CTAs that share one A or B load (TMA multicast)
    raster_group: int = 1  # grouped tile order: tile rows per group (1: row by row)
    dtype: str = "fp16"
    k_split: str = "none"  # "last-wave": the last, partly empty wave's tiles are split along K
    name: str = ""
    chapter: int | None = None  # the book's kernel that implements the design, or None
    tmem_cols: int | None = None  # TMEM columns a CTA allocates, where more than it needs (occupancy)

    # -- shape of the work ------------------------------------------------------------------
    @property
    def unit_tile(self):
        """The output tile of one scheduling unit (a CTA, or a CTA pair)."""
        return self.tile_m * self.cta_group, self.tile_n

    @property
    def mma_m(self):
        """One consumer's MMA M over the CTAs it spans."""
        return self.tile_m // self.consumers * self.cta_group

    @property
    def b_rows_per_cta(self):
        return self.tile_n // self.cta_group

    @property
    def stage_bytes(self):
        """Bytes one ring stage of one CTA holds (its A rows and its share of B's)."""
        return (self.tile_m + self.b_rows_per_cta) * self.tile_k * 2

    @property
    def smem_bytes(self):
        staging = STAGING_BYTES if self.epilogue_store == "tma" else 0
        return self.stages * self.stage_bytes + staging + BARRIER_BYTES

    @property
    def tmem_needed(self):
        """TMEM columns the accumulators take (128 lanes each; a consumer of 64 rows uses half the lanes)."""
        rows = self.tile_m // self.consumers
        return self.accumulators * self.consumers * self.tile_n * max(1, -(-rows // 128))

    @property
    def tmem_alloc(self):
        """What tcgen05.alloc takes: a power of 2, at least 32 columns."""
        need = max(self.tmem_needed, self.tmem_cols or 0, 32)
        return 1 << (need - 1).bit_length()

    @property
    def threads(self):
        """A writeback warpgroup per consumer, and one more warpgroup for the producer, MMA and
        scheduler warps (warp-specialised); one warpgroup doing everything otherwise."""
        return 128 * (self.consumers + 1) if self.warp_specialized else 128 * self.consumers

    @property
    def cluster_size(self):
        return self.cta_group * self.multicast

    def problems(self):
        """Why the design cannot run, one reason each (empty: it fits)."""
        out = []
        for name, allowed in (("epilogue", EPILOGUES), ("epilogue_store", STORES), ("scheduler", SCHEDULERS),
                              ("k_split", K_SPLITS), ("dtype", DTYPES)):
            if getattr(self, name) not in allowed:
                out.append(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("tile_m", "tile_n", "tile_k", "stages", "accumulators", "consumers", "multicast", "raster_group"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                out.append(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if out:
            return out
        if self.cta_group not in MMA_SHAPES:
            return [f"cta_group must be 1 or 2, got {self.cta_group}"]
        ms, n_lo, n_hi, n_step = MMA_SHAPES[self.cta_group]
        if self.tile_m % self.consumers:
            out.append(f"tile_m={self.tile_m} does not split into {self.consumers} consumers")
        elif self.mma_m not in ms:
            out.append(f"a consumer's MMA would be M={self.mma_m} over {self.cta_group} CTA(s); tcgen05 cta_group::"
                       f"{self.cta_group} takes M in {ms}: change tile_m or consumers")
        if not (n_lo <= self.tile_n <= n_hi and self.tile_n % n_step == 0):
            out.append(f"tile_n={self.tile_n}: tcgen05 cta_group::{self.cta_group} takes N from {n_lo} to {n_hi} in "
                       f"steps of {n_step}")
        if self.tile_n % self.cta_group:
            out.append(f"tile_n={self.tile_n} does not split between the {self.cta_group} CTAs of a pair")
        if self.tile_k % 16 or self.tile_k > 128:
            out.append(f"tile_k={self.tile_k}: a k-block is a multiple of the MMA's K (16) and at most 128")
        if self.smem_bytes > SMEM_PER_CTA:
            out.append(f"shared memory: {self.stages} stages x {self.stage_bytes} B + staging and barriers = "
                       f"{self.smem_bytes} B > {SMEM_PER_CTA} B per CTA: use fewer stages or a smaller tile")
        if self.tmem_alloc > 512:
            out.append(f"TMEM: {self.accumulators} accumulator(s) x {self.consumers} consumer(s) x {self.tile_n} "
                       f"columns = {self.tmem_needed} > 512 columns: use fewer accumulators or a narrower tile")
        if self.threads > THREADS_PER_CTA:
            out.append(f"threads: {self.threads} > {THREADS_PER_CTA} per CTA: use fewer consumers")
        elif self.threads * WRITEBACK_REGISTERS > REGISTERS_PER_SM:
            out.append(f"registers: {self.threads} threads x {WRITEBACK_REGISTERS} > {REGISTERS_PER_SM} per SM")
        if self.epilogue == "overlapped" and (self.accumulators < 2 or not self.warp_specialized):
            out.append("an overlapped epilogue needs a second accumulator (accumulators >= 2) and a writeback of "
                       "its own (warp_specialized=True): the next tile's MMAs must have somewhere to write")
        if self.multicast not in (1, 2, 4) or self.cluster_size > 8:
            out.append(f"multicast={self.multicast} with cta_group={self.cta_group}: a cluster of "
                       f"{self.cluster_size} CTAs; multicast takes 1, 2 or 4 and a portable cluster at most 8 CTAs")
        if self.k_split != "none" and not (self.persistent or self.scheduler == "clc"):
            out.append("k_split needs a persistent or CLC design: a one-tile-per-CTA grid has no last wave to split")
        if self.scheduler == "clc" and not self.warp_specialized:
            out.append("scheduler='clc' needs a scheduler warp (warp_specialized=True)")
        return out

    def check(self):
        problems = self.problems()
        if problems:
            raise ValueError(f"design {self.name or self} cannot run: " + "; ".join(problems))
        return self

    def with_(self, **changes):
        """The design with some fields changed. A changed design is no longer the chapter's unless
        only a field its kernel takes as a setting changed (``chapter_config``)."""
        unknown = [k for k in changes if k not in {f.name for f in fields(self)}]
        if unknown:
            raise TypeError(f"Design has no fields {unknown}")
        new = replace(self, **changes)
        if new.chapter is not None and new.chapter_config() is None:
            new = replace(new, chapter=None, name=(self.name + " (changed)") if self.name else "")
        return new

    def chapter_config(self):
        """(chapter, kernel settings) when the book's kernel implements the design, else None."""
        if self.chapter is None:
            return None
        base = CHAPTER_DESIGNS[self.chapter]
        settable = {"stages", "tmem_cols", "name"} | ({"accumulators", "epilogue"} if self.chapter in (7, 8) else set())
        for f in fields(self):
            if f.name not in settable and getattr(self, f.name) != getattr(base, f.name):
                return None
        cfg = {}
        if self.stages != base.stages:
            if self.stages not in STAGE_CHOICES.get(self.chapter, ()):
                return None
            cfg["pipe_depth"] = self.stages
        if self.accumulators != base.accumulators:
            want_epi = "overlapped" if self.accumulators >= 2 else "serial"
            if self.epilogue != want_epi or self.accumulators not in (1, 2):
                return None
            cfg["acc_stages"] = self.accumulators
        elif self.epilogue != base.epilogue:
            return None
        return self.chapter, cfg


#: depths the chapters' kernels take (their shared memory allows)
STAGE_CHOICES = {5: (1, 2, 3, 4, 5, 6), 6: (1, 2, 3, 4, 5, 6), 7: (2, 3, 4, 5, 6), 8: (2, 3, 4, 5, 6),
                 9: (2, 3, 4), 10: (2, 3, 4, 5, 6)}

_WS = dict(warp_specialized=True, persistent=True, raster_group=8)
#: each chapter's kernel, as a design (its defaults; the chapter's module constants say the same:
#: tests/test_perf_design.py checks them)
CHAPTER_DESIGNS = {
    4: Design(stages=1, name="step 4: TMA, one tile per CTA", chapter=4),
    5: Design(stages=2, name="step 5: pipelined ring", chapter=5),
    6: Design(stages=2, persistent=True, raster_group=8, name="step 6: persistent", chapter=6),
    7: Design(stages=6, accumulators=2, epilogue="overlapped", name="step 7: warp-specialised", chapter=7, **_WS),
    8: Design(tile_n=256, cta_group=2, stages=6, accumulators=2, epilogue="overlapped", name="step 8: CTA pair",
              chapter=8, **_WS),
    9: Design(tile_m=256, tile_n=256, cta_group=2, consumers=2, stages=4, name="step 9: two consumers", chapter=9,
              **_WS),
    10: Design(tile_n=256, cta_group=2, stages=6, accumulators=2, epilogue="overlapped", scheduler="clc",
               name="step 10: any shape, CLC", chapter=10, **_WS),
}


def chapter_design(chapter, stages=None):
    """The design of chapter ``chapter``'s kernel (at ring depth ``stages``; None: its default)."""
    if chapter not in CHAPTER_DESIGNS:
        raise ValueError(f"chapters with a design: {sorted(CHAPTER_DESIGNS)}; got {chapter}")
    d = CHAPTER_DESIGNS[chapter]
    return d if stages is None else d.with_(stages=stages)


__all__ = ["CHAPTER_DESIGNS", "Design", "chapter_design"]
