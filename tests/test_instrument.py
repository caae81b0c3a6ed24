"""Instrumented builds (gemm_kernels.instrument) without a GPU: the "off" build is the plain kernel's
machine code byte for byte; the timeline build reads %globaltimer; the guard builds for sm_100a and
sm_90a and traps; the host decodes fake records; instrumented kernels still run on the emulator.
The live checks on an H200 are tests/hopper_runbook/run_h200.py (results in tests/hopper_runbook/results)."""
import re
import struct

import numpy as np
import pytest

from gemm_kernels import CHAPTERS, instrument as ins
from gemm_kernels.emu.errors import Deadlock
from gemm_kernels.ptx import probe
from gemm_kernels.runtime.build import build
from tests.hopper_runbook import micro

TL = ins.Timeline(0x7F00_0000_0000, 4096)
GD = ins.Guard(0x7F00_0001_0000, 0x7F00_0002_0000)
_NAME = re.compile(r"_ZN\w+")


def _same_code(a, b):
    ta, tb = ins.text_bytes(a.cubin), ins.text_bytes(b.cubin)
    assert len(ta) == len(tb)
    assert list(ta.values()) == list(tb.values())  # every machine-code section, byte for byte
    # the SASS text differs only in numba's per-function unique id inside the mangled kernel name
    assert _NAME.sub("K", a.sass) == _NAME.sub("K", b.sass)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_off_build_is_the_plain_kernel_micro(arch):
    _same_code(build(micro.pipe_kernel, micro.SIGNATURE, arch=arch),
               build(ins.instrument(micro.pipe_kernel), micro.SIGNATURE, arch=arch))


def test_off_build_is_the_plain_kernel_chapter7():
    ch = CHAPTERS[7]
    _same_code(build(ch.kernel, ch.signature), build(ins.instrument(ch.kernel), ch.signature))


def _timer_reads(b):
    return [ln for ln in b.sass.splitlines() if re.search(r"\b(CS2R|S2UR|S2R)\b.*SR_GLOBALTIMER", ln)]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_timeline_build_reads_the_global_timer(arch):
    plain = build(micro.pipe_kernel, micro.SIGNATURE, arch=arch)
    on = build(ins.instrument(micro.pipe_kernel, timeline=TL), micro.SIGNATURE, arch=arch)
    assert not _timer_reads(plain)
    reads = _timer_reads(on)
    # 2 role stamps, wait begin/end x 2 waits, arrive x 2, TMA issue: at least 7 stamp sites
    assert len(reads) >= 7, reads
    assert on.count("ATOMG") >= 1 and on.local_bytes == 0 and on.spills == 0


def test_timeline_build_of_chapter7_sm100a():
    ch = CHAPTERS[7]
    on = build(ins.instrument(ch.kernel, timeline=TL), ch.signature)
    assert len(_timer_reads(on)) >= 10
    assert on.count("UTCHMMA") == build(ch.kernel, ch.signature).count("UTCHMMA") > 0  # the same MMAs
    assert on.count("UTMALDG") >= 1 and on.spills == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_guard_builds_and_traps(arch):
    plain = build(micro.pipe_kernel, micro.SIGNATURE, arch=arch)
    g = build(ins.instrument(micro.pipe_kernel, guard=GD), micro.SIGNATURE, arch=arch)
    assert plain.count("BPT") == 0
    assert g.count("BPT.TRAP") >= 2  # one per guarded wait site
    assert _timer_reads(g) and g.count("SYNCS.PHASECHK") >= 2
    assert g.local_bytes == 0 and g.spills == 0


def test_guard_builds_for_chapter8_sm100a():
    ch = CHAPTERS[8]  # cluster waits: guard_wait_cluster
    g = build(ins.instrument(ch.kernel, guard=GD), ch.signature)
    assert g.count("BPT.TRAP") >= 3 and g.spills == 0


def _guard_buffer(records, base=0x400):
    raw = bytearray(probe.HEADER_BYTES + probe.GUARD_RECORD_BYTES * 8)
    struct.pack_into("<II", raw, 0, len(records), base)
    for i, r in enumerate(records):
        rec = np.zeros(1, ins.GUARD_DTYPE)
        for k, v in r.items():
            rec[k] = v
        rec["magic"] = probe.GUARD_MAGIC
        off = probe.HEADER_BYTES + i * probe.GUARD_RECORD_BYTES
        raw[off:off + probe.GUARD_RECORD_BYTES] = rec.tobytes()
    return bytes(raw)


def test_guard_record_decoding_raises_the_emulators_deadlock():
    regions = micro.plan.regions
    full1 = 0x400 + micro.FULL0 + 8
    empty0 = 0x400 + micro.EMPTY0
    raw = _guard_buffer([
        dict(cta_x=3, tid=37, bar=full1, parity=1, elapsed_ns=1_000_000_123, sm=17),
        dict(cta_x=3, tid=0, bar=empty0, parity=0, elapsed_ns=1_000_000_000, sm=17, rank=0),
    ])
    recs = ins.decode_guard(raw, regions=regions)
    assert [r.barrier for r in recs] == ["full[1]", "empty[0]"]
    assert recs[0].warp == 1 and recs[0].cta == (3, 0, 0) and recs[0].parity == 1
    with pytest.raises(Deadlock) as ei:
        ins.raise_if_guarded(raw, regions=regions, kernel="pipe_kernel", limit_ns=1_000_000_000)
    msg = str(ei.value)
    assert "full[1]" in msg and "parity 1" in msg and "warp 1 (thread 37" in msg and "CTA (3,0,0)" in msg
    assert len(ei.value.records) == 2
    # an empty buffer raises nothing
    assert ins.raise_if_guarded(_guard_buffer([]), regions=regions) is None


def test_timeline_decoding():
    from gemm_kernels.trace import ROLE_MMA, ROLE_TMA

    base = 0x400
    full0 = base + micro.FULL0
    stamps = [  # (t, code, arg, cta, tid)
        (100, ins.ROLE, ROLE_TMA, 0, 0), (100, ins.ROLE, ROLE_MMA, 0, 32),
        (110, ins.TMA_LOAD, full0, 0, 0),
        (120, ins.WAIT_BEGIN, full0, 0, 32), (400, ins.WAIT_END, full0, 0, 32),
        (410, ins.MMA, 0, 0, 32), (420, ins.MMA, 1, 0, 32), (430, ins.COMMIT, full0 + 16, 0, 32),
        (440, ins.WAIT_BEGIN, (full0 + 16) | ins.PARITY_BIT, 0, 64), (900, ins.WAIT_END, (full0 + 16) | ins.PARITY_BIT, 0, 64),
        (910, ins.TMEM_LD, 0, 0, 64), (950, ins.TMEM_LD_END, 0, 0, 64),
    ]
    recs = np.zeros(len(stamps), ins.STAMP_DTYPE)
    for i, (t, c, a, cta, tid) in enumerate(stamps):
        recs[i] = (t, c, a, cta, tid, 5, 0)
    raw = struct.pack("<II", len(stamps) + 3, base) + bytes(probe.HEADER_BYTES - 8) + recs.tobytes()
    tr = ins.decode_timeline(raw, regions=micro.plan.regions)
    assert tr.dropped == 3 and tr.timer_step_ns == 10
    ops = {(e.lane, e.op) for e in tr.events}
    assert ("TMA producer", "tma.issue") in ops and ("TMA", "tma.load") in ops
    assert ("MMA issuer", "wait") in ops and ("tensor core", "mma") in ops and ("warp 2", "tmem.ld") in ops
    load = tr.filter(op="tma.load")[0]
    assert (load.start, load.end, load.barrier) == (10.0, 300.0, "full[0]")
    wait2 = [e for e in tr.filter(op="wait") if e.lane == "warp 2"][0]
    assert wait2.barrier == "empty[0]" and wait2.extra["parity"] == 1
    mma = tr.filter(op="mma")[0]
    assert (mma.start, mma.end) == (310.0, 800.0)


def test_instrumented_kernel_still_runs_on_the_emulator():
    """The wrappers are device functions of ptx ops: the emulator runs the instrumented copy (stamps
    do nothing there; the guarded wait is the ordinary wait) and gets the same answer."""
    from gemm_kernels import emu

    k = ins.instrument(micro.pipe_kernel, timeline=TL, guard=GD)
    x, out = micro.operands(2, 5)
    addr = 0x7F00_0000_0000
    emu.run(k, 2, micro.THREADS, (addr, out, 5, 0), shared_bytes=micro.plan.size, names=micro.plan.regions,
            tensor_maps={addr: emu.TensorMapModel(x, micro.BOX_ROWS, micro.BOX_COLS, "128B", name="X")})
    assert micro.check(out, x, 2, 5)[0]


def test_the_deliberate_hang_is_a_deadlock_on_the_emulator_too():
    with pytest.raises(Deadlock, match=r"full\[0\]"):
        micro.run_emulator(1, 4, extra_tx=1024, trace=False)
