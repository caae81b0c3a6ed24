"""FP8 numerics of Hopper's tensor core, recorded on an H200 and replayed against the emulator's decode
and accumulation of step 11's FP8 MMAs (``gemm_kernels.emu.tensor_core_lowp``).

Blackwell's kind::f8f6f4 reads the same OCP FP8 formats (E4M3, E5M2) as Hopper's
``wgmma.mma_async ... .f32.e4m3/.e5m2``; what the two chips share is the decoding of every code and
the rule that one MMA's K products go into an FP32 accumulator. How wide and in which order the
tensor core sums inside one instruction is not in the PTX ISA; this recording measures it on Hopper.

Each case runs ``nk`` chained ``wgmma.mma_async.sync.aligned.m64n16k32.f32.<A>.<B>`` (A 64 x 32 and B
16 x 32 bytes per step, K-major, no swizzle: 8-row x 16-byte core matrices, LBO 128 B along K, SBO
256 B between 8-row groups), the first overwriting D, into the 64 x 16 FP32 accumulator, for the
type pairs e4m3.e4m3, e5m2.e5m2 and e4m3.e5m2. The operands are raw codes (stored in the recording):

* ``decode-lo``/``decode-hi``: A cycles through every finite code, B is one-hot (B[n, n] = 1 or
  B[n, n + 16] = 1): D copies 32 columns of A as the chip decodes them (subnormals, the largest values);
* ``random``: uniformly random finite codes in A and B (products over the formats' whole range);
* ``largest``: A and B hold only the largest finite magnitude, random signs;
* ``special``: NaN in A (row 3) and in B (column 0); for E5M2 also +inf and inf - inf;
* ``threshold``: D[r, n] = L + (n + 1) * v_r in one instruction, with L = max^2 (one large product)
  and v_r from 2**-9 to 2**8, both signs: where small addends stop counting shows the width of the
  sum inside one wgmma; ``threshold-2step``: L in the first wgmma, the small terms in the second
  (the FP32 accumulator's own addition);
* ``long``: 32 steps (K = 1024) of random mid-range codes; ``long-cancel``: 32 steps whose second half
  repeats the first with A negated, plus one small product per row in the last step (exact sum: that
  small product).

    PYTHONPATH=. python3 tests/hopper/wgmma_fp8.py --out tests/data/h200_wgmma_fp8.json

needs an sm_90 GPU with cuda-bindings (NVRTC and the driver API) and numpy; ``--check-compile``
compiles the kernels for sm_90a with NVRTC only (no GPU), as CI does. Recording and replay import
nothing of the package but ``tests.hopper.record.metadata`` at record time.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

THREADS = 128
M, N, KB = 64, 16, 32       # one wgmma: 64 x 16 x 32 (bytes of K)
A_STEP, B_STEP = M * KB, N * KB
LBO, SBO = 128, 256          # no swizzle: core matrices of 8 rows x 16 bytes
TYPES = {"e4m3": {"max": 0x7E, "one": 0x38}, "e5m2": {"max": 0x7B, "one": 0x3C}}
PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")]
MAX_STEPS = 32

SOURCE_TEMPLATE = r"""
extern "C" __global__ void __launch_bounds__(128) wgmma_fp8_TAG(
    const unsigned char* __restrict__ image, int bytes, int nk, unsigned long long desc_hi, float* __restrict__ out)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    for (int i = threadIdx.x * 16; i < bytes; i += 128 * 16)
        *reinterpret_cast<uint4*>(smem + i) = *reinterpret_cast<const uint4*>(image + i);
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f, d4 = 0.f, d5 = 0.f, d6 = 0.f, d7 = 0.f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < nk; ++s) {
        unsigned long long da = desc_hi | (unsigned long long)(((base + s * ASTEP) >> 4) & 0x3FFF);
        unsigned long long db = desc_hi | (unsigned long long)(((base + nk * ASTEP + s * BSTEP) >> 4) & 0x3FFF);
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
                     " wgmma.mma_async.sync.aligned.m64n16k32.f32.TYPEA.TYPEB "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}\n"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3), "+f"(d4), "+f"(d5), "+f"(d6), "+f"(d7)
                     : "l"(da), "l"(db), "r"(s) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float* o = out + threadIdx.x * 8;
    o[0] = d0; o[1] = d1; o[2] = d2; o[3] = d3; o[4] = d4; o[5] = d5; o[6] = d6; o[7] = d7;
}
"""


def kernel_name(ta, tb):
    return f"wgmma_fp8_{ta}_{tb}"


def source(ta, tb):
    return (SOURCE_TEMPLATE.replace("TAG", f"{ta}_{tb}").replace("TYPEA", ta).replace("TYPEB", tb)
            .replace("ASTEP", str(A_STEP)).replace("BSTEP", str(B_STEP))).encode()


def desc_hi():
    """The sm_90 descriptor without its start address: LBO, SBO, no swizzle."""
    return ((LBO >> 4) << 16) | ((SBO >> 4) << 32)


def finite(codes, fmt):
    """Which codes are finite: E4M3 has NaN at S.1111.111 only, E5M2 inf/NaN at exponent 11111."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes & 0x7F) != 0x7F if fmt == "e4m3" else (codes & 0x7C) != 0x7C


def offsets(rows):
    """Byte offset of (row, k) of one step's operand in the no-swizzle K-major layout."""
    r = np.arange(rows)[:, None]
    k = np.arange(KB)[None, :]
    return (r // 8) * SBO + (k // 16) * LBO + (r % 8) * 16 + k % 16


def smem_image(a_codes, b_codes):
    """(nk * 64, 32) A and (nk * 16, 32) B codes, step s in rows [64 s, 64 s + 64) / [16 s, ...): the
    shared-memory image, A's steps first, then B's."""
    nk = a_codes.shape[0] // M
    img = np.zeros(nk * (A_STEP + B_STEP), dtype=np.uint8)
    oa, ob = offsets(M), offsets(N)
    for s in range(nk):
        img[s * A_STEP + oa] = a_codes[M * s:M * (s + 1)]
        img[nk * A_STEP + s * B_STEP + ob] = b_codes[N * s:N * (s + 1)]
    return img


def _random_finite(rng, fmt, shape, lo_exp=None, hi_exp=None):
    """Random finite codes (optionally only with biased exponent in [lo_exp, hi_exp])."""
    mant = 3 if fmt == "e4m3" else 2
    out = rng.integers(0, 256, size=shape, dtype=np.uint8)
    while True:
        bad = ~finite(out, fmt)
        if lo_exp is not None:
            e = (out >> mant) & (0xF if fmt == "e4m3" else 0x1F)
            bad |= (e < lo_exp) | (e > hi_exp)
        if not bad.any():
            return out
        out[bad] = rng.integers(0, 256, size=int(bad.sum()), dtype=np.uint8)


def cases():
    """[(name, A type, B type, A codes (nk*64, 32), B codes (nk*16, 32))], deterministic."""
    out = []
    for ta, tb in PAIRS:
        rng = np.random.default_rng(sum(map(ord, ta + tb)))
        one_b, max_a, max_b = TYPES[tb]["one"], TYPES[ta]["max"], TYPES[tb]["max"]
        cyc = np.arange(M * KB, dtype=np.int64).reshape(M, KB) * 7 % 256  # every code, 8 times
        a = cyc.astype(np.uint8)
        a[~finite(a, ta)] = 0
        for half in (0, 1):
            b = np.zeros((N, KB), dtype=np.uint8)
            b[np.arange(N), np.arange(N) + 16 * half] = one_b
            out.append((f"decode-{'lo' if half == 0 else 'hi'}", ta, tb, a, b))
        out.append(("random", ta, tb, _random_finite(rng, ta, (M, KB)), _random_finite(rng, tb, (N, KB))))
        sa = rng.integers(0, 2, (M, KB), dtype=np.uint8) << 7
        sb = rng.integers(0, 2, (N, KB), dtype=np.uint8) << 7
        out.append(("largest", ta, tb, (sa | max_a).astype(np.uint8), (sb | max_b).astype(np.uint8)))
        a = _random_finite(rng, ta, (M, KB), 5, 9)
        b = _random_finite(rng, tb, (N, KB), 10, 16)
        a[3, 5] = 0x7F                      # NaN in A: row 3 NaN
        b[0, 7] = 0x7F                      # NaN in B: column 0 NaN
        if tb == "e5m2":
            b[1, :] = 0
            b[1, 2] = 0x7C                  # +inf: column 1 is +-inf (or NaN where A is 0)
            b[2, :] = 0
            b[2, 2], b[2, 3] = 0x7C, 0xFC   # +inf and -inf: column 2 is NaN where both A terms are non-zero
        out.append(("special", ta, tb, a, b))
        out.append(_threshold(ta, tb, 1))
        out.append(_threshold(ta, tb, 2))
        a = _random_finite(rng, ta, (MAX_STEPS * M, KB), 4, 10 if ta == "e4m3" else 18)
        b = _random_finite(rng, tb, (MAX_STEPS * N, KB), 4, 10 if tb == "e4m3" else 18)
        out.append(("long", ta, tb, a, b))
        half = MAX_STEPS // 2
        a2 = a.copy()
        a2[half * M:] = a2[:half * M] ^ 0x80         # the second half: A negated, same B
        b2 = b.copy()
        b2[half * N:] = b2[:half * N]
        last_a = a2[(MAX_STEPS - 1) * M:]
        last_b = b2[(MAX_STEPS - 1) * N:]
        last_a[:, 31] = TYPES[ta]["one"]              # one small product per row, in the last step:
        last_b[:, 31] = TYPES[tb]["one"]              # 1 x 1, but the first half's k = 31 changed too
        first_a = a2[(half - 1) * M:half * M]
        first_b = b2[(half - 1) * N:half * N]
        first_a[:, 31] = 0
        first_b[:, 31] = 0
        out.append(("long-cancel", ta, tb, a2, b2))
    return out


def _threshold(ta, tb, steps):
    """D[r, n] = max_a * max_b + (n + 1) * v_r: the large product at k = 0, v_r = A[r, k] x 1 for
    k = 1 .. n + 1; in one wgmma (steps = 1) or the large product alone in the first (steps = 2)."""
    mant = 3 if ta == "e4m3" else 2
    bias = 7 if ta == "e4m3" else 15
    a = np.zeros((M, KB), dtype=np.uint8)
    b = np.zeros((N, KB), dtype=np.uint8)
    for r in range(M):
        e = -9 + (r % 32) * 17 / 31.0      # v_r from 2**-9 to 2**8, rows 32.. negative
        be = int(round(e)) + bias
        code = (be << mant) if be >= 1 else (1 << (mant + be - 1)) if be > 1 - mant else 1
        a[r, 1:] = code | (0x80 if r >= 32 else 0)
    for n in range(N):
        b[n, 1:n + 2] = TYPES[tb]["one"]
    big_a, big_b = np.zeros_like(a), np.zeros_like(b)
    big_a[:, 0], big_b[:, 0] = TYPES[ta]["max"], TYPES[tb]["max"]
    if steps == 1:
        a[:, 0], b[:, 0] = TYPES[ta]["max"], TYPES[tb]["max"]
        return ("threshold", ta, tb, a, b)
    return ("threshold-2step", ta, tb, np.concatenate([big_a, a]), np.concatenate([big_b, b]))


def accumulator(regs):
    """D (64 x 16) from the warpgroup's registers (the m64nNk* fragment; tests/hopper/wgmma_operands.py)."""
    sys.path.insert(0, HERE)
    from wgmma_operands import accumulator as acc

    return acc(regs)


def encode(codes):
    return base64.b64encode(np.ascontiguousarray(codes, dtype=np.uint8).tobytes()).decode()


def decode_codes(text, rows):
    return np.frombuffer(base64.b64decode(text), dtype=np.uint8).reshape(rows, KB)


def compile_cubin(ta, tb, arch="sm_90a"):
    sys.path.insert(0, HERE)
    from nvrtc_cubin import compile_cubin as nvrtc

    return nvrtc(source(ta, tb), f"{kernel_name(ta, tb)}.cu".encode(), arch)


def record():
    from cuda.bindings import driver as cu

    def ok(res):
        err, *rest = res
        if int(err) != 0:
            raise RuntimeError(f"CUDA driver error {err}")
        return rest[0] if len(rest) == 1 else (rest or None)

    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    fns = {}
    smem_max = MAX_STEPS * (A_STEP + B_STEP)
    for ta, tb in PAIRS:
        module = ok(cu.cuModuleLoadData(compile_cubin(ta, tb)))
        fn = ok(cu.cuModuleGetFunction(module, kernel_name(ta, tb).encode()))
        ok(cu.cuFuncSetAttribute(fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 smem_max))
        fns[(ta, tb)] = fn
    d_img, d_out = ok(cu.cuMemAlloc(smem_max)), ok(cu.cuMemAlloc(THREADS * 8 * 4))
    entries = []
    for name, ta, tb, a, b in cases():
        nk = a.shape[0] // M
        img = smem_image(a, b)
        ok(cu.cuMemcpyHtoD(d_img, img.ctypes.data, img.nbytes))
        args = [np.array([int(d_img)], dtype=np.uint64), np.array([img.size], dtype=np.int32),
                np.array([nk], dtype=np.int32), np.array([desc_hi()], dtype=np.uint64),
                np.array([int(d_out)], dtype=np.uint64)]
        ptrs = np.array([x.ctypes.data for x in args], dtype=np.uint64)
        ok(cu.cuLaunchKernel(fns[(ta, tb)], 1, 1, 1, THREADS, 1, 1, img.size, 0, ptrs.ctypes.data, 0))
        ok(cu.cuCtxSynchronize())
        regs = np.zeros(THREADS * 8, dtype=np.float32)
        ok(cu.cuMemcpyDtoH(regs.ctypes.data, d_out, regs.nbytes))
        entries.append({"name": name, "a_type": ta, "b_type": tb, "steps": nk, "a": encode(a), "b": encode(b),
                        "regs_hex": regs.view(np.uint32).tolist()})
    return entries


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="write the recording here (needs an sm_90 GPU)")
    p.add_argument("--check-compile", action="store_true", help="only compile the kernels for sm_90a (NVRTC)")
    args = p.parse_args(argv)
    if args.check_compile:
        for ta, tb in PAIRS:
            print(f"{kernel_name(ta, tb)}: {len(compile_cubin(ta, tb))} bytes of sm_90a cubin")
        return 0
    if not args.out:
        p.error("--out or --check-compile")
    entries = record()
    meta = None
    try:
        sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
        from tests.hopper.record import metadata

        meta = metadata()
    except Exception as e:  # noqa: BLE001 - the recording stands without it
        meta = {"error": f"metadata unavailable: {e}"}
    doc = {"what": "FP8 wgmma m64n16k32 numerics (tests/hopper/wgmma_fp8.py)", "metadata": meta, "cases": entries}
    with open(args.out, "w") as f:
        json.dump(doc, f)
    print(f"{len(entries)} cases -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
