"""Addresses and special registers: shared-window addresses of arrays, the CTA's place in its
cluster, DSMEM mapping (``mapa``) and the global timer."""
from llvmlite import ir
from numba import types

from ..emu.context import thread as _thread
from ._declare import asm_op, custom_op, twin, u32, u64


def shared_addr(typingctx, arr):
    """The 32-bit ``.shared`` address of element 0 of a shared array (static or dynamic).

    Numba holds shared arrays through generic pointers; an ``addrspacecast`` to address space 3
    and a ``ptrtoint`` give the shared-window offset that mbarrier, TMA and descriptor operands
    want. NVVM folds this to the symbol's address."""
    if not isinstance(arr, types.Array):
        return None
    sig = types.uint32(arr)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(ary.data, ir.PointerType(ir.IntType(8)))
        sptr = builder.addrspacecast(ptr, ir.PointerType(ir.IntType(8), 3))
        return builder.trunc(builder.ptrtoint(sptr, ir.IntType(64)), ir.IntType(32))

    return sig, codegen


shared_addr = custom_op(shared_addr)


@twin(shared_addr)
def _shared_addr(arr):
    t = _thread()
    smem = t.cta.smem
    off = arr.__array_interface__["data"][0] - smem.buffer.__array_interface__["data"][0]
    if not 0 <= off < smem.size:
        raise ValueError("shared_addr() of an array that is not in this CTA's shared memory")
    return smem.window_address(off)


cluster_ctarank = asm_op(
    "cluster_ctarank", "mov.u32 {r}, %cluster_ctarank;", results=(("r", u32),), memory=False,
    doc="This CTA's rank in its cluster (0 .. %cluster_nctarank-1). 0 without a cluster launch.")


@twin(cluster_ctarank)
def _cluster_ctarank():
    return _thread().cta.rank


cluster_nctarank = asm_op(
    "cluster_nctarank", "mov.u32 {r}, %cluster_nctarank;", results=(("r", u32),), memory=False,
    doc="The number of CTAs in this CTA's cluster.")


@twin(cluster_nctarank)
def _cluster_nctarank():
    return _thread().cta.cluster.size


globaltimer = asm_op(
    "globaltimer", "mov.u64 {t}, %globaltimer;", results=(("t", u64),),
    doc="The global nanosecond timer (for on-chip traces). The emulator returns its virtual clock.")


@twin(globaltimer)
def _globaltimer():
    from ..emu.costmodel import of

    t = _thread()
    return int(of(t).cycles_to_ns(t.clock))


mapa = asm_op(
    "mapa", "mapa.shared::cluster.u32 {r}, {addr}, {rank};",
    results=(("r", u32),), operands=(("addr", u32), ("rank", u32)), memory=False,
    doc="Map a shared address of this CTA to the same offset in CTA ``rank`` of the cluster "
        "(distributed shared memory). The result is valid for ld/st.shared::cluster, remote "
        "mbarrier arrivals, TMA destinations and commit barriers.")


@twin(mapa)
def _mapa(addr, rank):
    from ..emu.memory import OFFSET_MASK, RANK_SHIFT

    t = _thread()
    if not 0 <= rank < t.cta.cluster.size:
        raise ValueError(f"mapa to rank {rank} in a cluster of {t.cta.cluster.size}")
    return (int(addr) & OFFSET_MASK) | (int(rank) << RANK_SHIFT)
