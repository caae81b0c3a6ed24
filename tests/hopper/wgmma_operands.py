"""Which shared-memory bytes a Hopper ``wgmma`` reads through its matrix descriptors, recorded on an
H200 and replayed against the emulator's operand-address model (``emu.tensor_core.operand_addresses``,
the model the MMA explorer and every tcgen05.mma of the emulator use).

Hopper's wgmma and Blackwell's tcgen05.mma read shared memory through the same family of matrix
descriptors: start address, leading- and stride-dimension byte offsets (LBO, SBO), base offset and
a swizzle mode; the bit positions of the swizzle field differ (sm_90: bits 62-63, 1 = 128B, 2 = 64B,
3 = 32B; sm_100: bits 61-63, 2 = 128B, 4 = 64B, 6 = 32B, and bits 46-48 = 0b001). ``to_sm100``
converts one into the other, so the recording checks the part of the model the two chips share.

One case: one ``wgmma.mma_async.m64n16k16.f32.f16.f16`` (A 64 x 16 and B 16 x 16, both K-major, from
shared memory). The operand probed (A or B) is read from a region whose every fp16 holds a code of
its own position (``index & 1023`` in one run, ``index >> 10`` in a second: fp16 holds integers up
to 2048 exactly); the other operand is an identity in the no-swizzle layout, so the product copies
the probed operand's elements, as read, into D: ``D[r][n] = A_read[r][n]`` (probing A) or
``D[r][n] = B_read[n][r]`` for r < 16 (probing B). The swizzle modes none, 32B, 64B, 128B are
recorded with a few LBO and SBO values each.

    PYTHONPATH=. python3 tests/hopper/wgmma_operands.py --out tests/data/h200_wgmma_operands.json

needs an sm_90 GPU (H100/H200) with cuda-bindings (NVRTC and the driver API). ``--check-compile``
compiles the kernel for sm_90a with NVRTC only (no GPU), as CI does.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

THREADS = 128  # one warpgroup
M, N, K = 64, 16, 16
PROBE_BYTES = 24 * 1024  # the probed operand's region, offset 0 of dynamic shared memory
IDENT_OFF = PROBE_BYTES  # the identity operand's region
SMEM_BYTES = 2 * PROBE_BYTES
IDENT_LBO, IDENT_SBO = 128, 256  # no swizzle: 8 x 16-byte core matrices, two along K
SM90_SWIZZLE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
ROW_BYTES = {"32B": 32, "64B": 64, "128B": 128}

SOURCE = rb"""
extern "C" __global__ void __launch_bounds__(128) wgmma_probe(
    const unsigned short* __restrict__ image, int halves, unsigned long long desc_a_hi, unsigned a_off,
    unsigned long long desc_b_hi, unsigned b_off, float* __restrict__ out, unsigned* __restrict__ base_out)
{
    extern __shared__ __align__(1024) unsigned short smem[];
    for (int i = threadIdx.x; i < halves; i += 128) smem[i] = image[i];
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    if (threadIdx.x == 0) *base_out = base;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    // the start-address field (bits 0-13) holds the absolute shared address >> 4
    unsigned long long da = desc_a_hi | (unsigned long long)(((base + a_off) >> 4) & 0x3FFF);
    unsigned long long db = desc_b_hi | (unsigned long long)(((base + b_off) >> 4) & 0x3FFF);
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f, d4 = 0.f, d5 = 0.f, d6 = 0.f, d7 = 0.f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 0, 0;\n"
                 " wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3), "+f"(d4), "+f"(d5), "+f"(d6), "+f"(d7)
                 : "l"(da), "l"(db) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float* o = out + threadIdx.x * 8;
    o[0] = d0; o[1] = d1; o[2] = d2; o[3] = d3; o[4] = d4; o[5] = d5; o[6] = d6; o[7] = d7;
}
"""


def sm90_desc(lbo, sbo, swizzle):
    """The Hopper matrix descriptor without its start address (bits 0-13 are added on the GPU)."""
    for name, v in (("LBO", lbo), ("SBO", sbo)):
        if v % 16 or not 0 <= v >> 4 < 1 << 14:
            raise ValueError(f"{name} {v} must be a multiple of 16 below 256 KiB")
    return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SM90_SWIZZLE[swizzle] << 62)


def to_sm100(desc90):
    """The sm_100 descriptor with the same start, LBO, SBO and swizzle (bits 46-48 = 0b001)."""
    code90 = (desc90 >> 62) & 3
    code100 = {0: 0, 1: 2, 2: 4, 3: 6}[code90]
    low = desc90 & ((1 << 46) - 1)  # start, LBO, SBO
    return low | (1 << 46) | (((desc90 >> 49) & 7) << 49) | (code100 << 61)


def cases():
    """[(name, probed operand, swizzle, LBO, SBO)]: every swizzle mode, a few LBO/SBO each."""
    out = []
    for op in ("A", "B"):
        for lbo, sbo in ((128, 256), (256, 128), (512, 2048)):
            out.append((f"{op}-none-lbo{lbo}-sbo{sbo}", op, "none", lbo, sbo))
        for mode, row in ROW_BYTES.items():
            for lbo, sbo in ((16, 8 * row), (4096, 8 * row), (16, 16 * row)):
                out.append((f"{op}-{mode}-lbo{lbo}-sbo{sbo}", op, mode, lbo, sbo))
    return out


def probe_image(run):
    """The probed region: each fp16 codes its own halfword index (run 0: the low 10 bits, run 1:
    the rest)."""
    idx = np.arange(PROBE_BYTES // 2)
    return (idx & 1023 if run == 0 else idx >> 10).astype(np.float16)


def identity_image(op, base):
    """The other operand, an identity, in the no-swizzle K-major layout (IDENT_LBO, IDENT_SBO),
    placed by the model's own no-swizzle addressing at absolute shared address ``base``."""
    from gemm_kernels.emu.tensor_core import operand_addresses

    rows = N if op == "B" else M
    desc = to_sm100(sm90_desc(IDENT_LBO, IDENT_SBO, "none") | (((base + IDENT_OFF) >> 4) & 0x3FFF))
    addr, _ = operand_addresses(desc, rows, "identity")
    img = np.zeros(PROBE_BYTES // 2, dtype=np.float16)
    for r in range(min(rows, K)):
        img[(addr[r, r] - base - IDENT_OFF) // 2] = 1.0
    return img


def smem_image(op, base, run):
    return np.concatenate([probe_image(run), identity_image(op, base)])


def descriptors(case):
    """(desc_a_hi, a_off, desc_b_hi, b_off): the probed operand at offset 0, the identity at IDENT_OFF."""
    _, op, mode, lbo, sbo = case
    probed = sm90_desc(lbo, sbo, mode)
    ident = sm90_desc(IDENT_LBO, IDENT_SBO, "none")
    return (probed, 0, ident, IDENT_OFF) if op == "A" else (ident, IDENT_OFF, probed, 0)


def accumulator(regs):
    """D (64 x 16, fp32) from the warpgroup's registers (128 threads x 8): the m64nNk16 fragment,
    thread t = 32 w + l holds, for each 8-column block j, rows 16 w + l / 4 (+ 8) and columns
    8 j + 2 (l % 4) (+ 1)."""
    regs = np.asarray(regs, dtype=np.float32).reshape(THREADS, 8)
    d = np.full((M, N), np.nan, dtype=np.float32)
    for t in range(THREADS):
        w, lane = divmod(t, 32)
        for i in range(8):
            j, q = divmod(i, 4)
            row = 16 * w + lane // 4 + 8 * (q // 2)
            col = 8 * j + 2 * (lane % 4) + (q % 2)
            d[row, col] = regs[t, i]
    return d


def model_accumulator(case, base, run):
    """What the emulator's model says D is: both operands gathered by ``operand_addresses`` from
    the same shared-memory image, then multiplied."""
    from gemm_kernels.emu.tensor_core import operand_addresses

    img = smem_image(case[1], base, run)
    da, aoff, db, boff = descriptors(case)
    a_addr, _ = operand_addresses(to_sm100(da | (((base + aoff) >> 4) & 0x3FFF)), M, "A")
    b_addr, _ = operand_addresses(to_sm100(db | (((base + boff) >> 4) & 0x3FFF)), N, "B")
    a = img[(a_addr - base) // 2].astype(np.float32)
    b = img[(b_addr - base) // 2].astype(np.float32)
    return a @ b.T


def read_positions(case, d_lo, d_hi):
    """The halfword index in the probed region of each element the wgmma read: (rows, 16)."""
    codes = np.rint(d_lo).astype(np.int64) + 1024 * np.rint(d_hi).astype(np.int64)
    return codes if case[1] == "A" else codes[:K, :].T


def compile_cubin(arch="sm_90a"):
    sys.path.insert(0, HERE)
    from nvrtc_cubin import compile_cubin as nvrtc

    return nvrtc(SOURCE, b"wgmma_probe.cu", arch)


def record():
    """Run every case on the GPU here; return the JSON document."""
    from cuda.bindings import driver as cu

    sys.path.insert(0, ROOT)
    from tests.hopper.record import metadata

    def ok(res):
        err, *rest = res
        if int(err) != 0:
            raise RuntimeError(f"CUDA driver error {err}")
        return rest[0] if len(rest) == 1 else (rest or None)

    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    cubin = compile_cubin()
    module = ok(cu.cuModuleLoadData(cubin))
    fn = ok(cu.cuModuleGetFunction(module, b"wgmma_probe"))
    ok(cu.cuFuncSetAttribute(fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             SMEM_BYTES))

    def alloc(nbytes):
        return ok(cu.cuMemAlloc(nbytes))

    d_img, d_out, d_base = alloc(SMEM_BYTES), alloc(THREADS * 8 * 4), alloc(4)
    out = []
    for case in cases():
        entry = {"name": case[0], "operand": case[1], "swizzle": case[2], "lbo": case[3], "sbo": case[4]}
        da, aoff, db, boff = descriptors(case)
        entry.update(desc_a_hi=f"0x{da:016x}", a_off=aoff, desc_b_hi=f"0x{db:016x}", b_off=boff)
        for run in (0, 1):
            # the images do not depend on the base (the identity is in the no-swizzle layout)
            img = smem_image(case[1], 0, run)
            ok(cu.cuMemcpyHtoD(d_img, img.ctypes.data, img.nbytes))
            args = [np.array([int(d_img)], dtype=np.uint64), np.array([img.size], dtype=np.int32),
                    np.array([da], dtype=np.uint64), np.array([aoff], dtype=np.uint32),
                    np.array([db], dtype=np.uint64), np.array([boff], dtype=np.uint32),
                    np.array([int(d_out)], dtype=np.uint64), np.array([int(d_base)], dtype=np.uint64)]
            ptrs = np.array([a.ctypes.data for a in args], dtype=np.uint64)
            ok(cu.cuLaunchKernel(fn, 1, 1, 1, THREADS, 1, 1, SMEM_BYTES, 0, ptrs.ctypes.data, 0))
            ok(cu.cuCtxSynchronize())
            regs = np.zeros(THREADS * 8, dtype=np.float32)
            got_base = np.zeros(1, dtype=np.uint32)
            ok(cu.cuMemcpyDtoH(regs.ctypes.data, d_out, regs.nbytes))
            ok(cu.cuMemcpyDtoH(got_base.ctypes.data, d_base, 4))
            entry[f"regs_run{run}"] = [float(x) for x in regs]
            entry["smem_base"] = int(got_base[0])
        out.append(entry)
    return {"what": "wgmma m64n16k16 f16 operand reads per descriptor (tests/hopper/wgmma_operands.py)",
            "metadata": metadata(), "cases": out}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="write the recording here (needs an sm_90 GPU)")
    p.add_argument("--check-compile", action="store_true", help="only compile the kernel for sm_90a (NVRTC)")
    args = p.parse_args(argv)
    if args.check_compile:
        print(f"wgmma_probe: {len(compile_cubin())} bytes of sm_90a cubin")
        return 0
    if not args.out:
        p.error("--out or --check-compile")
    doc = record()
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{len(doc['cases'])} cases -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
