"""Every chapter's kernel builds for sm_100a on this GPU-less machine, with no local memory and no
spills, and its SASS holds the instructions its chapter teaches."""
import pytest

from gemm_kernels import CHAPTERS
from gemm_kernels.runtime.build import build as _build
from gemm_kernels.runtime.offline import target_device


def build(kernel, sig):
    with target_device((10, 0)):
        return _build(kernel, sig)

# REGRESSION LOCK, not an independent fact: registers per thread as this build uses them today, plus
# headroom. A jump past it means something started holding far more in registers (e.g. a whole
# accumulator row), long before it would spill. The one independent limit is the hardware's: 65536
# registers per SM, so V9's 384 threads per CTA cannot have more than 170 (test_register_hard_ceiling).
REGISTER_LOCK = {1: 64, 2: 96, 3: 96, 4: 112, 5: 112, 6: 112, 7: 168, 8: 168, 9: 120, 10: 80}

TEACHES = {
    1: ["UTCHMMA", "UTCBAR", "LDTM", "UTCATOMSWS", "SYNCS"],
    2: ["UTCHMMA", "UTCBAR", "LDTM"],
    3: ["UTCHMMA", "LDTM"],
    4: ["UTMALDG", "UTMASTG", "UTCHMMA", "LDTM"],
    5: ["UTMALDG", "UTMASTG", "UTCHMMA", "LDTM"],
    6: ["UTMALDG", "UTMASTG", "UTCHMMA", "LDTM"],
    7: ["UTMALDG", "UTMASTG", "UTCHMMA", "UTCBAR", "LDTM", "ELECT"],
    # the CTA-pair forms, as nvdisasm 13.5 prints them for sm_100a
    8: ["UTMALDG.2D.2CTA", "UTCHMMA.2CTA", "UTCBAR.2CTA.MULTICAST", "UTCATOMSWS.2CTA", "LDTM", "UCGABAR_ARV",
        "UCGABAR_WAIT"],
    9: ["UTMALDG.2D.2CTA", "UTCHMMA.2CTA", "UTCBAR.2CTA.MULTICAST", "UTCATOMSWS.2CTA", "LDTM"],
    10: ["UTMALDG.2D.2CTA", "UTMASTG", "UTCHMMA.2CTA", "UTCBAR.2CTA.MULTICAST", "UTCATOMSWS.2CTA", "LDTM"],
}


@pytest.fixture(scope="module", params=sorted(CHAPTERS))
def built(request):
    ch = CHAPTERS[request.param]
    return request.param, build(ch.kernel, ch.signature)


def test_builds_clean(built):
    n, b = built
    assert b.local_bytes == 0, b.summary()
    assert b.spill_stores == 0 and b.spill_loads == 0, b.summary()
    print(f"chapter {n}: {b.registers} registers")


def test_register_count_regression_lock(built):
    n, b = built
    assert 0 < b.registers <= REGISTER_LOCK[n], f"chapter {n}: {b.registers} registers (lock {REGISTER_LOCK[n]})"


def test_register_hard_ceiling(built):
    """65536 registers per SM (sm_100) shared by one CTA's threads: the kernel must fit one CTA."""
    n, b = built
    threads = CHAPTERS[n]._mod().THREADS
    assert b.registers * threads <= 65536, f"chapter {n}: {b.registers} x {threads} threads"


def test_sass_shows_the_chapter(built):
    n, b = built
    for op in TEACHES[n]:
        assert b.count(op) > 0, f"chapter {n}: no {op} in SASS"


def test_v1_issues_four_mmas():
    b = build(CHAPTERS[1].kernel, CHAPTERS[1].signature)
    assert b.count("UTCHMMA") == 4  # K = 64 in four K = 16 steps (the loop is unrolled)
