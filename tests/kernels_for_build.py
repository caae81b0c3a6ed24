"""Tiny kernels with inline PTX for tests/test_build.py and tests/test_launch_hopper.py.

Written here (not taken from gemm_kernels.ptx) so the build and launch tests depend on nothing but
the runtime they test.
"""
from llvmlite import ir
from numba import cuda, types
from numba.cuda.extending import intrinsic

_i32 = ir.IntType(32)


def _asm(builder, ret, argtys, text, constraints, args):
    fty = ir.FunctionType(ret, argtys)
    return builder.call(ir.InlineAsm(fty, text, constraints, side_effect=True), args)


@intrinsic
def smem_addr(typingctx, arr):
    """32-bit shared-memory address of a shared array's first element."""
    if not isinstance(arr, types.Array):
        return None
    sig = types.uint32(arr)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.addrspacecast(ary.data, ir.PointerType(ary.data.type.pointee, 3))
        return builder.trunc(builder.ptrtoint(ptr, ir.IntType(64)), _i32)

    return sig, codegen


@intrinsic
def mbarrier_init(typingctx, bar, count):
    """mbarrier.init.shared::cta.b64 [bar], count;"""
    sig = types.void(bar, count)

    def codegen(context, builder, sig, args):
        a = context.cast(builder, args[0], sig.args[0], types.uint32)
        c = context.cast(builder, args[1], sig.args[1], types.uint32)
        _asm(builder, ir.VoidType(), [_i32, _i32], "mbarrier.init.shared::cta.b64 [$0], $1;",
             "r,r,~{memory}", [a, c])

    return sig, codegen


def _sreg(name):
    @intrinsic
    def read(typingctx):
        sig = types.uint32()

        def codegen(context, builder, sig, args):
            return _asm(builder, _i32, [], f"mov.u32 $0, %{name};", "=r", [])

        return sig, codegen

    read.__name__ = name
    return read


cluster_ctarank = _sreg("cluster_ctarank")
cluster_nctarank = _sreg("cluster_nctarank")
nctaid_x = _sreg("nctaid.x")


def mbar_kernel(out, count):
    """Initialise one mbarrier in static shared memory; thread 0 writes its shared address."""
    bar = cuda.shared.array(1, types.uint64)
    if cuda.threadIdx.x == 0:
        mbarrier_init(smem_addr(bar), types.uint32(count))
        out[0] = smem_addr(bar)
    cuda.syncthreads()


MBAR_SIG = "void(uint32[::1], int32)"


@cuda.jit
def cluster_probe(out, smem_bytes):
    """Per block: %cluster_ctarank, %nctaid.x, %cluster_nctarank, and a byte written to and read back
    from the far end of the dynamic shared memory (proves the whole allocation is there)."""
    dyn = cuda.shared.array(0, types.uint8)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    if t == 0:
        dyn[smem_bytes - 1] = types.uint8(b % 251)
        dyn[0] = types.uint8(7)
    cuda.syncthreads()
    if t == 0:
        out[b, 0] = cluster_ctarank()
        out[b, 1] = nctaid_x()
        out[b, 2] = cluster_nctarank()
        out[b, 3] = dyn[smem_bytes - 1] + dyn[0] * 1000


CLUSTER_PROBE_SIG = "void(uint32[:, ::1], int32)"
