"""One event schema for traces: the emulator's virtual clock and, later, %globaltimer on a GPU.

An event is one operation by one unit or thread role, with a start and an end time in nanoseconds.
The timeline renderer (``gemm_kernels.timeline``) draws any list of these.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Event:
    lane: str  # the row of the timeline: "TMA", "tensor core", "MMA issuer", "writeback", ...
    op: str  # "tma.load", "mma", "commit", "wait", "arrive", "tmem.ld", "store", ...
    start: float  # ns
    end: float  # ns
    cta: int = 0
    warp: int = -1
    barrier: str = ""
    stage: int = -1
    phase: int = -1
    nbytes: int = 0
    flops: int = 0
    detail: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Trace:
    events: list = field(default_factory=list)
    source: str = "emulator (virtual clock: a model, not a measurement)"
    #: CTA and cluster barrier waits (``bar.sync``/``bar.arrive`` on a named barrier, the cluster
    #: barrier), kept apart from ``events`` so that the timelines draw what they drew before; the
    #: structure diagrams and the trace view's warp states read them
    syncs: list = field(default_factory=list)

    def add(self, **kw):
        self.events.append(Event(**kw))

    def lanes(self):
        seen = []
        for e in self.events:
            if e.lane not in seen:
                seen.append(e.lane)
        return seen

    def span(self):
        if not self.events:
            return 0.0, 0.0
        return min(e.start for e in self.events), max(e.end for e in self.events)

    def filter(self, **match):
        return [e for e in self.events if all(getattr(e, k) == v for k, v in match.items())]


#: Role codes a kernel passes to ``ptx.set_warp_role`` (an int, since device code has no strings).
ROLE_TMA, ROLE_MMA, ROLE_WRITEBACK, ROLE_WRITEBACK1, ROLE_MMA1, ROLE_ALL, ROLE_SCHEDULER = 1, 2, 3, 4, 5, 6, 7
ROLES = {ROLE_TMA: "TMA producer", ROLE_MMA: "MMA issuer", ROLE_WRITEBACK: "writeback",
         ROLE_WRITEBACK1: "writeback 1", ROLE_MMA1: "MMA issuer 1", ROLE_ALL: "all warps",
         ROLE_SCHEDULER: "tile scheduler"}
