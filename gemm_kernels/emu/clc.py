"""Cluster launch control (CLC): a running cluster cancels a cluster of its grid that has not started
and takes over its work (``clusterlaunchcontrol.try_cancel``, sm_100).

A kernel scheduled this way is launched with one cluster per tile. Only as many clusters as fit on
the chip run at once (``resident``); the others wait to be launched. A request cancels one of the
waiting clusters, which then never starts, and writes a 16-byte response into shared memory
(multicast: into every CTA of the requesting cluster, at the same offset) that names the first CTA
of the cancelled cluster, or says that none was left (a failed response). The response completes
16 transaction bytes on an mbarrier at the same offset in each receiving CTA. The response's
encoding is opaque in the PTX ISA; ours (x, y, z of the first CTA and a flag, four 32-bit words)
is read only by ``clusterlaunchcontrol.query_cancel``'s twin.

Which waiting cluster a request gets. The emulator runs one cluster at a time, so resident clusters
cannot race for waiting ones; the unit decides the race instead, unevenly under every policy (an even
share is what a static schedule gives, and a kernel must not rely on it). Under the lazy and eager
policies each waiting cluster is given, at launch, to a resident cluster drawn from a generator seeded
with the launch's seed (the same seed gives the same shares), and a requester takes its own clusters
in order; some resident clusters get several, some none. Under the random policy it hands out the
lowest waiting cluster, so the first cluster to ask takes all the work and the others' first requests
fail (a schedule the chip can also produce).

The rules the ISA states, each reported here: no request after the CTA has observed a failed
response (undefined behaviour); no read of a response before its mbarrier phase completed; and
(drain.py, through ``barriers``) no CTA exits while a response to it is still in flight."""
from __future__ import annotations

import numpy as np

from . import costmodel
from . import relaxed as relaxed_rule
from .errors import EmulatorError
from .hb import TMA
from .memory import RANK_SHIFT
from .scheduler import AsyncOp
from .source import site, text

RESPONSE_BYTES = 16


class ClcRuleError(EmulatorError):
    """A kernel broke one of the PTX ISA's rules for clusterlaunchcontrol."""


class ClcUnit:
    """The launch's cluster launch control: which clusters wait, which are cancelled."""

    def __init__(self, launch, resident, policy, seed=0):
        self.launch = launch
        self.clusters = {index: blocks for index, blocks in launch.clusters()}
        self.total = len(self.clusters)
        self.resident = max(1, min(int(resident), self.total))
        self.greedy = policy == "random"
        self.cancelled = set()
        self.started = set()
        # the resident cluster (slot) each waiting cluster goes to, drawn once per launch: uneven shares;
        # the performance model's timing runs keep the even share (cluster q to slot q mod resident), the
        # average of the chip's race, which its 1- and 2-tile runs of cluster 0 count on (perf/share.py)
        draw = (np.arange(self.total) % self.resident if launch.timing
                else np.random.default_rng(seed).integers(0, self.resident, size=self.total))
        self.share = [[q for q in range(self.resident, self.total) if draw[q] == s] for s in range(self.resident)]

    def starts(self, index):
        """Cluster ``index`` starts (it was resident, or launched when a resident one finished)."""
        self.started.add(index)

    def waiting(self, index):
        return index < self.total and index not in self.cancelled and index not in self.started

    def cancel_for(self, requester):
        """The cluster a request by cluster ``requester`` cancels, or None (a failed response)."""
        if self.greedy:
            q = next((i for i in range(self.resident, self.total) if self.waiting(i)), None)
        else:
            q = next((i for i in self.share[requester % self.resident] if self.waiting(i)), None)
        if q is not None:
            self.cancelled.add(q)
        return q

    def response(self, q):
        """The 16 response bytes for cancelled cluster ``q`` (None: failed)."""
        words = np.zeros(4, np.uint32)
        if q is not None:
            words[:3] = self.clusters[q][0]
            words[3] = 1
        return words.view(np.uint8)


def decode(resp):
    """(is_canceled, first ctaid x, y, z) of 16 response bytes."""
    words = np.asarray(resp, np.uint8).view(np.uint32)
    return int(words[3] & 1), int(words[0]), int(words[1]), int(words[2])


class ClcRequest(AsyncOp):
    unit = "CLC"
    drain_advice = ("Wait for every response you asked for, the last (failed) one included, before the CTA exits: "
                    "each CTA of the cluster receives it.")

    def __init__(self, thread, resp_off, bar_off):
        cta = thread.cta
        seen = getattr(cta, "clc_failed_seen", {})
        if seen:
            # cite the requesting warp's own read of the failure where it made one (another role's read is
            # not where the requester's loop went wrong)
            where = seen.get(thread.warp.index) or next(iter(seen.values()))
            raise ClcRuleError(
                f"{thread} issued clusterlaunchcontrol.try_cancel at {text(site(2))} after CTA {cta.rank_text()} had "
                f"observed a failed response (at {text(where)}): the PTX ISA leaves a request after a "
                f"failed one undefined. Stop requesting once query_cancel.is_canceled reads false.")
        unit = cta.launch.clc
        if unit is None:
            raise ClcRuleError(f"{thread} issued clusterlaunchcontrol.try_cancel at {text(site(2))}, but this launch was "
                               f"not made for cluster launch control (emu.run(..., resident=R))")
        super().__init__(thread, f"clusterlaunchcontrol.try_cancel by {thread} (response at "
                                 f"{cta.smem.name_of(resp_off)}, signalling the mbarrier at {cta.smem.name_of(bar_off)} "
                                 f"of each CTA)")
        if resp_off % 16:
            raise ClcRuleError(f"{thread}: the try_cancel response at shared offset 0x{resp_off:x} is not 16-byte aligned")
        self.site = site(2)
        self.ctas = list(cta.cluster.ctas)  # multicast::cluster::all
        self.bars = [c.mbarrier(_addr(c, bar_off), "clusterlaunchcontrol.try_cancel barrier") for c in self.ctas]
        for b in self.bars:
            b.signal_from(thread)
        self.resp_off = resp_off
        self.cancelled = unit.cancel_for(cta.cluster.index)
        self.data = unit.response(self.cancelled)
        self.slot, self.vc = thread.warp.clock.async_op(TMA)
        self.end = thread.clock + costmodel.of(thread).tma_latency_cycles  # a stand-in: an L2 round trip (not calibrated)
        addrs = np.arange(resp_off, resp_off + RESPONSE_BYTES)
        for c in self.ctas:
            c.smem.check(resp_off, RESPONSE_BYTES, "try_cancel response")
            c.smem.touch_async(addrs, True, self.slot, self.vc, self.site,
                               f"the try_cancel response issued by {thread}", thread)
            c.clc_in_flight = getattr(c, "clc_in_flight", {})
            c.clc_in_flight[resp_off] = self
            if c is not cta:
                c.remote_access(thread, self.slot, int(self.vc[self.slot]), self.site, "a try_cancel response (multicast)")
        what = "failed" if self.cancelled is None else f"cancels cluster {self.cancelled}"
        thread.event(thread.warp_role(), "clc.try_cancel", thread.clock, thread.clock + 1, detail=what,
                     barrier=self.bars[0].name, nbytes=RESPONSE_BYTES,
                     extra={"ptx": f"clusterlaunchcontrol.try_cancel (its {RESPONSE_BYTES}-byte response completes "
                                   f"{self.bars[0].name} in each CTA of the cluster)"})

    def execute(self):
        for c, bar in zip(self.ctas, self.bars):
            c.smem.async_write_scatter(np.arange(self.resp_off, self.resp_off + RESPONSE_BYTES), self.data)
            c.clc_in_flight.pop(self.resp_off, None)
            c.clc_landed = getattr(c, "clc_landed", {})
            c.clc_landed[self.resp_off] = self
            bar.complete_tx(RESPONSE_BYTES, "the try_cancel response", at=self.end, vc=self.vc, op=self)

    def barriers(self):
        return tuple(self.bars)

    def arrival_text(self):
        return f"the response of clusterlaunchcontrol.try_cancel issued by {self.issuer} at {text(self.site)}"


def own_address(thread, resp, resp_cta, bar, bar_cta):
    """try_cancel's operands are ``.shared::cta`` addresses: the issuing CTA's own shared memory (the
    multicast then writes the same offsets in every CTA of the cluster). An address with a peer's rank
    bits (from ``mapa``) is outside the issuing CTA's window: the PTX ISA leaves it undefined."""
    for name, addr, cta in (("response", resp, resp_cta), ("mbarrier", bar, bar_cta)):
        if cta is not thread.cta:
            raise ClcRuleError(
                f"{thread} issued clusterlaunchcontrol.try_cancel at {text(site(1))} with the {name} address "
                f"0x{int(addr):x}, which names shared memory of CTA {cta.rank_text()}, not of its own CTA "
                f"{thread.cta.rank_text()}: try_cancel takes .shared::cta addresses (the multicast writes the same "
                f"offset in every CTA of the cluster). Pass the issuing CTA's own address, not one from mapa.")


def _addr(cta, off):
    """The shared-window address of offset ``off`` in ``cta`` (its rank bits set)."""
    return (cta.rank << RANK_SHIFT) | off


def read_response(thread, resp_addr):
    """The 16 bytes of a response at ``resp_addr`` as ``query_cancel`` reads them, after checking
    that its barrier phase completed and was observed by this thread (the response's write is
    ordered before the read)."""
    cta, off = thread.cta.resolve(resp_addr, RESPONSE_BYTES, "clusterlaunchcontrol.query_cancel")
    inflight = getattr(cta, "clc_in_flight", {}).get(off)
    landed = getattr(cta, "clc_landed", {}).get(off)
    op = inflight or landed
    if op is None or inflight is not None or thread.warp.clock.vc[op.slot] < op.vc[op.slot]:
        if op is None:
            state, bar = "no try_cancel has written a response there yet", "its mbarrier"
        else:
            entry = relaxed_rule.covering(thread.warp.clock, op.slot, op.vc[op.slot]) if inflight is None else None
            if entry is not None:  # only a relaxed wait stood between the response's write and this read
                relaxed_rule.report(entry, f"clusterlaunchcontrol.query_cancel by {thread} at {text(site(2))}",
                                    op.arrival_text())
            state = (f"the response of {op.arrival_text()} "
                     + ("has not landed yet" if inflight is not None else "landed, but no wait on its barrier orders it"))
            bar = op.bars[0].name
        raise ClcRuleError(
            f"{thread} read a try_cancel response at {text(site(2))} ({cta.smem.name_of(off)} of CTA {cta.rank_text()}) "
            f"before its mbarrier phase completed: {state}. Wait on {bar} for the phase that the response completes "
            f"first (the PTX ISA: the response is valid only once the mbarrier's complete_tx has been observed).")
    cta.smem.touch(off, off + RESPONSE_BYTES, False, site(2), thread)
    resp = cta.smem.buffer[off:off + RESPONSE_BYTES].copy()
    ok, x, y, z = decode(resp)
    if not ok:
        seen = thread.cta.__dict__.setdefault("clc_failed_seen", {})  # warp index -> its read of the failure
        seen.setdefault(thread.warp.index, site(2))
    return ok, x, y, z
