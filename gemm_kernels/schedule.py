"""Device-side tile schedulers: which output tile a persistent cluster takes next.

Every role of a persistent kernel walks its tiles with the same three lines, whichever scheduler
hands them out: ``more, t = first(...)``, ``while more:``, and ``more, t = next(...)`` at the end of
the tile. Swapping the scheduler (chapter 10) changes these lines and nothing else in a role's loop.
A ring that a role steps on its own, the stages and steps 6-9's accumulators, steps with
``pipeline.advance``; chapter 10's roles count their tiles for the CLC ring anyway, and take the
accumulator ring's position from the same count (``pipeline.ring_slot``), so the MMA warp and the
writeback derive it alike.

Static (chapters 6-9): cluster c takes tiles c, c + G, c + 2G, ... (G clusters in the grid), a
schedule fixed at launch; every role walks it on its own (``static_first``, ``static_next``).

Cluster launch control (chapter 10): the grid has one cluster per tile, and a cluster's first tile
is its own. A scheduler warp in the leader CTA asks the chip for a cluster that has not started
(``clusterlaunchcontrol.try_cancel``, multicast to both CTAs of the pair); the tile of the cluster
it cancelled is this cluster's next one. The responses pass through a ring of CLC_STAGES 16-byte
slots with two barriers each, like a stage ring: ``clc_full[s]`` in each CTA (the leader's
scheduler announces the 16 bytes, the response completes them), ``clc_empty[s]`` in the leader
(one arrival from each warp that read the slot). Every role reads every response
(``clc_next``); the scheduler reads them too, and stops after the first failed one (the ISA
forbids asking again). Tile numbers go through ``pipeline.grouped_tile`` as before, so the
rasterisation is kept whichever cluster ends up with a tile."""
from numba import cuda, uint32

from . import pipeline, ptx

CLC_STAGES = 2
RESPONSE_BYTES = 16


@cuda.jit(device=True, forceinline=True)
def static_first(cluster, num_tiles):
    """The first tile of a statically scheduled cluster, its own index: (more, t), more false when
    the grid has more clusters than tiles. (The static helpers keep the kernel's integer types:
    casting here to uint32 cost step 7's writeback three instructions per tile in ptxas.)"""
    return cluster < num_tiles, cluster


@cuda.jit(device=True, forceinline=True)
def static_next(t, num_clusters, num_tiles):
    """The tile after ``t`` in a static schedule of ``num_clusters`` clusters: (more, t + num_clusters),
    more false once past the last tile. (The roles loop ``while more``: a ``range`` with a step would
    divide in 64 bits.)"""
    t = t + num_clusters
    return t < num_tiles, t


@cuda.jit(device=True, forceinline=True)
def clc_first(cluster):
    """The first tile of a cluster under cluster launch control: (1, its own index), as there is
    one cluster per tile."""
    return uint32(1), uint32(cluster)


@cuda.jit(device=True, forceinline=True)
def clc_request(resp0, full0, peer_full0, empty0, count):
    """The scheduler warp (leader CTA), for its ``count``-th request (from 0): wait until every role
    has read the slot's previous response, announce the response's 16 bytes on both CTAs'
    ``clc_full``, and ask for a cluster (one elected lane). ``peer_full0``: the peer's clc_full ring
    through ``mapa``."""
    stage, phase = pipeline.ring_slot(count, CLC_STAGES)
    # acquire, cluster scope, the ISA's form for a CLC slot. What keeps the readers' loads of the
    # slot's last response before the new write: each reader's fence.proxy.async and its arrive
    # after the load (at CTA scope in the peer, as CUTLASS hands a slot back: see clc_next)
    pipeline.wait_acquire_cluster(empty0, stage, phase ^ uint32(1))  # a fresh slot passes at once (parity 1)
    if ptx.elect_sync():
        ptx.mbarrier_arrive_expect_tx(pipeline.barrier(full0, stage), RESPONSE_BYTES)
        ptx.mbarrier_arrive_expect_tx_cluster(pipeline.barrier(peer_full0, stage), RESPONSE_BYTES)
        ptx.clc_try_cancel_multicast(pipeline.stage_buffer(resp0, stage, RESPONSE_BYTES),
                                     pipeline.barrier(full0, stage))


@cuda.jit(device=True, forceinline=True)
def clc_next(resp0, full0, leader_empty0, count):
    """Every role after its ``count``-th tile (from 0; the whole warp): wait for the response that
    names the next tile, decode it, and hand its slot back (an elected lane per warp, on the
    leader's ``clc_empty``). Every role reads the responses in the same order, so the slot follows
    from the count (``ring_slot``). Returns (ok, tile): ok = 0 when no cluster was left."""
    stage, phase = pipeline.ring_slot(count, CLC_STAGES)
    # acquire, cluster scope: the response is read with an ordinary ld.shared, which a relaxed wait
    # would not keep behind it (ptxas hoisted the scheduler's load above a relaxed wait)
    pipeline.wait_acquire_cluster(full0, stage, phase)
    ok, first_x = ptx.clc_query_cancel(pipeline.stage_buffer(resp0, stage, RESPONSE_BYTES))
    # the slot's next write is the tensor core's (async proxy): order this generic read before it
    ptx.fence_proxy_async()
    if ptx.elect_sync():
        # release at the default CTA scope, as CUTLASS hands a slot back (the ISA's own example hands
        # it back with a relaxed cluster barrier). The .release.cluster form would synchronise
        # with the scheduler's acquire by the memory model's scope rule, but costs a MEMBAR.ALL.GPU
        # per tile in every role (ARCHITECTURE.md, "Memory-model forms the kernels use")
        ptx.mbarrier_arrive_remote(pipeline.barrier(leader_empty0, stage))
    return ok, uint32(first_x >> uint32(1))  # a pair's first CTA: x = 2 x its cluster
