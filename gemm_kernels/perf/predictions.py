"""The model's predictions that the book shows, computed once by ``tools/perf_predictions.py`` and
stored in ``predictions.json`` beside this module (the strict book build stays fast). The file
carries a fingerprint of everything the numbers depend on (the kernels, the model, the cost
model); ``tests/test_perf_book.py`` fails when it is stale, and the tool rewrites it."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

PATH = Path(__file__).with_name("predictions.json")
_PKG = Path(__file__).resolve().parents[1]
#: the files whose contents decide the model's numbers
DEPENDS = ("perf/params.py", "perf/chip.py", "perf/model.py", "perf/share.py", "perf/calibration.py",
           "perf/design.py", "perf/explore.py",
           "emu/costmodel.py", "pipeline.py", "kernels/*.py")
#: the book's points: (chapter, depth) at these sizes, plus the calibration set
BOOK_SIZES = (4096, 8192)
BOOK_RUNGS = ((4, None), (5, 2), (5, 4), (6, 2), (6, 4), (7, 2), (7, 4), (7, None), (8, 4), (8, None), (9, None),
              (10, None))
#: further (chapter, M, N, K) points at the chapter's default depth: chapter 10 beside step 9 at 2048^3,
#: and at ragged shapes, where step 9 runs on the operands zero-padded to its tile multiples
#: (book.padded_shape: 4096 x 3072 x 4096 for 4000 x 3000 x 4096; 8192^3 is a book size)
#: the held-out published designs beside the ladder (ladder.published_points): (chapter, size, depth)
#: where the published design's depth is not the chapter's default (CMU step 9: chapter 8 at depth 4)
LIKE_FOR_LIKE = ((8, 8192, 4),)
BOOK_SHAPES = ((9, 2048, 2048, 2048), (10, 2048, 2048, 2048), (10, 4000, 3000, 4096), (9, 4096, 3072, 4096),
               (10, 8191, 8191, 8192))


def fingerprint():
    h = hashlib.sha256()
    for pattern in DEPENDS:
        for f in sorted(_PKG.glob(pattern)):
            h.update(f.relative_to(_PKG).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def load():
    with open(PATH) as f:
        return json.load(f)


def lookup(data, chapter, size, depth=None, tmem_cols=None):
    """The stored row for chapter at size^3 (depth None: the chapter's default; tmem_cols: the
    chapter as a published design with that TMEM allocation, None: as the book writes it)."""

    return lookup_shape(data, chapter, size, size, size, depth, tmem_cols)


def lookup_shape(data, chapter, m, n, k, depth=None, tmem_cols=None):
    """The stored row for chapter at M x N x K (as ``lookup``)."""
    from ..chapters import CHAPTERS

    want = depth if depth is not None else CHAPTERS[chapter].config.get("pipe_depth")
    for r in data["results"]:
        if (r["chapter"], r["m"], r["n"], r["k"], r["pipe_depth"], r.get("tmem_cols")) == (
                chapter, m, n, k, want, tmem_cols):
            return r
    raise KeyError(f"no stored prediction for chapter {chapter} at {m} x {n} x {k}, depth {depth}: "
                   f"run tools/perf_predictions.py")
