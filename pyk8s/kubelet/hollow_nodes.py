"""Simulated nodes ("hollow nodes", after kubemark and KWOK): many kubelets' API traffic from one process.

`HollowNodes(client, specs).run()` registers each node as a v1.32 kubelet does (create; if it exists, reconcile
the default labels and annotation and fill missing capacity, leaving spec, taints and other labels alone),
then keeps each one alive as the kubelet does: its Lease renewed every 10 s (with jitter; the real heartbeat,
5,000 nodes make ~500 lease writes/s), and its status computed every 10 s and written when the conditions
changed or at least every 5 minutes (upstream nodeStatusReportFrequency), by a strategic-merge PATCH of
`nodes/<name>/status`. A restarted process re-registers the same nodes: no duplicates, nothing lost. All nodes'
renewals and checks run on one clock (`heartbeats.Heartbeats`), not on two sleeping tasks per node.

The pods bound to these nodes are run by `pod_workers.PodWorkers`, one for the whole process; their logs are
served by `server.KubeletServer`, also one for the process, whose port every node registers.

Given a client per node (`node_clients`: each node as `system:node:<name>` in `system:nodes`, with a certificate
from `certificate_bootstrap`), each node makes its requests as itself, as a real kubelet does, and the Node
authorizer and NodeRestriction hold it to its own objects: it watches only its own Node and its own pods.
Without them all nodes share the process's client (the admin's, say): one connection and one watch each of pods
and nodes for thousands of nodes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..api import errors
from ..api.meta import rfc3339
from ..client.cache.factory import SharedInformerFactory
from ..client.cache.shared_informer import drop_managed_fields
from ..client.flowcontrol import retry_delay
from ..client.rest import RESTClient
from ..component_server import ComponentServer
from .heartbeats import Heartbeats, Job, workers_for
from .node_lease import NodeLease, renew_interval
from .node_status import (
    NodeSpec,
    addresses,
    conditions_changed,
    healthy_conditions,
    initial_node,
    node_status,
    reconcile_existing,
)
from .pod_workers import PodWorkers
from .server import KubeletServer

log = logging.getLogger(__name__)

STATUS_UPDATE_FREQUENCY = 10.0  # upstream nodeStatusUpdateFrequency
STATUS_REPORT_FREQUENCY = 300.0  # upstream nodeStatusReportFrequency
REGISTER_BACKOFF_CAP = 7.0  # upstream: 100 ms doubling to 7 s
# Registrations in flight at once: a thousand nodes start in seconds without a thousand connections.
REGISTER_CONCURRENCY = 32


class HollowNode:
    """One simulated kubelet's node-side state: its Node as last written, its Lease, its boot ID."""

    def __init__(self, client: RESTClient, spec: NodeSpec, index: int = 0) -> None:
        self.client = client
        self.spec = spec
        self.index = index  # its place in the process: where its pods' addresses come from
        self._pods_started = 0
        self.boot_id = str(uuid.uuid4())
        self._node_info: dict[str, Any] | None = None  # fixed for the process's life: built once
        self.node: dict[str, Any] | None = None
        self.lease = NodeLease(client, spec.name, self.uid)
        self.last_status_write = 0.0
        self._unchanged_conditions: list[dict[str, Any]] | None = None  # see status_unchanged

    def next_pod_number(self) -> int:
        self._pods_started += 1
        return self._pods_started

    def pod_cidr(self) -> str | None:
        """The node's spec.podCIDR, once the node IPAM controller has given it one."""
        return ((self.node or {}).get("spec") or {}).get("podCIDR") or None

    def uid(self) -> str | None:
        return (self.node or {}).get("metadata", {}).get("uid")

    async def register(self) -> None:
        """Create the Node, or reconcile the one a previous run left; retried with upstream's back-off."""
        delay = 0.1
        while True:
            try:
                await self._try_register()
                self.last_status_write = time.monotonic()
                return
            except (errors.StatusError, ConnectionError) as err:
                log.warning("unable to register node %s with the API server: %s", self.spec.name, err)
            await asyncio.sleep(delay)
            delay = min(delay * 2, REGISTER_BACKOFF_CAP)

    async def _try_register(self) -> None:
        fresh = initial_node(self.spec, rfc3339(), boot_id=self.boot_id)
        try:
            self.node = await self.client.create("nodes", fresh)
            return
        except errors.AlreadyExists:
            pass
        existing = await self.client.get("nodes", self.spec.name)
        changed = reconcile_existing(existing, fresh)
        if changed is not None:
            existing = await self.client.update("nodes", changed)
        # A node found again reports its current status at once (its conditions are stale after a restart).
        self.node = existing
        await self.write_status(force=True)

    def _conditions(self) -> list[dict[str, Any]]:
        assert self.node is not None
        return (self.node.get("status") or {}).get("conditions") or []

    def status_unchanged(self) -> bool:
        """Whether a status check now would write nothing, known without computing it: the report interval is not
        up, and the conditions we hold are the very ones the last check found unchanged (the new conditions are
        a function of the old ones alone; 5,000 nodes check 500 times a second)."""
        return (
            self._unchanged_conditions is not None
            and self._unchanged_conditions is self._conditions()
            and time.monotonic() - self.last_status_write < STATUS_REPORT_FREQUENCY
        )

    async def write_status(self, *, force: bool = False) -> None:
        """Compute the status; PATCH it when the conditions changed, when forced, or once the report interval is
        up (upstream tryUpdateNodeStatus)."""
        old = self._conditions()
        # Every node checks every 10 s: only the conditions can change, so only they are computed each time.
        conditions = healthy_conditions(rfc3339(), old)
        due = time.monotonic() - self.last_status_write >= STATUS_REPORT_FREQUENCY
        # The addresses too, as upstream's setters: what another client wrote there is set back at once.
        addrs = addresses(self.spec)
        moved = _addresses_differ(((self.node or {}).get("status") or {}).get("addresses"), addrs)
        if not (force or due or moved or conditions_changed(old, conditions)):
            self._unchanged_conditions = old
            return
        if self._node_info is None:
            self._node_info = node_status(self.spec, rfc3339(), boot_id=self.boot_id)["nodeInfo"]
        # The daemon endpoint too (upstream's DaemonEndpoints setter runs every time): a restarted process
        # serves on a new port.
        endpoint = {"kubeletEndpoint": {"Port": self.spec.port}}
        patch = {
            "status": {
                "conditions": conditions, "addresses": addrs, "nodeInfo": self._node_info, "daemonEndpoints": endpoint,
            }
        }  # fmt: skip
        self.node = await self.client.patch("nodes", self.spec.name, patch, subresource="status")
        self.last_status_write = time.monotonic()


def _addresses_differ(current: Any, wanted: list[dict[str, str]]) -> bool:
    """Whether the node's addresses lack one of `wanted` (the status patch merges them by type)."""
    have = {(a.get("type"), a.get("address")) for a in current or () if isinstance(a, dict)}
    return any((a["type"], a["address"]) not in have for a in wanted)


def _refresh(nodes: dict[str, HollowNode], obj: Any) -> None:
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
    node = nodes.get(name) if name else None
    if node is None or node.node is None:
        return
    # The node's own status write may be newer than what the watch delivers now: keep the newer one.
    try:
        older = int(obj["metadata"]["resourceVersion"]) < int(node.node["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        older = False
    if not older:
        node.node = obj


class HollowNodes:
    """The component: registers `specs`, keeps them alive and runs their pods until cancelled. `secure_port`
    serves /healthz, /livez and /readyz (ready once every node is registered); -1 serves none."""

    def __init__(
        self,
        client: RESTClient,
        specs: Sequence[NodeSpec],
        *,
        seed: int | None = None,
        events: bool = True,
        bind_address: str = "127.0.0.1",
        secure_port: int = -1,
        port_file: Path | None = None,
        kubelet_port: int = 0,
        node_clients: Mapping[str, RESTClient] | None = None,
    ) -> None:
        self.client = client
        clients = node_clients or {}
        self.nodes = [HollowNode(clients.get(s.name, client), s, i) for i, s in enumerate(specs)]
        by_name = {n.spec.name: n for n in self.nodes}
        # One informer factory for the process: a watch of the pods bound to any node, and one of the Nodes, so
        # that what others write to its nodes (podCIDR, taints) reaches them. Nodes with their own identities
        # each watch their own Node and pods, on their own clients.
        self.informers = SharedInformerFactory(client, transform=drop_managed_fields)
        node_factories: dict[str, SharedInformerFactory] | None = None
        if node_clients:
            node_factories = {
                n.spec.name: SharedInformerFactory(n.client, transform=drop_managed_fields) for n in self.nodes
            }
            nodes_informers = [
                f.informer_for("nodes", field_selector=f"metadata.name={name}") for name, f in node_factories.items()
            ]
        else:
            nodes_informers = [self.informers.informer_for("nodes")]
        self.factories = list(node_factories.values()) if node_factories else [self.informers]
        self.pods = PodWorkers(by_name, self.informers, events=events, node_factories=node_factories)
        pods = self.pods
        self.kubelet = KubeletServer(
            lambda ns, name: pods.pod(f"{ns}/{name}"), set(by_name), bind_address="127.0.0.1", port=kubelet_port,
        )  # fmt: skip
        for informer in nodes_informers:
            informer.add_event_handler(
                on_add=lambda obj, _initial: _refresh(by_name, obj), on_update=lambda _old, obj: _refresh(by_name, obj)
            )
        self._rng = random.Random(seed)
        self.heartbeats = Heartbeats(workers_for(len(self.nodes)))
        self.registered = asyncio.Event()
        self.serving = ComponentServer(
            "nodes", bind_address=bind_address, secure_port=secure_port, port_file=port_file,
            ready_checks={"nodes-registered": self._all_registered},
        )  # fmt: skip

    async def _all_registered(self) -> bool:
        return self.registered.is_set()

    async def run(self) -> None:
        await self.kubelet.start()
        for n in self.nodes:  # each node registers the endpoint that serves its pods' logs
            n.spec = replace(n.spec, address="127.0.0.1", port=self.kubelet.port or n.spec.port)
        try:
            await self.serving.start()
            try:
                await self._run()
            finally:
                await self.serving.stop()
        finally:
            await self.kubelet.stop()

    async def _run(self) -> None:
        slots = asyncio.Semaphore(REGISTER_CONCURRENCY)
        clock = asyncio.create_task(self.heartbeats.run())

        async def register(node: HollowNode) -> None:
            async with slots:
                await node.register()
            self._keep_alive(node)

        try:
            await asyncio.gather(*(register(n) for n in self.nodes))
            log.info("registered %d node(s)", len(self.nodes))
            self.registered.set()
            await asyncio.gather(self.pods.run(), clock)  # the pod workers start the informers
        finally:
            clock.cancel()
            await asyncio.gather(*(f.shutdown() for f in self.factories))

    def _keep_alive(self, node: HollowNode) -> None:
        """Start a registered node's heartbeats on the shared clock. As upstream's JitterUntil, the first lease
        renewal (which creates the Lease) comes at once, then every ~10 s; registration wrote a full status, and
        the first status check comes at a random point of the period, so that nodes registered together do not
        compute their statuses together."""
        now = asyncio.get_running_loop().time()
        self.heartbeats.schedule(now, self._lease_job(node))
        self.heartbeats.schedule(now + self._rng.random() * STATUS_UPDATE_FREQUENCY, self._status_job(node))

    def _lease_job(self, node: HollowNode) -> Job:
        failures = 0

        async def renew() -> float:
            nonlocal failures
            try:
                await node.lease.renew()
            except (errors.StatusError, ConnectionError) as err:
                failures += 1
                log.warning("failed to renew the lease of node %s: %s", node.spec.name, err)
                return min(retry_delay(failures), renew_interval(self._rng))
            failures = 0
            return renew_interval(self._rng)

        return renew

    def _status_job(self, node: HollowNode) -> Job:
        def period() -> float:
            return STATUS_UPDATE_FREQUENCY * (1 + self._rng.random() * 0.04)

        async def write() -> float:
            try:
                await node.write_status()
            except (errors.StatusError, ConnectionError) as err:
                log.warning("error updating the status of node %s: %s", node.spec.name, err)
            return period()

        def check() -> float | Coroutine[Any, Any, float]:
            # Nothing to write: done on the clock's own loop, no worker, no request.
            return period() if node.status_unchanged() else write()

        return check
