"""Epilogues: the fp32 accumulator leaves TMEM through registers, is rounded to fp16, and goes to
global memory (steps 1-3: ordinary stores) or to a shared staging buffer for a TMA store (4-9).

Warp w of a warpgroup owns TMEM lanes 32*(w%4) .. +31 (its lane quarter); lane i of the warp reads
accumulator row 32*(w%4) + i, 32 columns per tcgen05.ld."""
from numba import cuda, float32, uint32

from .. import ptx
from ..layouts import SWIZZLE_ROW_MASKS, swizzle_dev, tile_offset_k_major_sw128_dev

COLS_PER_LD = 32
PACKED_PER_LD = 16  # fp16 pairs from one 32-column load


@cuda.jit(device=True, forceinline=True)
def tmem_rows_to_global(d32, tmem_base, warp_in_group, lane, row0, col0, ncols):
    """Store the accumulator's columns [0, ncols) of this thread's row to D (viewed as uint32 pairs
    of fp16) at row ``row0 + 32*warp_in_group + lane``, columns ``col0 ..``."""
    quarter = 32 * warp_in_group
    row = row0 + quarter + lane
    vals = cuda.local.array(COLS_PER_LD, float32)
    for chunk in range(ncols // COLS_PER_LD):
        taddr = tmem_base + (quarter << 16) + chunk * COLS_PER_LD
        v = ptx.tmem_ld_32x32b_x32(taddr)
        ptx.tmem_wait_ld()
        for i in range(COLS_PER_LD):
            vals[i] = v[i]
        base = (col0 + chunk * COLS_PER_LD) // 2
        for j in range(COLS_PER_LD // 2):
            d32[row, base + j] = ptx.pack_f16x2(vals[2 * j], vals[2 * j + 1])


STAGE_COLS = 64  # one 128B-swizzled staging box: 64 fp16 = 128 bytes per row
@cuda.jit(device=True, forceinline=True)
def tmem_load_packed(packed, tmem_base, warp_in_group, tmem_col0, ncols):
    """Load this thread's row of accumulator columns [tmem_col0, +ncols) from TMEM and round it to
    fp16 pairs in ``packed`` (a local uint32 array of ncols/2). After it returns, the TMEM columns
    may be overwritten: every tcgen05.ld has been waited on."""
    quarter = 32 * warp_in_group
    vals = cuda.local.array(COLS_PER_LD, float32)
    for chunk in range(ncols // COLS_PER_LD):
        v = ptx.tmem_ld_32x32b_x32(tmem_base + (quarter << 16) + tmem_col0 + chunk * COLS_PER_LD)
        ptx.tmem_wait_ld()
        for i in range(COLS_PER_LD):
            vals[i] = v[i]
        for j in range(COLS_PER_LD // 2):
            packed[chunk * (COLS_PER_LD // 2) + j] = ptx.pack_f16x2(vals[2 * j], vals[2 * j + 1])


@cuda.jit(device=True, forceinline=True)
def packed_to_staging(staging_addr, packed, row, col0, ncols):
    """Write one row of ncols fp16 values (as pairs), staging columns [col0, col0 + ncols), into
    the shared staging area at shared address ``staging_addr``: boxes of 128 rows x 64 columns,
    each 128B-swizzled (16 KiB, 1024-aligned), the layout a TMA store with a 128B-swizzled box
    reads. One 16-byte store per 8 columns (st.shared.v4): conflict-free under the swizzle."""
    for j in range(ncols // 8):
        c = col0 + 8 * j
        box = staging_addr + (c // STAGE_COLS) * (128 * 128)
        off = box + tile_offset_k_major_sw128_dev(row, c % STAGE_COLS, 2)
        ptx.st_shared_v4(off, packed[4 * j], packed[4 * j + 1], packed[4 * j + 2], packed[4 * j + 3])


@cuda.jit(device=True, forceinline=True)
def tmem_rows_to_staging(staging_addr, tmem_base, warp_in_group, lane, tmem_col0, ncols):
    """TMEM -> registers (fp16 pairs) -> swizzled staging, for this thread's row, 32 columns at a
    time (few registers: nothing else is in flight while it runs)."""
    packed = cuda.local.array(PACKED_PER_LD, uint32)
    for chunk in range(ncols // COLS_PER_LD):
        tmem_load_packed(packed, tmem_base, warp_in_group, tmem_col0 + chunk * COLS_PER_LD, COLS_PER_LD)
        packed_to_staging(staging_addr, packed, 32 * warp_in_group + lane, chunk * COLS_PER_LD, COLS_PER_LD)


@cuda.jit(device=True, forceinline=True)
def store_staging(tmap_d, staging_addr, row0, col0, ncols):
    """One thread: TMA-store the staging boxes to D at (row0, col0), then wait until the engine has
    read them (so the staging buffer may be written again)."""
    for box in range(ncols // STAGE_COLS):
        ptx.tma_store_2d(tmap_d, col0 + box * STAGE_COLS, row0, staging_addr + box * (128 * 128))
    ptx.bulk_commit_group()
    ptx.bulk_wait_group_read0()


# -- the subtiled epilogue of steps 7-10 ------------------------------------------------------------
# The accumulator leaves in subtiles of 32 columns: one tcgen05.ld.32x32b.x32 per thread, 16 fp16
# pairs, 64 bytes per row. A subtile is staged in an 8 KiB buffer (128 rows x 64 B, 64B-swizzled, the
# layout a TMA store with a 64B-swizzled 128 x 32 box reads). A kernel keeps a ring of such buffers
# and fills them a group of subtiles at a time: one named barrier publishes the group and one bulk
# group stores it, while the previous groups' stores may still be reading their buffers.
SUBTILE_COLS = 32
SUBTILE_BYTES = 128 * SUBTILE_COLS * 2
SUBTILE_SWIZZLE = "64B"  # a 32-column fp16 row is 64 bytes
SUBTILE_ROW_MASK = SWIZZLE_ROW_MASKS[SUBTILE_SWIZZLE]


@cuda.jit(device=True, forceinline=True)
def subtile_row(staging_addr, row):
    """Shared address of ``row`` of a 64B-swizzled subtile buffer at ``staging_addr`` (1024-aligned),
    with the row's swizzle folded in: the 16-byte chunk j of the row is at ``subtile_row(...) ^ (j << 4)``.
    (A row is 64 bytes and starts 64-byte aligned, so its chunk bits 4-5 are zero before the swizzle
    XORs them with address bits 7-8; XOR-ing chunk j in afterwards is the whole per-chunk arithmetic.)"""
    return swizzle_dev(uint32(uint32(staging_addr) + (uint32(row) << uint32(6))), SUBTILE_ROW_MASK)


@cuda.jit(device=True, forceinline=True)
def tmem_load_subtile(taddr, alpha=1.0, bf16=False):
    """This thread's row of 32 accumulator columns at TMEM address ``taddr`` (lane field included),
    waited on (tcgen05.wait::ld), times ``alpha`` (step 11's NVFP4 global scales; 1.0, the default,
    is folded away: the same instructions as without it) and rounded to 16 fp16 pairs (``bf16``, a
    compile-time constant: bf16 pairs, step 11's BF16 D)."""
    v = ptx.tmem_ld_32x32b_x32(taddr)
    ptx.tmem_wait_ld()
    a = float32(alpha)
    # two whole tuples: a shared pack helper (bf16 ? pack_bf16x2 : pack_f16x2) changed step 10's
    # register allocation and instruction order
    if bf16:
        return (ptx.pack_bf16x2(v[0] * a, v[1] * a), ptx.pack_bf16x2(v[2] * a, v[3] * a),
                ptx.pack_bf16x2(v[4] * a, v[5] * a), ptx.pack_bf16x2(v[6] * a, v[7] * a),
                ptx.pack_bf16x2(v[8] * a, v[9] * a), ptx.pack_bf16x2(v[10] * a, v[11] * a),
                ptx.pack_bf16x2(v[12] * a, v[13] * a), ptx.pack_bf16x2(v[14] * a, v[15] * a),
                ptx.pack_bf16x2(v[16] * a, v[17] * a), ptx.pack_bf16x2(v[18] * a, v[19] * a),
                ptx.pack_bf16x2(v[20] * a, v[21] * a), ptx.pack_bf16x2(v[22] * a, v[23] * a),
                ptx.pack_bf16x2(v[24] * a, v[25] * a), ptx.pack_bf16x2(v[26] * a, v[27] * a),
                ptx.pack_bf16x2(v[28] * a, v[29] * a), ptx.pack_bf16x2(v[30] * a, v[31] * a))
    return (ptx.pack_f16x2(v[0] * a, v[1] * a), ptx.pack_f16x2(v[2] * a, v[3] * a),
            ptx.pack_f16x2(v[4] * a, v[5] * a), ptx.pack_f16x2(v[6] * a, v[7] * a),
            ptx.pack_f16x2(v[8] * a, v[9] * a), ptx.pack_f16x2(v[10] * a, v[11] * a),
            ptx.pack_f16x2(v[12] * a, v[13] * a), ptx.pack_f16x2(v[14] * a, v[15] * a),
            ptx.pack_f16x2(v[16] * a, v[17] * a), ptx.pack_f16x2(v[18] * a, v[19] * a),
            ptx.pack_f16x2(v[20] * a, v[21] * a), ptx.pack_f16x2(v[22] * a, v[23] * a),
            ptx.pack_f16x2(v[24] * a, v[25] * a), ptx.pack_f16x2(v[26] * a, v[27] * a),
            ptx.pack_f16x2(v[28] * a, v[29] * a), ptx.pack_f16x2(v[30] * a, v[31] * a))


@cuda.jit(device=True, forceinline=True)
def subtile_row_chunks(row_addr):
    """The addresses of the row's four 16-byte chunks in staging buffer 0 (``row_addr ^ 16 j``),
    computed once per thread: buffer b's chunk is then ``chunk + b * SUBTILE_BYTES``, an immediate
    offset of the store (b is a compile-time constant in the unrolled subtile loop)."""
    r = uint32(row_addr)
    return r, r ^ uint32(16), r ^ uint32(32), r ^ uint32(48)


@cuda.jit(device=True, forceinline=True)
def stage_subtile_row(chunks, buf, p):
    """The 16 fp16 pairs ``p`` of this thread's row into staging buffer ``buf`` (``chunks`` from
    subtile_row_chunks; ``buf`` a compile-time constant): four 16-byte stores, conflict-free under
    the swizzle."""
    offset = buf * SUBTILE_BYTES
    ptx.st_shared_v4(chunks[0] + offset, p[0], p[1], p[2], p[3])
    ptx.st_shared_v4(chunks[1] + offset, p[4], p[5], p[6], p[7])
    ptx.st_shared_v4(chunks[2] + offset, p[8], p[9], p[10], p[11])
    ptx.st_shared_v4(chunks[3] + offset, p[12], p[13], p[14], p[15])


@cuda.jit(device=True, forceinline=True)
def store_subtiles(tmap_d, col, row, addr, count, groups):
    """The storing thread, after the barrier that publishes a group of ``count`` staged subtiles:
    TMA-store them (consecutive buffers from shared address ``addr``) to D at column ``col``, row
    ``row``, commit them as one bulk group, then wait until all but the ``groups - 1`` most recent
    bulk groups have finished reading (``cp.async.bulk.wait_group.read groups - 1``, ``groups``
    being how many fit in the ring): the oldest group in the ring, the last reader of the buffers
    the warps fill next, is then done."""
    for i in range(count):
        ptx.tma_store_2d(tmap_d, uint32(col + i * SUBTILE_COLS), row, uint32(addr + i * SUBTILE_BYTES))
    ptx.bulk_commit_group()
    wait_group_read(groups - 1)


@cuda.jit(device=True, forceinline=True)
def wait_group_read(n):
    """``cp.async.bulk.wait_group.read n`` for a compile-time ``n`` in 0..3: wait until all but the
    ``n`` most recent committed bulk groups of this thread have finished reading shared memory."""
    if n == 0:
        ptx.bulk_wait_group_read0()
    elif n == 1:
        ptx.bulk_wait_group_read1()
    elif n == 2:
        ptx.bulk_wait_group_read2()
    else:
        ptx.bulk_wait_group_read3()


@cuda.jit(device=True, forceinline=True)
def arrive_ld2mma(ld2mma, cluster_arrive):
    """One arrival on the accumulator's "free" barrier at shared address ``ld2mma``: a relaxed
    cluster-scope arrive where ``cluster_arrive`` (steps 8-10: the leader CTA's barrier, mapped with
    mapa), an ordinary one (release semantics) otherwise (step 7)."""
    if cluster_arrive:
        ptx.mbarrier_arrive_relaxed_cluster(ld2mma)
    else:
        ptx.mbarrier_arrive(ld2mma)


# Inlined into the kernel by Numba (inline="always") before LLVM sees it: forceinline alone gives the
# same instructions but a different block layout, one instruction more per tile in step 7's loop.
@cuda.jit(device=True, inline="always", forceinline=True)
def subtiled_writeback(tmap_d, taddr, chunks, staging, row, d_col, d_row, ld2mma, cluster_arrive,
                       barrier_id, barrier_threads, subtiles, per_group, buffers, alpha=1.0, bf16=False):
    """One tile's writeback by a warpgroup (steps 7, 8 and 10), after its accumulator's wait: ``subtiles``
    subtiles of 32 columns, TMEM (from address ``taddr``, this warp's lane field included) ->
    registers (16 fp16 pairs) -> staging buffer ``sub % buffers`` of the ring at ``staging`` (this
    thread's row's chunks from subtile_row_chunks). Every ``per_group`` subtiles form a group: named
    barrier ``barrier_id`` (``barrier_threads`` threads) publishes it, the thread of ``row`` 0 stores
    it to D at (``d_row``, ``d_col`` + its column) as one bulk group, which goes on reading while
    the warps fill the rest of the ring, and a second barrier frees the buffers they fill next.
    Right after the last tcgen05.ld, one lane per warp arrives on ``ld2mma`` (the MMA warp may
    refill the accumulator): a relaxed cluster-scope arrive where ``cluster_arrive`` (steps 8-10,
    the address mapped to the leader CTA), an ordinary one otherwise. Every count is a compile-time
    constant at the call: after inlining the loop unrolls and each buffer's offset is an immediate.
    ``alpha`` multiplies the accumulator before the rounding (step 11's NVFP4 global scales);
    ``bf16`` (compile-time) rounds to bf16 instead of fp16 (step 11's BF16 D)."""
    for sub in range(subtiles):
        packed = tmem_load_subtile(taddr + sub * SUBTILE_COLS, alpha, bf16)  # tcgen05.wait::ld'ed
        if sub == subtiles - 1:  # every column read: the MMA warp may refill the accumulator
            ptx.tcgen05_fence_before()
            cuda.syncwarp()  # every lane's tcgen05.wait::ld is ordered before the elected lane's arrive
            if ptx.elect_sync():  # one arrival per warp: the whole warp's loads have completed
                arrive_ld2mma(ld2mma, cluster_arrive)
        buf = sub % buffers
        stage_subtile_row(chunks, buf, packed)  # st.shared.v4 x 4
        if buf % per_group == per_group - 1:  # a group of subtiles is staged
            first = sub + 1 - per_group  # the group's first subtile
            ptx.fence_proxy_async()  # the rows, before the TMA (async proxy) reads them
            ptx.named_barrier_sync(barrier_id, barrier_threads)  # the group is published
            if row == 0:  # the group's TMA stores, one bulk group; then wait_group.read: the buffers
                # the warps fill next have been read,
                store_subtiles(tmap_d, d_col + first * SUBTILE_COLS, d_row, staging + (first % buffers) * SUBTILE_BYTES,
                               per_group, buffers // per_group)
            ptx.named_barrier_sync(barrier_id, barrier_threads)  # ... which the other threads learn here
