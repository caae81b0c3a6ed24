"""Warps, CTAs and clusters: elect.sync, named barriers, the cluster barrier, fp16 packing, and
the (no-op on the GPU) naming of a warp's role for traces."""
from numba import types

import numpy as np

from ..emu.context import thread as _thread
from ._declare import asm_op, custom_op, f32, twin, u32

elect_sync = asm_op(
    "elect_sync",
    "{{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 {leader}, 1, 0, p;\n}}",
    results=(("leader", u32),),
    doc="All 32 lanes of the warp execute it together; it returns 1 in exactly one of them (the "
        "lowest active lane) and 0 in the others. Use it to pick the single thread that issues "
        "TMA copies, MMAs and commits.")


@twin(elect_sync)
def _elect_sync():
    t = _thread()
    leader = t.warp.collective(t, "elect.sync", (), action=lambda args: {lane: int(lane == min(args)) for lane in args})
    if leader:  # what it does next it may do for the warp (EmuThread.unordered_lanes)
        t.elected_at = t.collectives_seen
    return leader


warp_uniform = asm_op(
    "warp_uniform", "shfl.sync.idx.b32 {out}, {value}, 0, 0x1f, 0xffffffff;",
    results=(("out", u32),), operands=(("value", u32),),
    doc="Lane 0's ``value``, in every lane of the warp (all 32 lanes execute it together). Used on the "
        "warp index (``tid // 32``), it tells ptxas that the index is the same in the whole warp, so "
        "branches on it are warp-uniform and the code under them can live in uniform registers "
        "(CUTLASS's canonical_warp_idx_sync).")


@twin(warp_uniform)
def _warp_uniform(value):
    t = _thread()
    return t.warp.collective(t, "shfl.sync.idx", int(value), same=False,
                             action=lambda args: {lane: args[min(args)] for lane in args})


named_barrier_sync = asm_op(
    "named_barrier_sync", "bar.sync {ident}, {nthreads};", operands=(("ident", u32), ("nthreads", u32)),
    doc="Wait at named barrier ``ident`` (0..15) until ``nthreads`` threads (a multiple of 32) have "
        "arrived. ID 0 with all threads is __syncthreads; give each group of warps its own ID.")


@twin(named_barrier_sync)
def _named_barrier_sync(ident, nthreads):
    t = _thread()
    t.cta.named_barrier(int(ident)).arrive(t, int(nthreads), wait=True)


named_barrier_arrive = asm_op(
    "named_barrier_arrive", "bar.arrive {ident}, {nthreads};", operands=(("ident", u32), ("nthreads", u32)),
    doc="Arrive at named barrier ``ident`` without waiting (a producer's signal).")


@twin(named_barrier_arrive)
def _named_barrier_arrive(ident, nthreads):
    t = _thread()
    t.cta.named_barrier(int(ident)).arrive(t, int(nthreads), wait=False)


cluster_arrive = asm_op(
    "cluster_arrive", "barrier.cluster.arrive.release.aligned;",
    doc="Arrive at the cluster barrier (release): every non-exited thread of the cluster must arrive.")


@twin(cluster_arrive)
def _cluster_arrive():
    t = _thread()
    t.cta.cluster.cluster_arrive(t)


cluster_wait = asm_op(
    "cluster_wait", "barrier.cluster.wait.acquire.aligned;",
    doc="Wait until every thread of the cluster has arrived at the cluster barrier (acquire).")


@twin(cluster_wait)
def _cluster_wait():
    t = _thread()
    t.cta.cluster.cluster_wait(t)


pack_f16x2 = asm_op(
    "pack_f16x2", "cvt.rn.f16x2.f32 {packed}, {hi}, {lo};",
    results=(("packed", u32),), operands=(("lo", f32), ("hi", f32)), memory=False,
    doc="Round two fp32 values to fp16 (round to nearest even) and pack them into one 32-bit "
        "register: ``lo`` in bits 0-15 (the lower address once stored), ``hi`` in bits 16-31.")


@twin(pack_f16x2)
def _pack_f16x2(lo, hi):
    pair = np.array([lo, hi], dtype=np.float32).astype(np.float16)
    return int(pair.view(np.uint32)[0])


pack_bf16x2 = asm_op(
    "pack_bf16x2", "cvt.rn.bf16x2.f32 {packed}, {hi}, {lo};",
    results=(("packed", u32),), operands=(("lo", f32), ("hi", f32)), memory=False,
    doc="Round two fp32 values to bf16 (round to nearest even) and pack them into one 32-bit "
        "register, ``lo`` in bits 0-15 (step 11's BF16 D; PTX ISA cvt, .bf16x2 destination).")


@twin(pack_bf16x2)
def _pack_bf16x2(lo, hi):
    import ml_dtypes

    pair = np.array([lo, hi], dtype=np.float32).astype(ml_dtypes.bfloat16)
    return int(pair.view(np.uint32)[0])


def set_warp_role(typingctx, code):
    """Name this warp's role for traces (``gemm_kernels.trace.ROLES``). Emits no instruction."""
    sig = types.void(code)

    def codegen(context, builder, sig, args):
        return context.get_dummy_value()

    return sig, codegen


set_warp_role = custom_op(set_warp_role)


@twin(set_warp_role)
def _set_warp_role(code):
    from ..trace import ROLES

    t = _thread()
    t.warp.role = ROLES.get(int(code), f"role {int(code)}")
