"""Device-side pieces shared by the pipelined chapters: the ring vocabulary (barrier and stage
accessors, wait / expect_tx / release / arrive, advance, the producer's tail) and the persistent
tile scheduler.

A ring is ``depth`` buffers in shared memory, each with its own 8-byte mbarriers, and a position
(stage, phase): the stage to use next and the parity its barrier's next wait names. Each barrier of
a ring is named after the handoff it carries, from one role to the next: ``tma2mma`` (the TMA
filled the stage: the MMAs may read it), ``mma2tma`` (the MMAs finished reading it: the TMA may
refill it), ``mma2ld`` (the accumulator is final: the writeback may load it), ``ld2mma`` (the
writeback has loaded it: the MMAs may overwrite it). The helpers are a few lines of ``ptx.*`` calls
each, so every PTX operation stays one call below the kernel that uses them; they are
``forceinline`` device functions over plain uint32 values (Numba has no classes on the device), and
the emulator runs the same source.

Both parts work in 32-bit unsigned arithmetic, and the scheduler divides without a division instruction.
A GPU has no integer divide: ``//`` or ``%`` on Numba's default 64-bit integers becomes a call to a
software routine (``__cuda_sm20_div_s64``, dozens of instructions), even in 32 bits an inline
sequence of a dozen. The scheduler's divisors are fixed for a launch, so the host turns each into
a multiplier and a shift (``fast_divisor``, CUTLASS's FastDivmod idea) and the device divides with
one wide multiply and one shift (``fast_div``). The host checks that tile numbers stay below 2**30."""
from numba import cuda, uint32, uint64

from . import ptx

_SHIFT_BITS = 8  # an encoded divisor: multiplier << 8 | shift


def fast_divisor(d):
    """Encode divisor ``d`` (1 <= d < 2**31) for ``fast_div``: for every 0 <= n < 2**31,
    n // d == (n * mul) >> p with p = 31 + ceil(log2 d) and mul = ceil(2**p / d) (< 2**32).
    Why it is exact: mul * d = 2**p + e with 0 <= e < d <= 2**(p-31), so n * mul / 2**p exceeds
    n / d by n * e / (d * 2**p) < 1 / d, never enough to reach the next integer."""
    if not 1 <= d < 2 ** 31:
        raise ValueError(f"fast_divisor needs 1 <= d < 2**31, got {d}")
    p = 31 + (d - 1).bit_length()
    mul = -(-(1 << p) // d)
    return (mul << _SHIFT_BITS) | p


@cuda.jit(device=True, forceinline=True)
def fast_div(n, divisor):
    """n // d for 0 <= n < 2**31, with ``divisor = fast_divisor(d)``: a 32 x 32 -> 64-bit multiply
    and a shift (uint32)."""
    enc = uint64(divisor)
    return uint32((uint64(uint32(n)) * (enc >> uint64(_SHIFT_BITS))) >> (enc & uint64(0xFF)))


BARRIER_BYTES = 8  # one mbarrier: a ring's barriers lie 8 bytes apart


# -- the ring vocabulary ------------------------------------------------------------------------------
@cuda.jit(device=True, forceinline=True)
def barrier(bar0, stage):
    """Shared address of barrier ``stage`` of a ring whose barriers start at ``bar0``."""
    return uint32(uint32(bar0) + uint32(uint32(stage) * uint32(BARRIER_BYTES)))


@cuda.jit(device=True, forceinline=True)
def stage_buffer(buf0, stage, nbytes):
    """Shared address of buffer ``stage`` of a ring of ``nbytes``-byte buffers starting at ``buf0``."""
    return uint32(uint32(buf0) + uint32(uint32(stage) * uint32(nbytes)))


@cuda.jit(device=True, forceinline=True)
def wait(bar0, stage, phase):
    """Block until barrier ``stage`` of the ring at ``bar0`` completes the phase of parity ``phase``."""
    ptx.mbarrier_wait(barrier(bar0, stage), phase)


@cuda.jit(device=True, forceinline=True)
def wait_cluster(bar0, stage, phase):
    """``wait`` on a barrier that the other CTA of a pair also completes (its remote arrivals, the
    leader's multicast commits, cta_group::2 TMA loads): the ISA's cluster-scope form,
    try_wait.parity.relaxed.cluster (the same instructions as the CTA-scope acquire, but not the
    same order: ptxas may schedule later ordinary loads above a relaxed wait).

    Relaxed: it orders no ordinary memory access. Use it only where what follows the wait is
    asynchronous work that the barrier itself orders (TMA copies, tcgen05 operations after
    tcgen05.fence::after_thread_sync). A wait followed by an ordinary load of the data the phase
    publishes must acquire (``wait_acquire_cluster``): ptxas may move a load above a relaxed wait,
    and did (chapter 10)."""
    ptx.mbarrier_wait_relaxed_cluster(barrier(bar0, stage), phase)


@cuda.jit(device=True, forceinline=True)
def wait_acquire_cluster(bar0, stage, phase):
    """``wait`` with acquire at cluster scope (try_wait.parity.acquire.cluster): the writes that the
    phase's arrivals released, and the bytes its transactions completed, are visible to this
    thread's later ordinary loads, and no later load is moved above the wait. For a wait followed
    by ld.shared of what the phase publishes (chapter 10's CLC responses)."""
    ptx.mbarrier_wait_cluster(barrier(bar0, stage), phase)


@cuda.jit(device=True, forceinline=True)
def expect_tx(bar0, stage, nbytes):
    """The producer's arrival on barrier ``stage``, announcing the ``nbytes`` that its TMA copies
    will complete on it (``mbarrier.arrive.expect_tx``). Returns the barrier, for those copies."""
    bar = barrier(bar0, stage)
    ptx.mbarrier_arrive_expect_tx(bar, nbytes)
    return bar


@cuda.jit(device=True, forceinline=True)
def release(bar0, stage):
    """``tcgen05.commit``: one arrival on barrier ``stage`` once every MMA this thread has issued
    so far has completed (the tensor core has read their operands and written their results)."""
    ptx.tcgen05_commit(barrier(bar0, stage))


@cuda.jit(device=True, forceinline=True)
def arrive(bar0, stage):
    """One arrival on barrier ``stage`` by this thread (``mbarrier.arrive``, release semantics)."""
    ptx.mbarrier_arrive(barrier(bar0, stage))


@cuda.jit(device=True, forceinline=True)
def advance(stage, phase, depth):
    """The next slot of a ring of ``depth`` stages: the phase (the parity to wait for on that
    stage's barrier) flips each time the stage index wraps to 0. Returns (stage, phase) as uint32."""
    nxt = uint32(uint32(stage) + uint32(1))  # (Numba widens uint32 + uint32 to 64 bits: cast back)
    if nxt == uint32(depth):
        return uint32(0), uint32(uint32(phase) ^ uint32(1))
    return nxt, uint32(phase)


@cuda.jit(device=True, forceinline=True)
def ring_slot(count, depth):
    """(stage, phase) of the ``count``-th use (from 0) of a ring of ``depth`` stages: the position
    ``advance`` reaches after ``count`` steps from (0, 0). Roles that step a ring once per tile derive
    it from their tile count this way, so they cannot drift apart. ``depth`` a compile-time power of
    two: a mask and a shift."""
    c = uint32(count)
    return uint32(c % uint32(depth)), uint32(uint32(c // uint32(depth)) & uint32(1))


@cuda.jit(device=True, forceinline=True)
def producer_tail(empty0, stage, phase, depth):
    """The producer's last act (CUTLASS's producer tail): wait on each stage's "empty" barrier (the
    ``depth`` barriers of the ring at ``empty0``) once more, from ring position (stage, phase) on,
    as if it were about to load again. Then every commit that signals those barriers has arrived,
    and the CTA may tear down. A stage never filled passes at once."""
    for _ in range(depth):
        wait(empty0, stage, phase)
        stage, phase = advance(stage, phase, depth)


@cuda.jit(device=True, forceinline=True)
def producer_tail_cluster(empty0, stage, phase, depth):
    """``producer_tail`` for a CTA pair, whose "empty" barriers the leader's multicast commits complete
    (``wait_cluster``)."""
    for _ in range(depth):
        wait_cluster(empty0, stage, phase)
        stage, phase = advance(stage, phase, depth)


# -- the persistent tile scheduler ----------------------------------------------------------------------
def scheduler_args(num_m, num_n, group):
    """The tile scheduler's kernel arguments for an (num_m x num_n)-tile output: num_m, num_n and the
    two encoded divisors ``grouped_tile`` needs (a whole group's tiles, and the rows of the last,
    partial group of tile-rows)."""
    import numpy as np

    if num_m * num_n >= 2 ** 30:
        raise ValueError(f"{num_m * num_n} output tiles: the tile scheduler counts in 32 bits and takes at most "
                         f"{2 ** 30 - 1}. Split the GEMM into smaller ones.")
    last_rows = num_m % group or group
    return (np.int32(num_m), np.int32(num_n), np.uint64(fast_divisor(group * num_n)),
            np.uint64(fast_divisor(last_rows)))


@cuda.jit(device=True, forceinline=True)
def grouped_tile(t, num_m, num_n, group, div_group, div_last):
    """Output tile number ``t`` -> (m_idx, n_idx), walking ``group`` tile-rows at a time so that
    consecutive tiles (run at the same time by neighbouring CTAs) share rows of A and columns of B
    in L2. Within a group, m varies fastest. ``div_group``/``div_last`` come from scheduler_args;
    ``group`` is a compile-time constant, so dividing by it is a shift or a multiply."""
    t, group = uint32(t), uint32(group)
    g = fast_div(t, div_group)  # t // (group * num_n)
    # (every intermediate is cast back to uint32: Numba computes uint32 arithmetic in 64 bits)
    first_m = uint32(g * group)
    rows = min(uint32(uint32(num_m) - first_m), group)
    local = uint32(t - uint32(first_m * uint32(num_n)))
    if rows == group:
        n_idx = uint32(local // group)
    else:  # the last group of tile-rows has fewer rows
        n_idx = fast_div(local, div_last)
    return uint32(first_m + uint32(local - uint32(n_idx * rows))), n_idx


def host_grouped_tile(t, num_m, num_n, group):
    """The scheduler's (m_idx, n_idx) for tile ``t``, computed on the host by the same code the
    emulator runs (``grouped_tile`` with ``scheduler_args``' encoded divisors)."""
    return host_tile_order(num_m, num_n, group, tiles=(t,))[0]


def host_tile_order(num_m, num_n, group, tiles=None):
    """(m_idx, n_idx) of each tile number in ``tiles`` (default: all of them, in order), as the
    persistent kernels' ``grouped_tile`` computes them."""
    from .emu.rebind import emulated

    _, _, div_group, div_last = scheduler_args(num_m, num_n, group)
    tile_of = emulated(grouped_tile)
    return [tuple(int(i) for i in tile_of(t, num_m, num_n, group, div_group, div_last))
            for t in (range(num_m * num_n) if tiles is None else tiles)]
