"""Text shared by the emulator's reports: how a set of thread, lane or warp indices is written
("0-3,5"). The hardware model and the checkers both write it, so it lives apart from either (machine.py
and mbarrier.py import it; neither imports the other for it)."""
from __future__ import annotations


def ranges(ids):
    """Sorted indices as runs: ``{0, 1, 2, 3, 5}`` -> ``"0-3,5"``."""
    ids = sorted(ids)
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)
