"""The node lifecycle controller (upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go).

Every `--node-monitor-period` it looks at each node's health signals, its Lease in kube-node-lease and the Ready
condition's heartbeat: a node with neither renewed for `--node-monitor-grace-period` (`--node-startup-grace-period`
before it first reported) has Ready, MemoryPressure, DiskPressure and PIDPressure set to Unknown
("NodeStatusUnknown", "Kubelet stopped posting node status."). Its pods are marked not Ready, and the node is
queued, per zone and rate-limited (see zones and rate_limited_queue), for the NoExecute taint that says why:
`node.kubernetes.io/not-ready` for Ready=False, `node.kubernetes.io/unreachable` for Unknown. The
taint-eviction controller then deletes the pods that do not tolerate it. A node Ready again loses both taints.

Beside that, on every node change, the NoSchedule taints follow the node's conditions (upstream's
TaintNodesByCondition half: not-ready, unreachable, memory/disk/pid-pressure, network-unavailable, and
unschedulable for spec.unschedulable), and the beta os/arch labels follow the stable ones.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any

from ...api import errors, meta
from ...client.cache import SharedInformerFactory
from ...client.cache.indexer import split_meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import Queue, RateLimitingQueue, process_items
from .. import nodeutil
from ..nodeutil import TAINT_NOT_READY, TAINT_UNREACHABLE
from ..workers import run_workers
from .rate_limited_queue import NODE_EVICTION_PERIOD, NODE_HEALTH_UPDATE_RETRY, RateLimitedTimedQueue, TimedValue
from .zones import EvictionRates, ZoneState

log = logging.getLogger(__name__)

UNREACHABLE_TAINT = {"key": TAINT_UNREACHABLE, "effect": "NoExecute"}
NOT_READY_TAINT = {"key": TAINT_NOT_READY, "effect": "NoExecute"}

# Which condition in which status gives which NoSchedule taint, and back.
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONDITION_TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# The conditions the kubelet owns and the controller sets to Unknown when it stops hearing from it
# (NetworkUnavailable is the network provider's).
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
LABEL_EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
LABEL_RECONCILE = (("kubernetes.io/os", "beta.kubernetes.io/os"), ("kubernetes.io/arch", "beta.kubernetes.io/arch"))
NODE_UPDATE_WORKERS = 8
POD_UPDATE_WORKERS = 4
RETRY_SLEEP = 0.02


@dataclass
class NodeHealth:
    """What the controller last saw of a node, with its own (monotonic) clock's times of seeing it."""

    probe_timestamp: float
    ready_transition_timestamp: float
    status: dict[str, Any]
    lease_renew_time: dt.datetime | None = None


def _ready(status: dict[str, Any]) -> dict[str, Any] | None:
    return nodeutil.get_condition({"status": status}, "Ready")


def _renew_time(lease: dict[str, Any] | None) -> dt.datetime | None:
    raw = ((lease or {}).get("spec") or {}).get("renewTime")
    try:
        return meta.parse_time(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


class NodeLifecycleController:
    def __init__(
        self,
        client: RESTClient,
        factory: SharedInformerFactory,
        *,
        node_monitor_period: float = 5.0,
        node_startup_grace_period: float = 60.0,
        node_monitor_grace_period: float = 50.0,
        rates: EvictionRates | None = None,
    ) -> None:
        self.client = client
        self.node_monitor_period = node_monitor_period
        self.node_startup_grace_period = node_startup_grace_period
        self.node_monitor_grace_period = node_monitor_grace_period
        self.rates = rates or EvictionRates()
        self.now = time.monotonic
        self.known_nodes: dict[str, dict[str, Any]] = {}
        self.health: dict[str, NodeHealth] = {}
        self.zone_states: dict[str, ZoneState] = {}
        self.zone_tainter: dict[str, RateLimitedTimedQueue] = {}
        self.nodes_to_retry: set[str] = set()
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder("node-controller")
        self.node_queue: Queue[str] = Queue(name="node_lifecycle_controller")
        self.pod_queue: RateLimitingQueue[str] = RateLimitingQueue(name="node_lifecycle_controller_pods")
        self.nodes = factory.informer_for("nodes")
        self.leases = factory.informer_for("leases")
        self.pods = factory.informer_for("pods")
        self.pods_on = nodeutil.pods_by_node(self.pods)
        self.nodes.add_event_handler(
            on_add=lambda n, _initial: self.node_queue.add(n["metadata"]["name"]),
            on_update=lambda _old, n: self.node_queue.add(n["metadata"]["name"]),
            on_delete=lambda n: self.nodes_to_retry.discard(getattr(n, "key", None) or n["metadata"]["name"]),
        )
        self.pods.add_event_handler(on_add=lambda p, _i: self._pod_updated(None, p), on_update=self._pod_updated)

    # -- events in ------------------------------------------------------------------------------------

    def _pod_updated(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        node = (new.get("spec") or {}).get("nodeName")
        if node and (old is None or (old.get("spec") or {}).get("nodeName") != node):
            self.pod_queue.add(f"{new['metadata'].get('namespace', '')}/{new['metadata']['name']}")

    def _node(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.nodes.indexer.get_by_key(name)
        return found

    # -- run ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        await asyncio.gather(self.nodes.wait_for_sync(), self.leases.wait_for_sync(), self.pods.wait_for_sync())
        tasks = [asyncio.create_task(self._node_worker()) for _ in range(NODE_UPDATE_WORKERS)]
        tasks += [asyncio.create_task(self._pod_worker()) for _ in range(POD_UPDATE_WORKERS)]
        tasks.append(asyncio.create_task(self._every(NODE_EVICTION_PERIOD, self.do_no_execute_tainting_pass)))
        tasks.append(asyncio.create_task(self._every(self.node_monitor_period, self.monitor_node_health)))
        await run_workers(tasks, [self.node_queue, self.pod_queue], self.broadcaster)

    async def _every(self, period: float, fn: Any) -> None:
        while True:
            started = time.monotonic()
            try:
                await fn()
            except (errors.StatusError, ConnectionError) as err:
                log.info("node lifecycle: %s; will retry", err)
            except Exception:
                log.exception("node lifecycle: %s failed", getattr(fn, "__name__", fn))
            await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))

    async def _node_worker(self) -> None:
        await process_items(self.node_queue, self._process_node, "node lifecycle: processing node")

    async def _process_node(self, name: str) -> None:
        await self.do_no_schedule_tainting_pass(name)
        await self.reconcile_node_labels(name)

    async def _pod_worker(self) -> None:
        await process_items(self.pod_queue, self.process_pod, "node lifecycle: processing pod", retry=True)

    # -- NoSchedule taints from conditions ---------------------------------------------------------------

    async def do_no_schedule_tainting_pass(self, name: str) -> None:
        node = self._node(name)
        if node is None:
            return
        wanted: list[dict[str, Any]] = []
        for c in (node.get("status") or {}).get("conditions") or ():
            key = CONDITION_TAINTS.get(c.get("type"), {}).get(c.get("status"))
            if key:
                wanted.append({"key": key, "effect": "NoSchedule"})
        if (node.get("spec") or {}).get("unschedulable"):
            wanted.append({"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"})
        present = [
            t for t in nodeutil.taints_of(node)
            if t.get("effect") == "NoSchedule" and (t.get("key") in CONDITION_TAINT_KEYS or t.get("key") == TAINT_UNSCHEDULABLE)
        ]  # fmt: skip
        add = [t for t in wanted if not nodeutil.taint_exists(present, t)]
        remove = [t for t in present if not nodeutil.taint_exists(wanted, t)]
        if add or remove:
            if not await nodeutil.swap_node_controller_taint(self.client, add, remove, node):
                log.warning("failed to swap the NoSchedule taints of node %s", name)

    async def reconcile_node_labels(self, name: str) -> None:
        node = self._node(name)
        labels = ((node or {}).get("metadata") or {}).get("labels")
        if not labels:
            return
        update = {beta: labels[ga] for ga, beta in LABEL_RECONCILE if ga in labels and labels.get(beta) != labels[ga]}
        if update:
            try:
                await self.client.patch("nodes", name, {"metadata": {"labels": update}})
            except errors.NotFound:
                pass

    # -- NoExecute taints, rate-limited per zone -------------------------------------------------------

    async def do_no_execute_tainting_pass(self) -> None:
        for zone in list(self.zone_tainter):
            await self.zone_tainter[zone].try_process(self._taint_one)

    async def _taint_one(self, value: TimedValue) -> tuple[bool, float]:
        node = self._node(value.value)
        if node is None:
            return True, 0.0
        ready = nodeutil.get_condition(node, "Ready")
        if ready is None:
            return False, 0.05
        # The two taints mirror Ready and exclude each other.
        if ready.get("status") == "False":
            add, opposite = NOT_READY_TAINT, UNREACHABLE_TAINT
        elif ready.get("status") == "Unknown":
            add, opposite = UNREACHABLE_TAINT, NOT_READY_TAINT
        else:
            return True, 0.0  # Ready again meanwhile
        return await nodeutil.swap_node_controller_taint(self.client, [add], [opposite], node), 0.0

    def _tainter(self, node: dict[str, Any]) -> RateLimitedTimedQueue:
        return self._tainter_for_zone(nodeutil.zone_key(node))

    def add_pod_evictor_for_new_zone(self, node: dict[str, Any]) -> None:
        zone = nodeutil.zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = ZoneState.INITIAL
            self.zone_tainter[zone] = RateLimitedTimedQueue(self.rates.eviction_rate)

    def mark_node_for_tainting(self, node: dict[str, Any], status: str) -> bool:
        taints = nodeutil.taints_of(node)
        tainter = self._tainter(node)
        wanted = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
        if not nodeutil.taint_exists(taints, wanted):
            tainter.remove(node["metadata"]["name"])
        return tainter.add(node["metadata"]["name"], node["metadata"].get("uid", ""))

    async def mark_node_as_reachable(self, node: dict[str, Any]) -> bool:
        """Take both NoExecute taints off; True if the node was waiting to be tainted."""
        present = [
            t for t in (UNREACHABLE_TAINT, NOT_READY_TAINT) if nodeutil.taint_exists(nodeutil.taints_of(node), t)
        ]
        if present and not await nodeutil.swap_node_controller_taint(self.client, [], present, node):
            raise errors.internal_error(f"failed to remove taints from node {node['metadata']['name']}")
        return self._tainter(node).remove(node["metadata"]["name"])

    async def process_taint_based_eviction(self, node: dict[str, Any], observed: dict[str, Any]) -> None:
        taints = nodeutil.taints_of(node)
        status = observed.get("status")
        if status == "False":
            # Already tainted unreachable: swap at once rather than wait for the limiter.
            if nodeutil.taint_exists(taints, UNREACHABLE_TAINT):
                await nodeutil.swap_node_controller_taint(self.client, [NOT_READY_TAINT], [UNREACHABLE_TAINT], node)
            elif self.mark_node_for_tainting(node, "False"):
                log.info("node %s is NotReady; queued for tainting", node["metadata"]["name"])
        elif status == "Unknown":
            if nodeutil.taint_exists(taints, NOT_READY_TAINT):
                await nodeutil.swap_node_controller_taint(self.client, [UNREACHABLE_TAINT], [NOT_READY_TAINT], node)
            elif self.mark_node_for_tainting(node, "Unknown"):
                log.info("node %s is unresponsive; queued for tainting", node["metadata"]["name"])
        elif status == "True":
            try:
                if await self.mark_node_as_reachable(node):
                    log.info("node %s is healthy again; its taints are removed", node["metadata"]["name"])
            except errors.StatusError as err:
                log.warning("%s; will retry", err.message)

    # -- health ----------------------------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        nodes: list[dict[str, Any]] = self.nodes.indexer.list()
        added, deleted, new_zone = self._classify(nodes)
        for n in new_zone:
            self.add_pod_evictor_for_new_zone(n)
        for n in added:
            name = n["metadata"]["name"]
            nodeutil.record_node_event(
                self.recorder, name, n["metadata"].get("uid", ""), "Normal", "RegisteredNode",
                f"Registered Node {name} in Controller",
            )  # fmt: skip
            self.known_nodes[name] = n
            self.add_pod_evictor_for_new_zone(n)
            try:
                await self.mark_node_as_reachable(n)
            except errors.StatusError as err:
                log.warning("%s", err.message)
        for n in deleted:
            name = n["metadata"]["name"]
            nodeutil.record_node_event(
                self.recorder, name, n["metadata"].get("uid", ""), "Normal", "RemovingNode",
                f"Removing Node {name} from Controller",
            )  # fmt: skip
            self.known_nodes.pop(name, None)
            self.health.pop(name, None)
        zone_conditions: dict[str, list[dict[str, Any] | None]] = {}
        slots = asyncio.Semaphore(NODE_UPDATE_WORKERS)

        async def one(n: dict[str, Any]) -> None:
            async with slots:
                await self._update_node(n, zone_conditions)

        await asyncio.gather(*(one(n) for n in nodes))
        await self.handle_disruption(zone_conditions, nodes)

    def _classify(
        self, nodes: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        added, new_zone = [], []
        names = set()
        for n in nodes:
            name = n["metadata"]["name"]
            names.add(name)
            if name not in self.known_nodes:
                added.append(n)
            elif nodeutil.zone_key(n) not in self.zone_states:
                new_zone.append(n)
        deleted = [n for name, n in self.known_nodes.items() if name not in names]
        return added, deleted, new_zone

    async def _update_node(self, node: dict[str, Any], zone_conditions: dict[str, list[dict[str, Any] | None]]) -> None:
        name = node["metadata"]["name"]
        for _attempt in range(NODE_HEALTH_UPDATE_RETRY):
            try:
                observed, current = await self.try_update_node_health(node)
                break
            except (errors.StatusError, ConnectionError) as err:
                log.info("updating the health of node %s: %s", name, err)
            await asyncio.sleep(RETRY_SLEEP)
            try:
                node = await self.client.get("nodes", name)
            except (errors.StatusError, ConnectionError):
                log.warning("failed while getting node %s to retry updating its health; probably deleted", name)
                return
        else:
            log.warning("update health of node %s failed; skipping: no pods will be evicted", name)
            return
        if LABEL_EXCLUDE_DISRUPTION not in ((node.get("metadata") or {}).get("labels") or {}):
            zone_conditions.setdefault(nodeutil.zone_key(node), []).append(current)
        if current is None:
            self.nodes_to_retry.discard(name)
            return
        pods = self.pods_on(name)
        await self.process_taint_based_eviction(node, observed)
        needs_retry = name in self.nodes_to_retry
        went_down = current.get("status") != "True" and observed.get("status") == "True"
        if went_down:
            nodeutil.record_node_status_change(self.recorder, node, "NodeNotReady")
        if went_down or (needs_retry and observed.get("status") != "True"):
            problems = await nodeutil.mark_pods_not_ready(self.client, self.recorder, pods, name)
            if problems:
                log.info("unable to mark all pods NotReady on node %s: %s; queued for retry", name, problems[0])
                self.nodes_to_retry.add(name)
                return
        self.nodes_to_retry.discard(name)

    def _created_at(self, node: dict[str, Any]) -> float:
        """The node's creation time on the monotonic clock."""
        raw = (node.get("metadata") or {}).get("creationTimestamp")
        try:
            age = (meta.now() - meta.parse_time(raw)).total_seconds() if isinstance(raw, str) else 0.0
        except ValueError:
            age = 0.0
        return self.now() - max(0.0, age)

    async def try_update_node_health(self, node: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(observed Ready condition, current Ready condition after this pass): upstream tryUpdateNodeHealth."""
        name = node["metadata"]["name"]
        status = node.get("status") or {}  # the informer's: read only (copied below before any change)
        health = self.health.get(name)
        current = _ready(status)
        if current is None:
            # Never reported: a stand-in Unknown condition from the node's creation, and the startup grace.
            created = (node.get("metadata") or {}).get("creationTimestamp")
            observed: dict[str, Any] = {
                "type": "Ready", "status": "Unknown", "lastHeartbeatTime": created, "lastTransitionTime": created,
            }  # fmt: skip
            grace = self.node_startup_grace_period
            if health is not None:
                health.status = status
            else:
                at = self._created_at(node)
                health = NodeHealth(at, at, status)
        else:
            observed = dict(current)
            grace = self.node_monitor_grace_period
        saved = _ready(health.status) if health is not None else None
        now = self.now()
        if health is None:
            health = NodeHealth(now, now, status)
        elif saved is None and current is not None:
            health = NodeHealth(now, now, status, health.lease_renew_time)
        elif saved is not None and current is None:
            log.error("ReadyCondition was removed from the status of node %s", name)
            health = NodeHealth(now, now, status, health.lease_renew_time)
        elif (
            saved is not None
            and current is not None
            and saved.get("lastHeartbeatTime") != current.get("lastHeartbeatTime")
        ):
            transition = (
                now
                if saved.get("lastTransitionTime") != current.get("lastTransitionTime")
                else health.ready_transition_timestamp
            )
            health = NodeHealth(now, transition, status, health.lease_renew_time)
        # A renewed Lease is a heartbeat too.
        lease = self.leases.indexer.get_by_key(f"kube-node-lease/{name}")
        renewed = _renew_time(lease)
        if renewed is not None and (health.lease_renew_time is None or health.lease_renew_time < renewed):
            health.lease_renew_time = renewed
            health.probe_timestamp = now
        self.health[name] = health
        if now <= health.probe_timestamp + grace:
            return observed, current
        node = meta.json_copy(node)
        status = node.setdefault("status", {})
        stamp = meta.rfc3339()
        conditions = status.setdefault("conditions", [])
        for typ in KUBELET_CONDITIONS:
            c = next((c for c in conditions if c.get("type") == typ), None)
            if c is None:
                conditions.append({
                    "type": typ, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": node["metadata"].get("creationTimestamp"), "lastTransitionTime": stamp,
                })  # fmt: skip
            elif c.get("status") != "Unknown":
                c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
                c["lastTransitionTime"] = stamp
        current = _ready(status)
        if current != observed:
            await self.client.update_status("nodes", node)
            self.health[name] = NodeHealth(health.probe_timestamp, self.now(), status, renewed)
        return observed, current

    async def handle_disruption(
        self, zone_conditions: dict[str, list[dict[str, Any] | None]], nodes: list[dict[str, Any]]
    ) -> None:
        new_states: dict[str, ZoneState] = {}
        all_fully_disrupted = True
        for zone, conditions in zone_conditions.items():
            _, state = self.rates.compute_zone_state(conditions)
            if state != ZoneState.FULL_DISRUPTION:
                all_fully_disrupted = False
            new_states[zone] = state
            if zone not in self.zone_states:
                log.error("setting initial state for unseen zone %r", zone)
                self.zone_states[zone] = ZoneState.INITIAL
        all_were_fully_disrupted = True
        for zone in list(self.zone_states):
            if zone not in zone_conditions:
                del self.zone_states[zone]
                continue
            if self.zone_states[zone] != ZoneState.FULL_DISRUPTION:
                all_were_fully_disrupted = False
                break
        if all_fully_disrupted and all_were_fully_disrupted:
            return
        if all_fully_disrupted:
            # Every node unreachable at once: more likely the controller's own view is broken. Stop tainting.
            log.warning("all nodes are not Ready: entering master disruption mode")
            for n in nodes:
                try:
                    await self.mark_node_as_reachable(n)
                except errors.StatusError as err:
                    log.warning("%s", err.message)
            for zone in self.zone_states:
                self._tainter_for_zone(zone).swap_limiter(0)
                self.zone_states[zone] = ZoneState.FULL_DISRUPTION
            return
        if all_were_fully_disrupted:
            log.info("some nodes are Ready: exiting master disruption mode")
            now = self.now()
            for n in nodes:
                h = self.health.get(n["metadata"]["name"])
                if h is not None:
                    h.probe_timestamp = h.ready_transition_timestamp = now
            for zone in self.zone_states:
                self._set_limiter_in_zone(zone, len(zone_conditions[zone]), new_states[zone])
                self.zone_states[zone] = new_states[zone]
            return
        for zone, state in list(self.zone_states.items()):
            new = new_states[zone]
            if state != new:
                log.info("zone %r is now in state %s", zone, new)
                self._set_limiter_in_zone(zone, len(zone_conditions[zone]), new)
                self.zone_states[zone] = new

    def _tainter_for_zone(self, zone: str) -> RateLimitedTimedQueue:
        if zone not in self.zone_tainter:
            self.zone_tainter[zone] = RateLimitedTimedQueue(self.rates.eviction_rate)
        return self.zone_tainter[zone]

    def _set_limiter_in_zone(self, zone: str, size: int, state: ZoneState) -> None:
        qps = self.rates.qps_for(state, size)
        if qps is not None:
            self._tainter_for_zone(zone).swap_limiter(qps)

    # -- pods bound to a node that is not ready ---------------------------------------------------------

    async def process_pod(self, key: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        health = self.health.get(node_name)
        if health is None:
            return
        if self._node(node_name) is None:
            self.pod_queue.add_rate_limited(key)
            return
        ready = _ready(health.status)
        if ready is None or ready.get("status") == "True":
            return
        if await nodeutil.mark_pods_not_ready(self.client, self.recorder, [pod], node_name):
            ns, name = split_meta_namespace_key(key)
            log.info("unable to mark pod %s/%s NotReady", ns, name)
            self.pod_queue.add_rate_limited(key)
