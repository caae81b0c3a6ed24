"""Helpers shared by subcommands: find a kernel by ``module:function`` or by chapter number."""
from __future__ import annotations

import argparse
import importlib
import os
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


def positive_int(text):
    """argparse type: an int >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text):
    """argparse type: an int >= 0."""
    return _int_at_least(text, 0)


def _int_at_least(text, low):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} is not {'positive' if low == 1 else '>= 0'}")
    return value


def parsed(flag, parse, text):
    """``parse(text)``, with its error as a CliError that names the flag."""
    try:
        return parse(str(text))
    except (ValueError, argparse.ArgumentTypeError) as e:
        raise CliError(f"bad {flag} {text!r}: {e}") from None


def check_output(flag, path):
    """Raise CliError unless ``path`` (given with ``flag``) can be written: checked before any work,
    so an hour of benchmarking does not end in a traceback at the last line."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"{flag} {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise CliError(f"{flag} {path} is a folder; give a file name")
    if not os.access(folder, os.W_OK):
        raise CliError(f"{flag} {path}: the folder {folder} is not writable")
