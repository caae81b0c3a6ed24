"""``verify``: run a chapter's kernel and compare it with the numpy reference.

    python -m gemm_kernels verify --chapter 3 --backend emulator --m 256 --n 384 --k 128
    python -m gemm_kernels verify --chapter 5 --check     # every completion order, one verdict

Exits 0 only when every element is within tolerance; prints the backend used and the error figures."""
from __future__ import annotations

import contextlib
import io
import sys
import time

from ._common import non_negative_int, positive_int


def add_parser(subparsers):
    p = subparsers.add_parser("verify", help="run a chapter and check it against numpy",
                              description="Run chapter N's kernel on random fp16 inputs (uniform in [-1, 1), "
                                          "seeded) and compare with fp32-accumulated numpy rounded to fp16.")
    p.add_argument("--chapter", type=int, required=True, metavar="N")
    p.add_argument("--backend", choices=["emulator", "blackwell"], default=None,
                   help="default: a B200 if present, else the emulator")
    p.add_argument("--m", type=positive_int)
    p.add_argument("--n", type=positive_int)
    p.add_argument("--k", type=positive_int)
    p.add_argument("--policy", choices=["eager", "lazy", "random"], default="lazy",
                   help="emulator completion order of asynchronous work")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the inputs and of the random policy")
    p.add_argument("--check", action="store_true",
                   help="on the emulator, run under eager, lazy and random (seeds 1-3) and print one verdict")
    p.set_defaults(func=run)


def run_check(args) -> int:
    """--check: the kernel under every completion order (gemm_kernels/emu/check_mode.py)."""
    from gemm_kernels.check import random_operands
    from gemm_kernels.emu.check_mode import check_entry

    from ._common import CliError, chapter_and_shape

    try:
        if args.backend == "blackwell":
            raise CliError("--check runs on the emulator; leave out --backend blackwell")
        ch, m, n, k = chapter_and_shape(args)
        a, b = random_operands(m, n, k, seed=args.seed)
    except (CliError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"chapter {ch.number} ({ch.title}) on the emulator, M={m} N={n} K={k}:")
    verdict = check_entry(ch.entry, a, b, b200=True)  # persistent chapters: also at a B200's launch
    verdict.print()
    return 0 if verdict.ok else 1


def run(args) -> int:
    from gemm_kernels.check import compare, random_operands
    from gemm_kernels.emu.check_mode import b200_launch
    from gemm_kernels.emu.errors import EmulatorError
    from gemm_kernels.kernels.host import choose_backend

    from ._common import CliError, chapter_and_shape

    if args.check:
        return run_check(args)
    try:
        ch, m, n, k = chapter_and_shape(args)
        a, b = random_operands(m, n, k, seed=args.seed)
        with contextlib.redirect_stderr(io.StringIO()):  # its "running on the emulator" note: the result says so
            backend = choose_backend(args.backend, args.chapter)
        kw = dict(policy=args.policy, seed=args.seed) if backend == "emulator" else {}
        if backend == "emulator":
            # a persistent chapter at a B200's launch (one tile per CTA at small shapes), where a release to
            # the wrong stage hangs as on the chip; the emulator's few-CTA launch is --check's second run
            kw.update(b200_launch(ch.entry) or {})
        t0 = time.perf_counter()
        d = ch.entry(a, b, backend=backend, **kw)
        dt = time.perf_counter() - t0
    except (CliError, ValueError, TypeError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except EmulatorError as e:  # the kernel is wrong: a named diagnostic instead of a result
        print(f"chapter {args.chapter}: the emulator stopped the kernel: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    res = compare(d, a, b)
    print(f"chapter {ch.number} ({ch.title}) on {backend}"
          + (f" (policy {args.policy}, seed {args.seed}{_geometry(kw)})" if backend == "emulator" else "")
          + f": M={m} N={n} K={k} in {dt:.2f} s")
    print(res.report())
    return 0 if res.ok else 1


def _geometry(kw):
    """", B200 launch (min(148, tiles) CTAs)" for a persistent chapter's launch, else ""."""
    for name, what in (("num_ctas", "CTAs"), ("num_clusters", "clusters")):
        if name in kw:
            return f", B200 launch: min({kw[name]}, tiles) {what}"
    return ""
