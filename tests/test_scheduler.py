"""The persistent tile scheduler without a division (gemm_kernels.pipeline): the host's encoded
divisors divide exactly, and grouped_tile (run as Python, the code the emulator runs) visits every
tile once, in the grouped order; and the producer's tail drains the ring before teardown."""
import random

import pytest

from gemm_kernels.emu.rebind import emulated
from gemm_kernels.pipeline import (advance, barrier, fast_div, fast_divisor, grouped_tile, host_grouped_tile,
                                   host_tile_order, scheduler_args, stage_buffer)
from gemm_kernels.schedule import clc_first, static_first, static_next


def test_fast_div_is_exact():
    rng = random.Random(0)
    edges = [0, 1, 2, 3, 7, 8, 255, 256, 2 ** 16 - 1, 2 ** 16, 2 ** 30, 2 ** 31 - 2, 2 ** 31 - 1]
    for d in list(range(1, 600)) + [2 ** k for k in range(31)] + [2 ** k - 1 for k in range(2, 31)] + \
            [rng.randrange(1, 2 ** 31) for _ in range(300)]:
        enc = fast_divisor(d)
        for n in edges + [rng.randrange(0, 2 ** 31) for _ in range(40)] + [d - 1, d, d + 1, 5 * d - 1]:
            if 0 <= n < 2 ** 31:
                assert int(fast_div.py_func(n, enc)) == n // d, (n, d)


def test_fast_divisor_rejects():
    for d in (0, -3, 2 ** 31):
        with pytest.raises(ValueError, match="1 <= d < 2"):
            fast_divisor(d)


def _reference(t, num_m, num_n, group):  # the scheduler as first written, with // and %
    per_group = group * num_n
    g = t // per_group
    first_m = g * group
    rows = min(num_m - first_m, group)
    local = t - g * per_group
    return first_m + local % rows, local // rows


@pytest.mark.parametrize("num_m, num_n, group", [(4, 3, 8), (3, 2, 2), (17, 5, 8), (16, 16, 8), (9, 7, 4),
                                                   (1, 1, 8), (5, 9, 1), (10, 3, 3)])
def test_grouped_tile_matches_the_division(num_m, num_n, group):
    args = scheduler_args(num_m, num_n, group)
    seen = set()
    for t in range(num_m * num_n):
        got = tuple(int(x) for x in emulated(grouped_tile)(t, *args[:2], group, *args[2:]))
        assert got == _reference(t, num_m, num_n, group), t
        seen.add(got)
    assert seen == {(m, n) for m in range(num_m) for n in range(num_n)}


@pytest.mark.parametrize("num_m, num_n, group", [(17, 5, 8), (9, 7, 4)])
def test_host_tile_order_is_the_device_scheduler(num_m, num_n, group):
    """The host's copy of the schedule (perf model, chapter 6's panel counts) is the kernel's."""
    order = host_tile_order(num_m, num_n, group)
    assert order == [_reference(t, num_m, num_n, group) for t in range(num_m * num_n)]
    assert host_grouped_tile(7, num_m, num_n, group) == order[7]


def test_ring_accessors():
    """Barrier s of a ring lies 8 bytes after barrier s - 1; buffer s, ``nbytes`` after buffer s - 1."""
    assert [int(emulated(barrier)(0x4400, s)) for s in range(3)] == [0x4400, 0x4408, 0x4410]
    assert [int(emulated(stage_buffer)(0x400, s, 16384)) for s in range(3)] == [0x400, 0x4400, 0x8400]


def test_scheduler_bound_checked_on_the_host():
    with pytest.raises(ValueError, match="counts in 32 bits"):
        scheduler_args(2 ** 15, 2 ** 15, 8)


def test_advance_wraps_and_flips():
    pos, seen = (0, 1), []
    for _ in range(7):
        seen.append(tuple(int(x) for x in pos))
        pos = advance.py_func(*pos, 3)
    assert seen == [(0, 1), (1, 1), (2, 1), (0, 0), (1, 0), (2, 0), (0, 1)]


#: the smallest shape of each warp-specialized chapter (one tile, one K chunk: one commit per ring stage used)
SMALLEST = {7: (128, 128, 64), 8: (256, 256, 64), 9: (512, 256, 64)}


@pytest.mark.parametrize("ch", sorted(SMALLEST))
def test_producers_drain_before_teardown(ch):
    """Chapters 7-9 leave tcgen05 commits in flight after the producer's last load (in 8-9 multicast
    into the peer CTA); each producer ends with pipeline.producer_tail, which waits for them. Without
    the tail, the emulator reports the last mma2tma arrival as not ordered before the CTA's exit, in
    every completion order (the writeback's wait on mma2ld does not order it)."""
    import inspect
    import re

    from gemm_kernels import CHAPTERS, book_helpers
    from gemm_kernels.check import compare, random_operands
    from gemm_kernels.emu.errors import UndrainedArrival
    from gemm_kernels.emu.scheduler import POLICIES

    src = inspect.getsource(inspect.unwrap(CHAPTERS[ch]._mod().make_kernel))
    (call,) = re.findall(r"^\s*((?:\w+\.)?producer_tail(?:_cluster)?\(.*\))\s*$", src, re.MULTILINE)  # the tail's line
    broken = book_helpers.variant(ch, {call: "pass"})
    a, b = random_operands(*SMALLEST[ch])
    assert compare(CHAPTERS[ch].entry(a, b, backend="emulator", policy="eager"), a, b).ok  # the intact kernel
    for policy in POLICIES:
        with pytest.raises(UndrainedArrival) as ei:
            broken.entry(a, b, backend="emulator", policy=policy)
        msg = str(ei.value)
        assert re.search(r"the tcgen05\.commit issued by thread \d+ .* on mbarrier mma2tma\[0\]( of CTA [^)]*\))? "
                         r"\(phase 0\)", msg), msg
        assert "exited" in msg and "pipeline.producer_tail" in msg, msg
        # the commit's site: the kernel's line, numbered as in the file, then the helper's line if any
        path = inspect.getsourcefile(CHAPTERS[ch]._mod())
        lines = open(path).read().splitlines()
        site = re.search(r"at <variant of gemm_kernels/kernels/(\w+\.py)>:(\d+) \(\w+\)(, in gemm_kernels/pipeline\.py:\d+ "
                         r"\(release\))?", msg)
        assert site and path.endswith(site.group(1)), msg
        kernel_line = lines[int(site.group(2)) - 1]
        assert ("pipeline.release(" in kernel_line) == bool(site.group(3)) and "MMA2TMA" in kernel_line, (kernel_line, msg)


@pytest.mark.parametrize("cluster, num_clusters, num_tiles", [(0, 3, 10), (2, 3, 10), (4, 5, 3), (1, 74, 222)])
def test_static_schedule_walks_every_num_clusters_th_tile(cluster, num_clusters, num_tiles):
    """The three lines every role of steps 6-9 walks its tiles with: cluster c takes c, c + G, c + 2G, ...
    below the tile count, and none when the grid has more clusters than tiles."""
    first, nxt = emulated(static_first), emulated(static_next)
    walked = []
    more, t = first(cluster, num_tiles)
    while more:
        walked.append(int(t))
        more, t = nxt(t, num_clusters, num_tiles)
    assert walked == list(range(cluster, num_tiles, num_clusters))


def test_clc_first_is_the_clusters_own_tile():
    assert [int(x) for x in emulated(clc_first)(7)] == [1, 7]


@pytest.mark.parametrize("ch", [6, 7, 8, 9, 10])
def test_persistent_roles_share_one_tile_loop(ch):
    """Every role of a persistent kernel walks its tiles through gemm_kernels.schedule (so that chapter 10
    swaps the scheduler and nothing else), and every ring steps with pipeline.advance or ring_slot: no
    hand-written tile step, no phase flipped by hand."""
    import inspect
    import re

    from gemm_kernels import CHAPTERS

    src = inspect.getsource(inspect.unwrap(CHAPTERS[ch]._mod().make_kernel))
    kind = "clc" if ch == 10 else "static"
    firsts = re.findall(rf"more, t = schedule\.{kind}_first\(", src)
    nexts = re.findall(rf"more, t = schedule\.{kind}_next\(", src)
    loops = re.findall(r"^\s*while more:$", src, re.MULTILINE)
    assert firsts and len(firsts) == len(nexts), (ch, len(firsts), len(nexts))
    assert len(loops) >= len(firsts)  # chapter 10's scheduler warp loops over its requests too
    assert not re.search(r"\bt \+= |while t < ", src), f"chapter {ch}: a tile loop written out by hand"
    assert not re.search(r"phase \^= ", src), f"chapter {ch}: a phase flipped by hand"
