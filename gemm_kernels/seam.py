"""The seam between tiles: how long a tensor core waits between one tile's last MMA and the next
tile's first, measured on a trace (the emulator's virtual clock, or a B200 timeline).

A persistent kernel's tensor core runs tile after tile. Inside a tile its MMAs follow each other as
fast as the stages arrive; between tiles it may wait for an accumulator to be drained (the seam).
``seams`` cuts one CTA's MMA events into tiles by count (every tile issues the same number of MMAs
on a tensor core) and returns, for each tile but the last, the wait before the next one, beside the
tile's own MMA time (the union of its MMA intervals)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Seams:
    waits: tuple  # ns: tensor core idle between tile i's last MMA and tile i + 1's first
    mma_times: tuple  # ns: tile i's MMA time (union of its MMA intervals)

    def steady(self):
        """(mean wait, mean MMA time) in the steady state: the first tile (pipeline fill) and the
        last seam (nothing left to overlap) are left out."""
        w = self.waits[1:-1] or self.waits
        t = self.mma_times[1:len(self.waits)][:len(w)] or self.mma_times
        return sum(w) / len(w), sum(t) / len(t)

    def steady_fraction(self):
        """The steady state's mean wait between tiles, as a fraction of a tile's MMA time."""
        w, t = self.steady()
        return w / t


def _union(intervals):
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def seams(trace, mmas_per_tile, cta=0):
    """The seams of CTA ``cta``'s tensor core in ``trace``, whose tiles each issue ``mmas_per_tile``
    MMAs on it (for a pair's cta_group::2 MMAs: the leader's issue count per tile)."""
    mma = sorted((e for e in trace.events if e.op == "mma" and e.cta == cta), key=lambda e: e.start)
    if len(mma) % mmas_per_tile:
        raise ValueError(f"{len(mma)} MMAs on CTA {cta} is not a whole number of tiles of {mmas_per_tile}")
    tiles = [mma[i:i + mmas_per_tile] for i in range(0, len(mma), mmas_per_tile)]
    if len(tiles) < 2:
        raise ValueError("one tile has no seam: run at least two tiles per cluster")
    waits = tuple(max(0.0, nxt[0].start - max(e.end for e in cur)) for cur, nxt in zip(tiles, tiles[1:]))
    times = tuple(_union((e.start, e.end) for e in tile) for tile in tiles)
    return Seams(waits, times)
