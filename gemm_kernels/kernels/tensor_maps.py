"""Tensor maps for the TMA chapters (4-9): one description, two machines.

On a B200 the driver encodes a CUtensorMap into global memory and the kernel gets its address; on
the emulator a TensorMapModel stands at a made-up address. Both come from the same validated
``TensorMap2D`` description."""
from __future__ import annotations

from ..runtime.tensormap import TensorMap2D

_EMU_BASE = 0x7E00_0000_0000


def describe(array, box_rows, box_cols, swizzle="128B"):
    return TensorMap2D.for_array(array, (box_rows, box_cols), swizzle=swizzle)


def emulator_maps(specs):
    """specs: [(name, numpy array, box_rows, box_cols[, swizzle])] -> (addresses, {address: TensorMapModel})."""
    from ..emu import TensorMapModel

    addrs, models = [], {}
    for i, (name, array, rows, cols, *swz) in enumerate(specs):
        swizzle = swz[0] if swz else "128B"
        describe(array, rows, cols, swizzle)  # the same validation as on the GPU
        addr = _EMU_BASE + 128 * i
        models[addr] = TensorMapModel(array, rows, cols, swizzle, name=name)
        addrs.append(addr)
    return addrs, models


def gpu_maps(specs):
    """specs: [(name, device array, box_rows, box_cols[, swizzle])] -> (addresses, keep-alive objects)."""
    from ..runtime.tensormap import encode_on_gpu

    maps = [encode_on_gpu(describe(arr, rows, cols, *swz), arr) for _, arr, rows, cols, *swz in specs]
    return [m.address for m in maps], maps


class FirstColumns:
    """The first ``cols`` columns of a 2-D device array, as a tensor map sees them (shape, strides,
    dtype and the device address): step 10's D with a padded pitch. Device arrays need not support
    slicing for this."""

    def __init__(self, array, cols):
        self.array = array
        self.shape = (array.shape[0], int(cols))
        self.strides = tuple(array.strides)
        self.dtype = array.dtype

    @property
    def __cuda_array_interface__(self):
        cai = dict(self.array.__cuda_array_interface__)
        cai.update(shape=self.shape, strides=self.strides)
        return cai
