"""The fake GPU's memory: device allocations at made-up addresses, backed by host bytes.

An allocation is freed when the array that owns it is garbage collected, as numba frees device
memory, so a launch that passes the address of memory nobody keeps alive is caught (the real GPU
would read freed memory, or fault)."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

BASE = 0x7F00_0000_0000
ALIGN = 256  # cudaMalloc and numba's allocator return 256-byte aligned memory


@dataclass
class Allocation:
    address: int
    data: np.ndarray  # uint8, the bytes
    kind: str         # "device" or "mapped"
    live: bool = True

    @property
    def nbytes(self) -> int:
        return self.data.size


class FakeMemory:
    def __init__(self):
        self._next = BASE
        self.allocations: dict[int, Allocation] = {}

    def allocate(self, nbytes: int, kind="device") -> Allocation:
        nbytes = max(int(nbytes), 1)
        alloc = Allocation(self._next, np.zeros(nbytes, np.uint8), kind)
        self.allocations[alloc.address] = alloc
        self._next += -(-nbytes // ALIGN) * ALIGN + ALIGN  # a gap: an overrun does not land in a neighbour
        return alloc

    def find(self, address: int, nbytes: int = 1, *, what="memory") -> tuple[Allocation, int]:
        """The live allocation holding [address, address + nbytes), and the offset in it; else raise
        the error the real GPU would give (an illegal address)."""
        address = int(address)
        for alloc in self.allocations.values():
            if alloc.address <= address < alloc.address + alloc.nbytes:
                if not alloc.live:
                    raise FakeFreedMemory(f"{what} at {address:#x} was freed (nothing kept its device array alive)")
                off = address - alloc.address
                if off + nbytes > alloc.nbytes:
                    raise FakeIllegalAddress(f"{what} [{address:#x}, +{nbytes}) runs past the end of its "
                                             f"{alloc.nbytes} B allocation at {alloc.address:#x}")
                return alloc, off
        raise FakeIllegalAddress(f"{what} at {address:#x} is not device memory")

    def read(self, address: int, nbytes: int, *, what="memory") -> bytes:
        alloc, off = self.find(address, nbytes, what=what)
        return alloc.data[off:off + nbytes].tobytes()


class FakeIllegalAddress(RuntimeError):
    """CUDA_ERROR_ILLEGAL_ADDRESS, as the fake reports it."""


class FakeFreedMemory(FakeIllegalAddress):
    """An address inside device memory that has been freed."""


class FakeDeviceArray:
    """What ``numba.cuda.to_device`` returns, on the fake GPU: shape, dtype, strides, the CUDA array
    interface, numba's type, and copies to and from the host."""

    def __init__(self, memory: FakeMemory, shape, dtype):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in (shape if isinstance(shape, tuple) else (shape,)))
        self.shape, self.dtype = shape, dtype
        self.size = int(np.prod(shape)) if shape else 1
        self.ndim = len(shape)
        self.strides = _c_strides(shape, dtype)
        self.nbytes = self.size * dtype.itemsize
        self._alloc = memory.allocate(self.nbytes)
        weakref.finalize(self, _free, self._alloc)

    # -- what numba and our runtime read --------------------------------------------------------
    @property
    def _numba_type_(self):
        return types.Array(from_dtype(self.dtype), self.ndim, "C")

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "strides": None, "typestr": self.dtype.str,
                "data": (self._alloc.address, False), "version": 3}

    @property
    def device_address(self) -> int:
        return self._alloc.address

    def host_view(self) -> np.ndarray:
        """The device bytes as an array (what a kernel would read and write)."""
        return self._alloc.data[:self.nbytes].view(self.dtype).reshape(self.shape)

    def copy_to_host(self, ary=None, stream=0):
        out = self.host_view().copy()
        if ary is not None:
            ary[...] = out
            return ary
        return out

    def copy_to_device(self, ary, stream=0):
        ary = np.asarray(ary)
        if ary.nbytes != self.nbytes:
            raise ValueError(f"copy_to_device: {ary.nbytes} B into a {self.nbytes} B device array")
        self._alloc.data[:self.nbytes] = np.ascontiguousarray(ary).view(np.uint8).ravel()

    def __repr__(self):
        return f"FakeDeviceArray(shape={self.shape}, dtype={self.dtype}, address={self._alloc.address:#x})"


def _c_strides(shape, dtype):
    out, acc = [], np.dtype(dtype).itemsize
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def _free(alloc: Allocation):
    alloc.live = False


class FakeMappedArray(np.ndarray):
    """``numba.cuda.mapped_array``: host memory the GPU can also address (a numpy array with a CUDA
    array interface whose pointer is the fake device address of the same bytes)."""

    def __array_finalize__(self, obj):
        self._alloc = getattr(obj, "_alloc", None)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "strides": None, "typestr": self.dtype.str,
                "data": (self._alloc.address, False), "version": 3}


def mapped_array(memory: FakeMemory, shape, dtype) -> FakeMappedArray:
    dtype = np.dtype(dtype)
    shape = tuple(shape) if isinstance(shape, tuple) else (int(shape),)
    alloc = memory.allocate(int(np.prod(shape)) * dtype.itemsize, kind="mapped")
    arr = alloc.data[:int(np.prod(shape)) * dtype.itemsize].view(dtype).reshape(shape).view(FakeMappedArray)
    arr._alloc = alloc
    return arr
