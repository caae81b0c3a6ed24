"""Subcommands of ``python -m gemm_kernels``.

Each module in this package is one subcommand and exposes ``add_parser(subparsers)``, which adds its
parser with ``subparsers.add_parser(NAME, ...)`` and sets ``func=`` (a callable taking the parsed
``argparse.Namespace`` and returning an exit code) via ``set_defaults``. ``main()`` finds the modules
by listing this package, so adding a subcommand means adding a module here and nothing else.
A module whose name starts with ``_`` is not a subcommand (helpers live there).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

__all__ = ["main", "build_parser", "subcommand_modules", "OneLineParser"]


def subcommand_modules() -> list[str]:
    """Names of the subcommand modules, in alphabetical order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors on one line (``prog: error: ...; see --help``) and exit status 2,
    like every other error of this CLI; subcommand parsers are of the same class."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m gemm_kernels",
        description="Nine Blackwell GEMM kernels: build, verify, trace and benchmark them.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    broken = []
    for name in subcommand_modules():
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
            add = getattr(mod, "add_parser")
        except Exception as e:  # one broken subcommand must not take the others down
            broken.append(f"{name}: {type(e).__name__}: {e}")
            continue
        add(sub)
    parser.set_defaults(_broken=broken)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for b in getattr(args, "_broken", []):
        print(f"warning: subcommand module {b}", file=sys.stderr)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    rc = func(args)
    return 0 if rc is None else int(rc)
