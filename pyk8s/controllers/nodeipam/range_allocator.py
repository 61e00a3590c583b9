"""The node IPAM controller with upstream's default RangeAllocator (upstream: pkg/controller/nodeipam,
ipam/range_allocator.go): with `--allocate-node-cidrs`, each Node gets spec.podCIDR and spec.podCIDRs, one subnet
of `--node-cidr-mask-size` (24 for IPv4, 64 for IPv6 by default) from each `--cluster-cidr`.

At start the subnets the existing nodes hold are marked used (the controller keeps no state of its own); a
node's subnets are released when it goes. When a cluster CIDR is used up the node gets a CIDRNotAvailable event
(source cidrAllocator) and is tried again with back-off.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ...api import errors
from ...client.cache import SharedInformerFactory
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue, process_items
from .. import nodeutil
from ..workers import run_workers
from .cidrset import CIDRSet, CIDRSetError, IPNetwork

log = logging.getLogger(__name__)

CIDR_UPDATE_RETRIES = 3
WORKERS = 30  # upstream cidrUpdateWorkers


def parse_cluster_cidrs(text: str) -> list[IPNetwork]:
    """`--cluster-cidr`: one CIDR, or an IPv4 and an IPv6 one (dual stack)."""
    cidrs: list[IPNetwork] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            cidrs.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"--cluster-cidr: invalid CIDR {part!r}") from None
    if not cidrs:
        raise ValueError("--cluster-cidr must be set when --allocate-node-cidrs is true")
    if len(cidrs) > 2 or (len(cidrs) == 2 and cidrs[0].version == cidrs[1].version):
        raise ValueError("--cluster-cidr: at most one IPv4 and one IPv6 CIDR (dual stack)")
    return cidrs


def mask_sizes(cidrs: Sequence[IPNetwork], size: int = 0, size_v4: int = 0, size_v6: int = 0) -> list[int]:
    """The node mask size for each cluster CIDR: `--node-cidr-mask-size` when given, else the per-family flag,
    else upstream's defaults (24, 64)."""
    return [size or (size_v4 or 24 if c.version == 4 else size_v6 or 64) for c in cidrs]


def _pod_cidrs(node: Mapping[str, Any]) -> list[str]:
    spec = node.get("spec") or {}
    return [c for c in spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []) if isinstance(c, str)]


class NodeIpamController:
    def __init__(
        self,
        client: RESTClient,
        factory: SharedInformerFactory,
        *,
        cluster_cidrs: Sequence[IPNetwork],
        node_mask_sizes: Sequence[int],
        service_cidr: IPNetwork | None = None,
    ) -> None:
        try:
            self.cidr_sets = [CIDRSet(c, m) for c, m in zip(cluster_cidrs, node_mask_sizes, strict=True)]
        except CIDRSetError as err:
            raise ValueError(str(err)) from None
        for s in self.cidr_sets:
            if service_cidr is not None:
                s.occupy(service_cidr)  # upstream's filterOutServiceRange
        self.client = client
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("cidrAllocator")
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="node_ipam")
        # What this controller wrote, until the informer shows it: a node changed meanwhile must not get a second
        # subnet (upstream keeps a nodesInProcessing set for the same reason).
        self.assigned: dict[str, list[str]] = {}
        self.nodes = factory.informer_for("nodes")
        self.nodes.add_event_handler(
            on_add=lambda n, _i: self.queue.add(n["metadata"]["name"]),
            on_update=lambda _o, n: None if _pod_cidrs(n) else self.queue.add(n["metadata"]["name"]),
            on_delete=lambda n: self.release_cidrs(getattr(n, "obj", n)),
        )

    async def run(self) -> None:
        await self.nodes.wait_for_sync()
        # The existing nodes' subnets first, so that nothing handed out now collides with them.
        for node in self.nodes.indexer.list():
            self.occupy_cidrs(node)
        tasks = [asyncio.create_task(self._worker()) for _ in range(WORKERS)]
        await run_workers(tasks, [self.queue], self.broadcaster)

    async def _worker(self) -> None:
        await process_items(
            self.queue, self.sync_node, "node ipam: node", retry=True,
            expected=(errors.StatusError, ConnectionError, CIDRSetError),
        )  # fmt: skip

    def _parsed(self, node: Mapping[str, Any]) -> list[IPNetwork]:
        out = []
        for c in _pod_cidrs(node):
            try:
                out.append(ipaddress.ip_network(c, strict=False))
            except ValueError:
                log.warning("node %s has an invalid podCIDR %r", node["metadata"]["name"], c)
        return out

    def occupy_cidrs(self, node: Mapping[str, Any]) -> None:
        for cidr in self._parsed(node):
            for s in self.cidr_sets:
                s.occupy(cidr)

    def release_cidrs(self, node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        written = self.assigned.pop(node["metadata"]["name"], None)
        cidrs = self._parsed(node) or [ipaddress.ip_network(c) for c in written or ()]
        for cidr in cidrs:
            for s in self.cidr_sets:
                s.release(cidr)

    async def sync_node(self, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return
        if node["metadata"].get("deletionTimestamp"):
            self.release_cidrs(node)
            return
        await self.allocate_or_occupy_cidr(node)

    async def allocate_or_occupy_cidr(self, node: Mapping[str, Any]) -> None:
        if _pod_cidrs(node):
            self.assigned.pop(node["metadata"]["name"], None)
            self.occupy_cidrs(node)
            return
        if node["metadata"]["name"] in self.assigned:
            return
        allocated: list[IPNetwork] = []
        for i, s in enumerate(self.cidr_sets):
            try:
                allocated.append(s.allocate_next())
            except CIDRSetError as err:
                for c, owner in zip(allocated, self.cidr_sets, strict=False):
                    owner.release(c)
                nodeutil.record_node_status_change(self.recorder, node, "CIDRNotAvailable")
                raise CIDRSetError(f"failed to allocate cidr from cluster cidr at idx:{i}: {err}") from None
        await self._update_cidrs_allocation(node["metadata"]["name"], allocated)

    async def _update_cidrs_allocation(self, name: str, allocated: list[IPNetwork]) -> None:
        cidrs = [str(c) for c in allocated]
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            self._release(allocated)
            return
        existing = _pod_cidrs(node)
        if existing:
            if existing != cidrs:
                log.info("node %s already has a CIDR allocated %s; releasing the new one", name, existing)
                self._release(allocated)
            return
        last: Exception | None = None
        for _ in range(CIDR_UPDATE_RETRIES):
            try:
                await self.client.patch("nodes", name, {"spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs}})
                self.assigned[name] = cidrs
                log.info("node %s: podCIDRs %s", name, ", ".join(cidrs))
                return
            except errors.NotFound:
                self._release(allocated)
                return
            except (errors.StatusError, ConnectionError) as err:
                last = err
        nodeutil.record_node_status_change(self.recorder, node, "CIDRAssignmentFailed")
        self._release(allocated)
        raise errors.internal_error(f"failed to update node {name} podCIDR to {cidrs}: {last}")

    def _release(self, allocated: list[IPNetwork]) -> None:
        for c in allocated:
            for s in self.cidr_sets:
                s.release(c)
