"""TMA: tiled copies between global memory and shared memory by the Tensor Memory Accelerator.

One thread issues a copy of a whole box described by a tensor map; the engine generates the
addresses, applies the swizzle, fills out-of-bounds elements with zero, and reports the bytes to an
mbarrier (loads) or to the issuing thread's bulk groups (stores)."""
from ..emu.context import thread as _thread
from ..emu.tma import TmaLoad, TmaStore, tensor_map
from ._declare import asm_op, twin, u32, u64

tma_load_2d = asm_op(
    "tma_load_2d",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
    "[{dst}], [{tmap}, {{{c0}, {c1}}}], [{bar}];",
    operands=(("dst", u32), ("tmap", u64), ("c0", u32), ("c1", u32), ("bar", u32)),
    doc="Copy the box at (column ``c0``, row ``c1``; innermost coordinate first) of the tensor map at "
        "global address ``tmap`` into shared memory at ``dst``, and complete the box's bytes on the "
        "mbarrier at ``bar``.")


def _load(dst, tmap, c0, c1, bar, label):
    t = _thread()
    tm = tensor_map(t, tmap)
    dst_cta, dst_off = t.cta.resolve(dst, tm.box_bytes, "TMA load destination")
    b = t.cta.mbarrier(bar, "TMA load barrier")
    if not label and b.cta is not dst_cta:
        # An H200 ran this form with the barrier in the other CTA: the bytes landed in the destination
        # and were counted on the barrier at the same offset in the DESTINATION CTA; the named barrier
        # was never signalled (tests/test_ground_truth.py, cluster_tma_peer_barrier).
        from ..emu.errors import MemoryFault

        raise MemoryFault(
            f"{t}: TMA load into CTA {dst_cta.rank_text()} signals mbarrier {b.name} of CTA {b.cta.rank_text()}; "
            f"the plain cp.async.bulk.tensor form completes its bytes on the barrier in the destination CTA (on "
            f"an H200 they were counted on the destination CTA's barrier at that offset, and the named barrier "
            f"was never signalled: a hang). Put the barrier in the destination CTA, or use the .cta_group::2 "
            f"form (tma_load_2d_cg2, sm_100a)")
    b.signal_from(t)
    op = TmaLoad(t, tm, dst_cta, dst_off, int(c0), int(c1), b, label)
    t.scheduler.submit(op)
    t.advance()


tma_load_2d.twin = lambda dst, tmap, c0, c1, bar: _load(dst, tmap, c0, c1, bar, "")

tma_load_2d_cg2 = asm_op(
    "tma_load_2d_cg2",
    "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
    "[{dst}], [{tmap}, {{{c0}, {c1}}}], [{bar}];",
    operands=(("dst", u32), ("tmap", u64), ("c0", u32), ("c1", u32), ("bar", u32)),
    doc="The CTA-pair form: as tma_load_2d, but the mbarrier ``bar`` may be the peer CTA's (a "
        "``mapa`` address), so both CTAs' loads complete on the leader CTA's barrier.")
tma_load_2d_cg2.twin = lambda dst, tmap, c0, c1, bar: _load(dst, tmap, c0, c1, bar, "cta_group::2")

tma_store_2d = asm_op(
    "tma_store_2d",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{tmap}, {{{c0}, {c1}}}], [{src}];",
    operands=(("tmap", u64), ("c0", u32), ("c1", u32), ("src", u32)),
    doc="Copy a box from shared memory at ``src`` to the tensor map's global array at (column ``c0``, "
        "row ``c1``). Out-of-bounds elements are not written. Part of the thread's open bulk group.")


@twin(tma_store_2d)
def _tma_store_2d(tmap, c0, c1, src):
    t = _thread()
    tm = tensor_map(t, tmap)
    cta, off = t.cta.resolve(src, tm.box_bytes, "TMA store source")
    op = TmaStore(t, tm, off, int(c0), int(c1))
    t.open_group.append(op)
    t.pending_stores.append(op)
    t.scheduler.submit(op)
    t.advance()


bulk_commit_group = asm_op(
    "bulk_commit_group", "cp.async.bulk.commit_group;",
    doc="Close this thread's open group of bulk copies (TMA stores) so it can be waited on.")


@twin(bulk_commit_group)
def _bulk_commit_group():
    t = _thread()
    if t.open_group:
        t.bulk_groups.append(t.open_group)
        t.open_group = []
    t.advance()


def _wait_group_read_op(n):
    """``cp.async.bulk.wait_group.read n``: wait until at most the ``n`` most recent committed bulk
    groups of this thread are still reading shared memory (the older ones have finished reading)."""
    op = asm_op(
        f"bulk_wait_group_read{n}", f"cp.async.bulk.wait_group.read {n};",
        doc=f"Wait until every committed bulk group of this thread but the {n} most recent has finished "
            f"READING its shared-memory source, so those staging buffers may be written again (the global "
            f"writes may still be in flight)." + (" With n = 0: every group; use it before the CTA exits."
                                                  if n == 0 else ""))

    @twin(op)
    def _wait(n=n):
        t = _thread()
        older = t.bulk_groups[:max(0, len(t.bulk_groups) - n)]
        ops = [o for g in older for o in g]
        t.scheduler.block(t.bulk_waitable, lambda: all(o.done for o in ops),
                          lambda: f"in cp.async.bulk.wait_group.read {n} for {sum(not o.done for o in ops)} TMA store(s)")
        t.bulk_groups = t.bulk_groups[len(older):]
        t.bulk_waited(ops)
        if ops:
            t.clock = max([t.clock] + [o.end for o in ops])

    return op


bulk_wait_group_read0 = _wait_group_read_op(0)
bulk_wait_group_read1 = _wait_group_read_op(1)
bulk_wait_group_read2 = _wait_group_read_op(2)
bulk_wait_group_read3 = _wait_group_read_op(3)


prefetch_tensormap = asm_op(
    "prefetch_tensormap", "prefetch.tensormap [{tmap}];", operands=(("tmap", u64),),
    doc="Bring the tensor map at generic address ``tmap`` into the TMA unit's cache ahead of use.")
prefetch_tensormap.twin = lambda tmap: _thread().advance()
