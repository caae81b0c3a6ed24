"""Shared memory accesses that Numba's array indexing cannot express: one 16-byte store."""
import numpy as np

from ..emu.context import thread as _thread
from ._declare import asm_op, twin, u32

st_shared_v4 = asm_op(
    "st_shared_v4", "st.shared.v4.b32 [{addr}], {{{a}, {b}, {c}, {d}}};",
    operands=(("addr", u32), ("a", u32), ("b", u32), ("c", u32), ("d", u32)),
    doc="Store four 32-bit values as one 16-byte shared-memory access at ``addr`` (16-byte aligned). "
        "With a 128B-swizzled layout, the 8 lanes of a quarter-warp that write 8 consecutive rows hit "
        "8 different 16-byte bank groups: no bank conflict, and a quarter of the store instructions.")


@twin(st_shared_v4)
def _st_shared_v4(addr, a, b, c, d):
    t = _thread()
    cta, off = t.cta.resolve(addr, 16, "st.shared.v4")
    if off % 16:
        raise ValueError(f"st.shared.v4 at 0x{int(addr):x}: not 16-byte aligned")
    cta.smem.store(off, np.array([a, b, c, d], dtype=np.uint32).view(np.uint8), t)
    t.advance()
