"""The performance model's timing mode (no values: no MMA numerics, no TMA copies) gives exactly
the virtual times of the full emulator at small shapes, for every chapter the model runs."""
import pytest

from gemm_kernels.perf.share import run_share

# small shapes with several tiles per CTA (sm_count=2: two persistent CTAs, or one CTA pair)
CASES = [(4, (256, 256, 192), {}), (5, (256, 256, 320), {"pipe_depth": 2}), (6, (512, 256, 192), {"pipe_depth": 2}),
         (7, (512, 256, 256), {"pipe_depth": 2}), (7, (512, 256, 256), {"pipe_depth": 4}),
         (8, (512, 512, 192), {}), (9, (1024, 256, 192), {})]


def _events(share):
    return [(e.lane, e.op, e.start, e.end, e.cta, e.nbytes, e.flops) for e in share.trace.events]


@pytest.mark.parametrize("chapter,shape,config", CASES, ids=[f"ch{c}-{cfg}" for c, _, cfg in CASES])
def test_timing_mode_gives_the_full_modes_virtual_times(chapter, shape, config):
    full = run_share(chapter, *shape, sm_count=2, keep_trace=True, timing=False, **config)
    fast = run_share(chapter, *shape, sm_count=2, keep_trace=True, timing=True, **config)
    assert fast.span_cycles == full.span_cycles
    assert (fast.tc_busy_cycles, fast.tma_busy_cycles) == (full.tc_busy_cycles, full.tma_busy_cycles)
    assert _events(fast) == _events(full)  # every event of every unit and thread, to the cycle
    assert fast.mma_flops > 0 and fast.load_bytes > 0


@pytest.mark.parametrize("bug,error", [(1, "SharedMemoryHazard"), (2, "SharedMemoryHazard"), (3, "TmemHazard")])
def test_timing_mode_keeps_the_hazard_checks(bug, error):
    """Timing mode drops the values, not the checks: the planted buffer-reuse bugs of the emulator's
    catalogue are still reported, by name."""
    import numpy as np

    from tests import emu_kernels as K
    from gemm_kernels import emu

    a = b = np.zeros((128, 128), np.float16)
    out = np.zeros((128, 128), dtype=np.float32)
    with pytest.raises(getattr(emu.errors, error)):
        emu.run(K.k_mma_reuse, 1, 128, (out, bug), shared_bytes=K.SHARED_BYTES, names=K.REUSE_NAMES + K.BUFFER_NAMES,
                tensor_maps=K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, 128, 64)), timing=True)
