"""A kernel's dynamic shared memory, carved on the host into named, aligned regions.

The kernel receives the offsets as compile-time constants (closure variables of its factory);
the emulator receives the names, so its reports say "A stage 1" instead of "smem 0x4400"."""
from __future__ import annotations

from dataclasses import dataclass, field

#: B200 per-block opt-in dynamic shared memory (PTX facts sheet: CUTLASS sm100_smem_capacity_bytes).
SMEM_LIMIT = 232448


@dataclass
class SmemPlan:
    size: int = 0
    regions: list = field(default_factory=list)  # (name, offset, nbytes)

    def add(self, name, nbytes, *, align=16, count=1):
        """Reserve ``count`` consecutive regions of ``nbytes`` (each ``align``-aligned); return the
        offset of the first. Region i is at ``offset + i * stride(nbytes, align)``."""
        stride = self.stride(nbytes, align)
        off = -(-self.size // align) * align
        for i in range(count):
            label = name if count == 1 else f"{name}[{i}]"
            self.regions.append((label, off + i * stride, nbytes))
        self.size = off + count * stride
        return off

    @staticmethod
    def stride(nbytes, align):
        return -(-nbytes // align) * align

    def check(self, what):
        if self.size > SMEM_LIMIT:
            raise ValueError(f"{what} needs {self.size} bytes of shared memory per CTA; a B200 CTA can have at "
                             f"most {SMEM_LIMIT}. Reduce the pipeline depth.")
        return self
