"""Check mode (gemm_kernels/emu/check_mode.py, ``verify --check``): one verdict over eager, lazy and
random orders; a planted bug is named under every order."""
import pytest

from gemm_kernels import CHAPTERS, book_helpers
from gemm_kernels.check import random_operands
from gemm_kernels.cli import main
from gemm_kernels.emu.check_mode import ORDERS, check_entry


def test_verify_check_ok(capsys):
    assert main(["verify", "--chapter", "1", "--check"]) == 0
    out = capsys.readouterr().out
    assert f"OK: {len(ORDERS)} of {len(ORDERS)} completion orders" in out
    assert "random (seed 3): ok" in out


def test_verify_check_refuses_the_gpu(capsys):
    assert main(["verify", "--chapter", "1", "--check", "--backend", "blackwell"]) == 2
    assert "--check runs on the emulator" in capsys.readouterr().err


@pytest.mark.parametrize("removed, diagnostic", [
    ("    ptx.mbarrier_wait(mma_done, 0)\n    ptx.tcgen05_fence_after()\n", "MissingTcgen05Fence"),
    ("    ptx.fence_proxy_async()\n", "MissingProxyFence"),
])
def test_check_names_a_planted_bug_in_every_order(removed, diagnostic):
    replacement = "    ptx.mbarrier_wait(mma_done, 0)\n" if "mbarrier_wait" in removed else ""
    broken = book_helpers.variant(1, {removed: replacement})
    a, b = random_operands(128, 128, 64)
    verdict = check_entry(broken.entry, a, b)
    assert not verdict.ok
    assert verdict.diagnostics == [diagnostic], [r.text() for r in verdict.runs]
    assert all(not r.ok for r in verdict.runs)
    assert "BUG: 5 of 5 completion orders failed" in verdict.summary()


def test_check_reports_a_wrong_result():
    a, b = random_operands(128, 128, 64)

    def wrong(a, b, **kw):
        d = CHAPTERS[1].entry(a, b, **kw)
        d[3, 4] += 1
        return d

    verdict = check_entry(wrong, a, b, orders=(("eager", 0),))
    assert not verdict.ok and "wrong result" in verdict.runs[0].text()


def test_persistent_check_also_runs_at_the_b200_launch():
    from gemm_kernels.emu.check_mode import b200_launch

    assert b200_launch(CHAPTERS[5].entry) is None  # not persistent: one launch
    assert b200_launch(CHAPTERS[7].entry) == {"num_ctas": 148}
    assert b200_launch(CHAPTERS[9].entry) == {"num_clusters": 74}
    a, b = random_operands(256, 256, 128)
    verdict = check_entry(CHAPTERS[6].entry, a, b, orders=(("lazy", 0),), b200=True)
    assert verdict.ok and [r.text() for r in verdict.runs] == [
        "lazy, emulator launch: ok", "lazy, B200 launch (min(148, tiles) CTAs): ok"]
