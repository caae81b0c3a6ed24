"""What the fake GPU does when a kernel is launched (``FakeGpu(executor=...)``); by default nothing.

* ``numpy_gemm``: writes D = A @ B.T (fp32 accumulation, fp16 result) where a chapter kernel would
  write it, found through the launch's own arguments (the A, B, D tensor maps, or the A, B and D
  arrays of chapters 1-3). It checks the host side's wiring (which buffer is which, shapes, the
  copy back), not the kernel.
* ``emulated``: runs the launched kernel itself on the emulator, against the fake device memory
  (tensor-map addresses become the emulator's TensorMapModels). Small shapes only.
"""
from __future__ import annotations

import numpy as np


def _operands(gpu, launch):
    """(A, B, D) as views of fake device memory, or None if the launch is not a chapter GEMM."""
    if len(launch.tensor_maps) >= 3:
        a, b, d = (gpu.matrix(launch.tensor_maps[i]) for i in sorted(launch.tensor_maps)[:3])
        return a, b, d
    arrays = [x for x in launch.args if hasattr(x, "host_view")]
    if len(arrays) == 3 and arrays[0].dtype == np.float16:
        a, b, d32 = (x.host_view() for x in arrays)
        return a, b, d32.view(np.float16)
    return None


def numpy_gemm(gpu, launch):
    ops = _operands(gpu, launch)
    if ops is None:
        return
    a, b, d = ops
    d[...] = (a.astype(np.float32) @ b.astype(np.float32).T).astype(d.dtype)


def emulated(gpu, launch, **run_options):
    """Run the launched kernel on the emulator with the launch's grid, block, cluster, shared memory
    and arguments (device arrays as their memory, tensor maps as TensorMapModels)."""
    from gemm_kernels import emu
    from gemm_kernels.emu import TensorMapModel

    args, models = [], {}
    for i, val in enumerate(launch.args):
        if i in launch.tensor_maps:
            t = launch.tensor_maps[i]
            _, (box_rows, box_cols) = t.rows_cols
            swizzle = {0: "none", 32: "32B", 64: "64B", 128: "128B"}[t.swizzle_span]
            models[int(val)] = TensorMapModel(gpu.matrix(t), box_rows, box_cols, swizzle, name=f"map {t.index}")
            args.append(int(val))
        elif hasattr(val, "host_view"):
            args.append(val.host_view())
        else:
            args.append(val)
    grid = tuple(g for g in launch.grid)
    # the clusters the device holds at once (one per SM group; the fake's shared memory per SM allows
    # one CTA of these kernels): a kernel that cancels clusters (chapter 10) finds the rest waiting
    per_cluster = int(np.prod(launch.cluster)) if launch.cluster else 1
    run_options.setdefault("resident", max(1, gpu.spec.sm_count // per_cluster))
    return emu.run(launch.dispatcher, grid, launch.block, tuple(args), cluster=launch.cluster,
                   shared_bytes=launch.shared_bytes, tensor_maps=models, **run_options)
