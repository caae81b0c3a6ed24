"""``info``: versions, the GPU (if any) and the tools found."""
from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser("info", help="versions, GPU and tools",
                              description="Print package versions, the GPU if one is usable, and "
                                          "whether nvdisasm was found. Never fails for want of a GPU.")
    p.set_defaults(func=run)


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _source_version() -> str:
    """Version from pyproject.toml when the package runs from a checkout without being installed."""
    import os
    import re

    import gemm_kernels

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(gemm_kernels.__file__))),
                        "pyproject.toml")
    try:
        with open(path) as f:
            m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), flags=re.M)
        return f"{m.group(1)} (from source, not installed)" if m else "unknown"
    except OSError:
        return "unknown"


def run(args) -> int:
    import platform

    import gemm_kernels
    from gemm_kernels.runtime.build import find_nvdisasm
    from gemm_kernels.runtime.device import gpu_info

    own = getattr(gemm_kernels, "__version__", None) or _version("gemm-kernels")
    if own == "not installed":
        own = _source_version()
    rows = [
        ("gemm_kernels", own),
        ("python", platform.python_version()),
        ("numba-cuda", _version("numba-cuda")),
        ("numba", _version("numba")),
        ("llvmlite", _version("llvmlite")),
        ("cuda-core", _version("cuda-core")),
        ("cuda-bindings", _version("cuda-bindings")),
        ("numpy", _version("numpy")),
    ]
    info = gpu_info()
    if info is None:
        rows.append(("gpu", "none (no CUDA driver or device): backend=None uses the emulator"))
    else:
        major, minor = info.compute_capability
        rows += [
            ("gpu", info.name),
            ("compute capability", f"{major}.{minor} ({info.arch})"),
            ("SMs", str(info.sm_count)),
            ("opt-in smem/block", f"{info.max_shared_per_block_optin} B"),
            ("memory", f"{info.total_memory / 2**30:.1f} GiB"),
            ("driver", f"{info.driver_version // 1000}.{info.driver_version % 1000 // 10}"),
            ("blackwell backend", "available" if info.compute_capability == (10, 0)
             else "not available (needs compute capability 10.0)"),
        ]
    tool = find_nvdisasm()
    rows.append(("nvdisasm", tool or "not found (sass output unavailable; --summary still reports resources)"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0
