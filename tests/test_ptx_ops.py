"""Every PTX operation of ``gemm_kernels.ptx``, built alone into a tiny sm_100a kernel
(tests/op_kernels.py): the SASS it becomes, no local memory, no spills; its docstring and emulator
twin; which ops also build for sm_90a (the H200 ground truth) and which ptxas refuses there; and the
rule that one kernel cannot mix cta_group::1 and cta_group::2.

The table below is what ptxas (nvJitLink 13.x) produced, read from nvdisasm; nothing here ran on a
GPU. "Delta" means the opcodes the op's kernel has beyond its baseline kernel (the same scaffolding
without the op), so an opcode is only credited to the op that brought it.
"""
import contextlib
import os
import re
import sys

import pytest

from gemm_kernels.runtime import ensure_numpy_compat

ensure_numpy_compat()

from numba import cuda  # noqa: E402

from gemm_kernels import ptx  # noqa: E402
from gemm_kernels.runtime import offline  # noqa: E402
from gemm_kernels.runtime.build import build, find_nvdisasm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests import op_kernels as ok  # noqa: E402

needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm not installed")

OPS = sorted(ptx.REGISTRY)
CUSTOM_OPS = {"shared_addr", "set_warp_role"}  # hand-written intrinsics, no single asm statement

# op -> (SASS opcode the op adds, as a full opcode or a dotted prefix (a tuple: any of them),
#        text that a SASS line with that opcode contains, or None); a list of such pairs: all of them.
# None instead of a pair: the op emits no instruction of its own (the kernel's SASS equals its
# baseline's): an ordering constraint for ptxas, or nothing at all (set_warp_role).
SASS_SM100 = {
    # addresses and special registers
    "shared_addr": (("S2R", "S2UR"), "SR_CgaCtaId"),   # + LEA ..., 0x18: the CTA's rank sits at bit 24
    "cluster_ctarank": (("S2R", "S2UR"), "SR_CgaCtaId"),
    "cluster_nctarank": ("CS2R.32", "SR_CgaSize"),      # then an indexed LDC from the constant bank
    "globaltimer": ("CS2R", "SR_GLOBALTIMERLO"),        # 64-bit read of the LO/HI pair
    "mapa": ("PRMT", "0x654"),                          # a byte permute: the rank into bits 24-31
    # fences
    "fence_proxy_async": ("FENCE.VIEW.ASYNC.S", None),  # after a MEMBAR.ALL.CTA
    "fence_proxy_tensormap_acquire": ("UTMACCTL.IV", None),  # + CCTL.E.C.LDCU.IV.DEEP, UTMACMDFLUSH
    "tcgen05_fence_before": None,
    "tcgen05_fence_after": None,
    # mbarrier
    "mbarrier_init": ("SYNCS.EXCH.64", None),
    "fence_mbarrier_init": None,
    "mbarrier_arrive": ("SYNCS.ARRIVE.TRANS64.A1T0", None),
    "mbarrier_arrive_expect_tx": ("SYNCS.ARRIVE.TRANS64", None),
    "mbarrier_expect_tx": ("SYNCS.ARRIVE.TRANS64.RED.A0TR", None),   # an "arrive" of 0 with tx
    "mbarrier_arrive_cluster": ("SYNCS.ARRIVE.TRANS64.RED.A1T0", None),  # after MEMBAR.ALL.GPU, CGAERRBAR
    "mbarrier_arrive_relaxed_cluster": ("SYNCS.ARRIVE.TRANS64.RED.A1T0", None),  # alone: no MEMBAR, no ERRBAR
    "mbarrier_arrive_expect_tx_cluster": ("SYNCS.ARRIVE.TRANS64.RED", None),  # relaxed: no MEMBAR, no ERRBAR
    "mbarrier_arrive_remote": ("SYNCS.ARRIVE.TRANS64.RED.A1T0", None),  # release.cta: no MEMBAR either
    "mbarrier_wait": ("SYNCS.PHASECHK.TRANS64.TRYWAIT", None),
    "mbarrier_wait_sleep": [("SYNCS.PHASECHK.TRANS64.TRYWAIT", None), ("NANOSLEEP.SYNCS", None)],  # the hint
    "mbarrier_wait_cluster": ("SYNCS.PHASECHK.TRANS64.TRYWAIT", None),  # + CCTL.IVALL (acquire.cluster)
    "mbarrier_wait_relaxed_cluster": ("SYNCS.PHASECHK.TRANS64.TRYWAIT", None),  # no CCTL.IVALL: as the CTA form
    "mbarrier_wait_sleep_relaxed_cluster": [("SYNCS.PHASECHK.TRANS64.TRYWAIT", None), ("NANOSLEEP.SYNCS", None)],
    "mbarrier_try_wait": ("SYNCS.PHASECHK.TRANS64.TRYWAIT", None),
    "mbarrier_inval": ("SYNCS.CCTL.IV", None),
    # tcgen05: TMEM allocation (software around one atomic on the allocator, plus guardrail traps)
    "tmem_alloc": ("UTCATOMSWS.FIND_AND_SET.ALIGN", None),
    "tmem_dealloc": ("UTCATOMSWS.AND", None),
    "tmem_relinquish": ("UVIRTCOUNT.DEALLOC.SMPOOL", None),
    "tmem_alloc_cg2": ("UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN", None),
    "tmem_dealloc_cg2": ("UTCATOMSWS.AND", None),       # the same SASS as cta_group::1
    "tmem_relinquish_cg2": ("UVIRTCOUNT.DEALLOC.SMPOOL", None),  # the same SASS as cta_group::1
    # tcgen05: MMA, commit, loads
    "tcgen05_mma": ("UTCHMMA", None),
    "tcgen05_mma_cg2": ("UTCHMMA.2CTA", None),
    "tcgen05_mma_lo": ("UTCHMMA", None),                 # mov.b64 {lo, hi} is register naming: no instruction
    "tcgen05_mma_cg2_lo": ("UTCHMMA.2CTA", None),
    "tcgen05_commit": ("UTCBAR", None),
    "tcgen05_commit_cg2_multicast": ("UTCBAR.2CTA.MULTICAST", None),
    "tmem_ld_32x32b_x8": ("LDTM.x8", None),
    "tmem_ld_32x32b_x16": ("LDTM.x16", None),
    "tmem_ld_32x32b_x32": ("LDTM.x32", None),
    "tmem_ld_32x32b_x64": ("LDTM.x64", None),
    "tmem_wait_ld": None,                                # a scoreboard wait, no instruction
    # tcgen05, step 11: FP8 ("Q") and FP4 ("O") MMAs; block-scaled ones take a third TMEM operand
    # (the scale factors); the scale-factor copy
    "tcgen05_mma_f8f6f4": ("UTCQMMA", None),
    "tcgen05_mma_f8f6f4_cg2": ("UTCQMMA.2CTA", None),
    "tcgen05_mma_mxf8f6f4": ("UTCQMMA", None),
    "tcgen05_mma_mxf8f6f4_cg2": ("UTCQMMA.2CTA", None),
    "tcgen05_mma_mxf4nvf4": ("UTCOMMA.4X", None),        # .4X: four scale factors per row per MMA
    "tcgen05_mma_mxf4nvf4_cg2": ("UTCOMMA.2CTA.4X", None),
    "tcgen05_cp_32x128b_warpx4": ("UTCCP.T.S.4x32dp128bit", None),
    "tcgen05_cp_32x128b_warpx4_cg2": ("UTCCP.T.S.2CTA.4x32dp128bit", None),
    # TMA
    "tma_load_2d": ("UTMALDG.2D", None),
    "tma_load_2d_cg2": ("UTMALDG.2D.2CTA", None),
    "tma_store_2d": ("UTMASTG.2D", None),
    "bulk_commit_group": ("UTMACMDFLUSH", None),
    "bulk_wait_group_read0": ("DEPBAR.LE", None),
    "bulk_wait_group_read1": ("DEPBAR.LE", None),
    "bulk_wait_group_read2": ("DEPBAR.LE", "0x2"),
    "bulk_wait_group_read3": ("DEPBAR.LE", "0x3"),
    "prefetch_tensormap": ("UTMACCTL.PF", None),
    # cluster launch control
    "clc_try_cancel_multicast": ("UGETNEXTWORKID.BROADCAST", None),
    "clc_query_cancel": ("LDS.128", None),             # the response, read in one; decoding is LOP3/SEL
    # warps, CTAs, clusters
    "elect_sync": ("ELECT", None),
    "warp_uniform": ("SHFL.IDX", None),
    "named_barrier_sync": ("BAR.SYNC", None),            # BAR.SYNC.DEFER_BLOCKING
    "named_barrier_arrive": ("BAR.ARV", None),
    "cluster_arrive": ("UCGABAR_ARV", None),             # after MEMBAR.ALL.GPU (release)
    "cluster_wait": ("UCGABAR_WAIT", None),              # + CCTL.IVALL (acquire)
    "pack_f16x2": ("F2FP.F16.F32.PACK_AB", None),
    "pack_bf16x2": ("F2FP.BF16.F32.PACK_AB", None),
    # shared memory
    "st_shared_v4": ("STS.128", None),
    "set_warp_role": None,
    # probes (instrumented builds only): several requirements each
    "timeline_stamp": [("CS2R", "SR_GLOBALTIMERLO"), ("ATOMG.E.ADD", None)],  # a warp-aggregated atomic
    "guard_wait": [("SYNCS.PHASECHK.TRANS64.TRYWAIT", None), ("CS2R", "SR_GLOBALTIMERLO"),
                   ("MEMBAR.SC.SYS", None), ("BPT.TRAP", None)],
    "guard_wait_cluster": [("SYNCS.PHASECHK.TRANS64.TRYWAIT", None), ("CCTL.IVALL", None),
                           ("CS2R", "SR_GLOBALTIMERLO"), ("MEMBAR.SC.SYS", None), ("BPT.TRAP", None)],
    "guard_note_base": [("VOTEU.ANY", None), ("STG.E", None)],   # activemask, then one lane stores
}

#: ops that exist on Hopper too (everything but tcgen05/TMEM and the CTA-pair TMA); they must
#: build for sm_90a, the H200's target
HOPPER_OPS = [op for op in OPS if not op.startswith(("tcgen05", "tmem_", "clc_")) and op != "tma_load_2d_cg2"]
BLACKWELL_ONLY_OPS = [op for op in OPS if op not in HOPPER_OPS]

# sm_90a differs from SASS_SM100 only here: %cluster_nctarank is a constant-bank load
SASS_SM90 = {op: SASS_SM100[op] for op in HOPPER_OPS if op in SASS_SM100}
SASS_SM90["cluster_nctarank"] = ("LDC", "c[0x0][0x188]")

CG2_OPS = {op for op in OPS if "cg2" in op}


# ------------------------------------------------------------------------------------------------
# builds, each once per session
# ------------------------------------------------------------------------------------------------
_BUILDS = {}


def _build(kernel, arch="sm_100a"):
    """Build ``kernel`` (an op_kernels kernel) once per session; a failure is remembered too."""
    key = (kernel, arch)
    if key not in _BUILDS:
        try:
            _BUILDS[key] = build(kernel, ok.SIG, arch=arch)
        except Exception as e:  # noqa: BLE001 - ptxas errors come as nvJitLinkError
            _BUILDS[key] = e
    res = _BUILDS[key]
    if isinstance(res, Exception):
        raise res
    return res


def _op_build(op, arch="sm_100a"):
    if op not in ok.OP_KERNELS:
        pytest.fail(f"no kernel for {op}: add k_{op} to tests/op_kernels.py")
    return _build(ok.OP_KERNELS[op], arch)


def _baseline(op, arch="sm_100a"):
    return _build(ok.k_no_smem if op == "shared_addr" else ok.k_baseline, arch)


def _delta(op, arch="sm_100a"):
    """Opcodes (with counts) that ``op``'s kernel has beyond its baseline, NOP padding left out."""
    mine, base = _op_build(op, arch).opcodes, _baseline(op, arch).opcodes
    return {k: v - base.get(k, 0) for k, v in mine.items() if v > base.get(k, 0) and k != "NOP"}


def _matches(opcode, prefix):
    return opcode == prefix or opcode.startswith(prefix + ".")


def _mnemonic(op):
    """The PTX instruction an asm op executes: the first statement that is not scaffolding."""
    for stmt in re.split(r"[;\n]", op.ptx):
        stmt = stmt.strip().strip("{}").strip()
        if not stmt or stmt.startswith((".reg", "setp", "selp", "@")) or stmt.endswith(":"):
            continue
        return stmt.split()[0]
    raise AssertionError(f"no instruction in {op.ptx!r}")


def _check_sass(op, arch, table):
    b = _op_build(op, arch)
    delta = _delta(op, arch)
    if op not in table:
        pytest.fail(f"no SASS entry for {op}: build it, read the SASS, add it to SASS_SM100")
    want = table[op]
    if want is None:
        assert delta == {}, f"{op} ({arch}) was expected to emit no instruction of its own; it adds {delta}"
        return
    for prefixes, text in (want if isinstance(want, list) else [want]):
        prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
        hits = [k for k in delta if any(_matches(k, p) for p in prefixes)]
        assert hits, f"{op} ({arch}): expected {prefixes} among the opcodes it adds, got {delta}"
        if text is not None:
            lines = [ln for ln in b.sass.splitlines()
                     if any(re.search(rf"\s{re.escape(h)}\s", ln) for h in hits)]
            assert any(text in ln for ln in lines), \
                f"{op} ({arch}): no {hits} line mentions {text!r}:\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# the tables cover the registry
# ------------------------------------------------------------------------------------------------
def test_every_op_has_a_kernel_and_a_sass_entry():
    assert set(ptx.REGISTRY) - set(ok.OP_KERNELS) == set(), "add a k_<op> kernel to tests/op_kernels.py"
    assert set(ptx.REGISTRY) - set(SASS_SM100) == set(), "add the op's observed SASS to SASS_SM100"


# ------------------------------------------------------------------------------------------------
# sm_100a: SASS, resources
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
def test_kernel_uses_its_op(op):
    b = _op_build(op)
    assert ".target sm_100a" in b.ptx
    if op not in CUSTOM_OPS:
        assert _mnemonic(ptx.REGISTRY[op]) in b.ptx


@needs_nvdisasm
@pytest.mark.parametrize("op", OPS)
def test_sass_sm100a(op):
    _check_sass(op, "sm_100a", SASS_SM100)


@pytest.mark.parametrize("op", OPS)
def test_no_local_memory_no_spills(op):
    b = _op_build(op)
    assert b.local_bytes == 0, f"{op}: {b.local_bytes} bytes of local memory"
    assert b.spills == 0, f"{op}: {b.spill_stores} + {b.spill_loads} bytes spilled"


@needs_nvdisasm
@pytest.mark.parametrize("op", OPS)
def test_cta_group_shows_in_sass(op):
    """cta_group::2 alloc, MMA, commit and TMA load carry .2CTA; dealloc and relinquish look the
    same for both groups; no cta_group::1 kernel has any .2CTA opcode."""
    twocta = [k for k in _op_build(op).opcodes if ".2CTA" in k]
    if op in CG2_OPS and op not in ("tmem_dealloc_cg2", "tmem_relinquish_cg2"):
        assert twocta, f"{op}: no .2CTA opcode"
    elif op in CG2_OPS:
        base = op[:-len("_cg2")]
        assert _op_build(op).opcodes == _op_build(base).opcodes
    else:
        assert not twocta, f"{op}: {twocta}"


@needs_nvdisasm
@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_relaxed_cluster_arrive_has_no_fence(arch):
    """The release form of a cluster arrive costs MEMBAR.ALL.CTA + MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR
    per arriving thread; the relaxed form (ordered by tcgen05.fence in the kernels) is the bare arrive."""
    fences = ("MEMBAR", "ERRBAR", "CGAERRBAR")
    release = _delta("mbarrier_arrive_cluster", arch)
    relaxed = _delta("mbarrier_arrive_relaxed_cluster", arch)
    assert any(k.startswith(fences) for k in release), release
    assert not any(k.startswith(fences) for k in relaxed), relaxed
    assert not any(k.startswith("NANOSLEEP") for k in _delta("mbarrier_wait", arch))


@needs_nvdisasm
def test_relaxed_cluster_wait_is_the_cta_wait_in_sass():
    """The cluster-scope relaxed wait (chapters 8 and 9: the ISA's form for barriers the peer completes)
    compiles to the same SASS as the CTA-scope acquire; the cluster-scope acquire adds an L1 invalidation."""
    assert _op_build("mbarrier_wait_relaxed_cluster").opcodes == _op_build("mbarrier_wait").opcodes
    assert _op_build("mbarrier_wait_sleep_relaxed_cluster").opcodes == _op_build("mbarrier_wait_sleep").opcodes
    assert "CCTL.IVALL" in _delta("mbarrier_wait_cluster", "sm_100a")
    assert "CCTL.IVALL" not in _delta("mbarrier_wait_relaxed_cluster", "sm_100a")


def test_split_descriptor_mma_twin_composes_the_full_descriptor(monkeypatch):
    """tcgen05_mma_lo's twin hands the same 64-bit descriptors to the emulator's MMA as tcgen05_mma
    gets from sw128_kmajor_desc: high word DESC_HI, low word the 32-bit one."""
    from gemm_kernels.kernels.descriptors import DESC_HI, SBO_8_ROWS_128B, sw128_desc_lo
    from gemm_kernels.layouts import make_smem_desc
    from gemm_kernels.ptx import tcgen05 as t5

    seen = []
    monkeypatch.setattr(t5, "_mma_twin", lambda group: lambda *args: seen.append((group,) + args))
    for group, op in ((1, "_mma_lo_twin"), (2, "_mma_lo_twin")):
        twin = getattr(t5, op)(group)
        for addr in (0x400, 0x5400 + 96, 0x2F000):
            lo = int(sw128_desc_lo.py_func(addr))
            twin(7, lo + 2, lo, DESC_HI, 0x08200010, 1)
            g, d, a_desc, b_desc, idesc, acc = seen.pop()
            assert (g, d, idesc, acc) == (group, 7, 0x08200010, 1)
            assert int(a_desc) == make_smem_desc(addr + 32, lbo=16, sbo=SBO_8_ROWS_128B, swizzle="128B")
            assert int(b_desc) == make_smem_desc(addr, lbo=16, sbo=SBO_8_ROWS_128B, swizzle="128B")


@needs_nvdisasm
def test_block_scaled_mma_reads_the_scale_factors_from_tmem():
    """In SASS a block-scaled MMA names one more TMEM operand than the unscaled FP8 MMA (two with
    scale factors: A's and B's addresses share the instruction's extra operands); the FP16 MMA is a
    different instruction (UTCHMMA)."""
    def tmem_operands(op, opcode):
        lines = [ln for ln in _op_build(op).sass.splitlines() if re.search(rf"\s{re.escape(opcode)}\s", ln)]
        assert len(lines) == 1, (op, lines)
        return lines[0].count("tmem[")
    plain = tmem_operands("tcgen05_mma_f8f6f4", "UTCQMMA")
    assert tmem_operands("tcgen05_mma_mxf8f6f4", "UTCQMMA") == plain + 1
    assert tmem_operands("tcgen05_mma_mxf4nvf4", "UTCOMMA.4X") == plain + 1
    assert "UTCHMMA" not in _op_build("tcgen05_mma_f8f6f4").opcodes


@needs_nvdisasm
def test_tmem_ops_bring_ptxas_guardrails():
    """ptxas wraps tcgen05.dealloc in software checks that trap (names seen in the SASS)."""
    b = _op_build("tmem_dealloc")
    assert "__cuda_sm10x_tcgen05_guardrail_trap_unallocated_columns_being_dealloced" in b.sass
    assert b.count("BPT.TRAP") >= 1


def test_mixing_cta_groups_is_rejected():
    with pytest.raises(Exception, match=r"uses single CTA\(\.cta_group::1\) and CTA pair granularity"
                                        r"\(\.cta_group::2\) and that is not allowed"):
        _build(ok.MIXED_CTA_GROUP)


# ------------------------------------------------------------------------------------------------
# sm_90a (H200): the Hopper-shared ops build, with the same SASS; tcgen05 does not
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", HOPPER_OPS)
def test_sm90a_build(op):
    b = _op_build(op, "sm_90a")
    assert ".target sm_90a" in b.ptx
    assert b.local_bytes == 0 and b.spills == 0
    if find_nvdisasm() is not None:
        _check_sass(op, "sm_90a", SASS_SM90)


@pytest.mark.parametrize("op", BLACKWELL_ONLY_OPS)
def test_sm90a_rejects_blackwell_only_ops(op):
    with pytest.raises(Exception, match=r"not supported on \.target 'sm_90a'|requires \.target sm_100 or higher"):
        _op_build(op, "sm_90a")


# ------------------------------------------------------------------------------------------------
# declarations: docstring naming the PTX instruction, emulator twin
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
def test_docstring_and_twin(op):
    fn = ptx.REGISTRY[op]
    assert fn.twin is not None, f"{op} has no emulator twin"
    assert callable(fn.twin)
    doc = fn.__doc__ or ""
    assert doc.strip(), f"{op} has no docstring"
    if op in CUSTOM_OPS:
        assert fn.ptx is None
    else:
        assert _mnemonic(fn) in doc, f"{op}'s docstring does not name {_mnemonic(fn)}"


# ------------------------------------------------------------------------------------------------
# runtime/build.py: device functions compile without a GPU and without target_device
# ------------------------------------------------------------------------------------------------
def _fresh_device_kernel():
    """A kernel calling a device function that has never been compiled (numba caches a device
    function's compilation per argument types, and only the first one asks for the device)."""
    @cuda.jit(device=True, forceinline=True)
    def twice(v):
        return v + v

    def kernel(tmap, x, out, fout):
        out[0] = twice(x)

    return kernel


def test_build_compiles_device_functions_without_target_device():
    b = build(_fresh_device_kernel(), ok.SIG)
    assert ".target sm_100a" in b.ptx
    b90 = build(_fresh_device_kernel(), ok.SIG, arch="sm_90a")
    assert ".target sm_90a" in b90.ptx


def test_device_functions_need_the_target_device_fold(monkeypatch):
    """Without the target_device() inside build(), the same build fails on a machine without a GPU."""
    if cuda.is_available():
        pytest.skip("a GPU is present: numba finds a current device by itself")
    monkeypatch.setattr(offline, "target_device", lambda cc: contextlib.nullcontext())
    from numba.cuda.cudadrv.error import CudaSupportError

    with pytest.raises(CudaSupportError, match="driver"):
        build(_fresh_device_kernel(), ok.SIG)
