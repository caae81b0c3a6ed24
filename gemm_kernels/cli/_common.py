"""Helpers shared by subcommands: find a kernel by ``module:function`` or by chapter number."""
from __future__ import annotations

import importlib
from dataclasses import dataclass


class CliError(Exception):
    """An error to print as one line and exit 2 on, without a traceback."""


@dataclass
class KernelRef:
    kernel: object
    signature: object
    label: str


def load_function(spec: str):
    """``package.module:function`` (dots after the colon walk attributes) -> the object."""
    if ":" not in spec:
        raise CliError(f"--kernel wants package.module:function, got {spec!r}")
    modname, attr = spec.split(":", 1)
    try:
        obj = importlib.import_module(modname)
    except ImportError as e:
        raise CliError(f"cannot import module {modname!r}: {e}") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"{modname!r} has no attribute {attr!r}") from None
    return obj


def chapter_kernel(n: int) -> KernelRef:
    """The kernel and signature of chapter ``n`` from ``gemm_kernels.CHAPTERS``."""
    from gemm_kernels import CHAPTERS

    if n not in CHAPTERS:
        raise CliError(f"no chapter {n}; available: {sorted(CHAPTERS)}")
    ch = CHAPTERS[n]
    return KernelRef(ch.kernel, ch.signature, f"chapter {n}")


def chapter_and_shape(args):
    """The chapter named by ``--chapter`` and the shape from ``--m/--n/--k`` (each defaulting to the
    chapter's test shape). Raises CliError for an unknown chapter."""
    from gemm_kernels import CHAPTERS

    if args.chapter not in CHAPTERS:
        raise CliError(f"no chapter {args.chapter}; available: {sorted(CHAPTERS)}")
    ch = CHAPTERS[args.chapter]
    m, n, k = (v if v is not None else d for v, d in zip((args.m, args.n, args.k), ch.test_shape))
    return ch, m, n, k
