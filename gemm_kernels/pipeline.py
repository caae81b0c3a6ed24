"""Device-side pieces shared by the pipelined chapters: the ring-buffer position (stage + phase)
and the persistent tile scheduler."""
from numba import cuda


@cuda.jit(device=True, forceinline=True)
def advance(stage, phase, depth):
    """The next slot of a ring of ``depth`` stages: the phase (the parity to wait for on that
    stage's barrier) flips each time the stage index wraps to 0. Returns (stage, phase)."""
    stage += 1
    if stage == depth:
        return 0, phase ^ 1
    return stage, phase


@cuda.jit(device=True, forceinline=True)
def grouped_tile(t, num_m, num_n, group):
    """Output tile number ``t`` -> (m_idx, n_idx), walking ``group`` tile-rows at a time so that
    consecutive tiles (run at the same time by neighbouring CTAs) share rows of A and columns of B
    in L2. Within a group, m varies fastest."""
    per_group = group * num_n
    g = t // per_group
    first_m = g * group
    rows = min(num_m - first_m, group)
    local = t - g * per_group
    return first_m + local % rows, local // rows
