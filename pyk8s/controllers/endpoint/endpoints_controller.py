"""The Endpoints controller (upstream: pkg/controller/endpoint/endpoints_controller.go, `endpoints-controller`):
for every Service with a selector, an Endpoints object of the same name listing its pods' addresses, ready ones
under `addresses` and the others under `notReadyAddresses` (all ready with `publishNotReadyAddresses`), grouped
into subsets by the ports the Service's target ports resolve to on each pod. Terminating pods are left out unless
`publishNotReadyAddresses`. Above 1000 addresses the list is cut (ready ones kept first) and annotated
`endpoints.kubernetes.io/over-capacity: truncated`. A Service's deletion deletes its Endpoints."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...api.meta import json_copy
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key, split_meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..endpointutil import (
    LAST_CHANGE_TRIGGER_TIME,
    Object,
    find_port,
    ip_family,
    pod_ip_of_family,
    service_labels,
    service_selector,
    services_to_sync,
    should_pod_be_in_endpoints,
    should_set_hostname,
    target_ref,
)
from ..podutil import is_pod_ready
from ..trigger_time_tracker import TriggerTimeTracker, format_trigger_time
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

MAX_CAPACITY = 1000
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"


def service_family(svc: Object, pod: Object) -> str | None:
    """The IP family of the addresses an Endpoints lists: the cluster IP's, or for a headless Service its first
    ipFamily, or the pod's own."""
    spec = svc.get("spec") or {}
    cluster_ip = spec.get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        return ip_family(str(cluster_ip))
    if spec.get("ipFamilies"):
        return str(spec["ipFamilies"][0])
    ip = (pod.get("status") or {}).get("podIP")
    return ip_family(str(ip)) if ip else None


def repack(entries: list[tuple[dict[str, Any], list[dict[str, Any]], bool]]) -> list[dict[str, Any]]:
    """(address, ports, ready) entries as subsets: addresses with the same ports together, sorted as upstream's
    RepackSubsets sorts them (addresses by IP, ports by name then number)."""
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for addr, ports, ready in entries:
        ports = sorted(ports, key=lambda p: (p.get("name", ""), p.get("port", 0), p.get("protocol", "")))
        key = repr(ports)
        group = groups.setdefault(key, ([], [], ports))
        (group[0] if ready else group[1]).append(addr)
    subsets = []
    for key in sorted(groups):
        ready_addrs, not_ready, ports = groups[key]
        subset: dict[str, Any] = {}
        if ready_addrs:
            subset["addresses"] = sorted(
                ready_addrs, key=lambda a: (a["ip"], (a.get("targetRef") or {}).get("uid", ""))
            )
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready,
                                                 key=lambda a: (a["ip"], (a.get("targetRef") or {}).get("uid", "")))  # fmt: skip
        if ports:
            subset["ports"] = ports
        subsets.append(subset)
    return subsets


def truncate(subsets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """At most MAX_CAPACITY addresses, ready ones first, each subset keeping its share (upstream:
    truncateEndpoints)."""
    total = sum(len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ()) for s in subsets)
    if total <= MAX_CAPACITY:
        return subsets, False
    ready_total = sum(len(s.get("addresses") or ()) for s in subsets)
    keep_ready = min(ready_total, MAX_CAPACITY)
    keep_not_ready = MAX_CAPACITY - keep_ready
    not_ready_total = total - ready_total
    out = []
    for s in subsets:
        s = dict(s)
        if s.get("addresses"):
            share = len(s["addresses"]) * keep_ready // max(ready_total, 1)
            s["addresses"] = s["addresses"][:share]
        if s.get("notReadyAddresses"):
            share = len(s["notReadyAddresses"]) * keep_not_ready // max(not_ready_total, 1)
            s["notReadyAddresses"] = s["notReadyAddresses"][:share]
        out.append({k: v for k, v in s.items() if v})
    return out, True


class EndpointsController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="endpoint")
        self.services = factory.informer_for("services")
        self.pods = factory.informer_for("pods")
        self.endpoints = factory.informer_for("endpoints")
        self.trigger_times = TriggerTimeTracker()
        self.services.add_event_handler(
            on_add=lambda s, _initial: self._enqueue(s),
            on_update=lambda _o, s: self._enqueue(s),
            on_delete=lambda s: self._enqueue(deleted_object(s)),
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_changed(p, None),
            on_update=lambda old, cur: self._pod_changed(cur, old),
            on_delete=lambda p: self._pod_changed(deleted_object(p), None),
        )
        self.endpoints.add_event_handler(on_delete=lambda e: self._enqueue(deleted_object(e)))

    def _enqueue(self, obj: Object) -> None:
        self.queue.add(meta_namespace_key(obj))

    def _pod_changed(self, pod: Object, old: Object | None) -> None:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        for key in services_to_sync(self.services.indexer.by_index("namespace", namespace), pod, old):
            self.queue.add(key)

    async def run(self) -> None:
        await asyncio.gather(self.services.wait_for_sync(), self.pods.wait_for_sync(), self.endpoints.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, "sync endpoints", self.workers)
        await run_workers(tasks, [self.queue])

    def _selected_pods(self, svc: Object) -> list[Object]:
        selector = service_selector(svc)
        if selector is None:
            return []
        namespace = str((svc.get("metadata") or {}).get("namespace") or "")
        return [p for p in self.pods.indexer.by_index("namespace", namespace)
                if selector.matches((p.get("metadata") or {}).get("labels") or {})]  # fmt: skip

    def desired_subsets(self, svc: Object, selected: list[Object] | None = None) -> list[dict[str, Any]]:
        tolerate_unready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        entries = []
        for pod in self._selected_pods(svc) if selected is None else selected:
            if not should_pod_be_in_endpoints(pod, tolerate_unready):
                continue
            family = service_family(svc, pod)
            ip = pod_ip_of_family(pod, family) if family else None
            if ip is None:
                continue
            addr: dict[str, Any] = {"ip": ip}
            if should_set_hostname(pod, svc):
                addr["hostname"] = (pod.get("spec") or {})["hostname"]
            if (pod.get("spec") or {}).get("nodeName"):
                addr["nodeName"] = pod["spec"]["nodeName"]
            addr["targetRef"] = target_ref(pod)
            ports = []
            for sp in (svc.get("spec") or {}).get("ports") or ():
                number = find_port(pod, sp)
                if number is None:
                    continue
                port: dict[str, Any] = {"port": number, "protocol": sp.get("protocol") or "TCP"}
                if sp.get("name"):
                    port = {"name": sp["name"], **port}
                if sp.get("appProtocol"):
                    port["appProtocol"] = sp["appProtocol"]
                ports.append(port)
            entries.append((addr, ports, tolerate_unready or is_pod_ready(pod)))
        return repack(entries)

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        svc = self.services.indexer.get_by_key(key)
        if svc is None:
            self.trigger_times.forget(namespace, name)
            try:
                await self.client.delete("endpoints", name, namespace)
            except errors.NotFound:
                pass
            return
        if service_selector(svc) is None:
            return  # no selector: the user manages this Service's endpoints
        selected = self._selected_pods(svc)
        trigger_time = self.trigger_times.compute(svc, selected)
        subsets, truncated = truncate(self.desired_subsets(svc, selected))
        labels = service_labels(svc)
        current = self.endpoints.indexer.get_by_key(key)
        if current is not None:
            cur_ann = (current.get("metadata") or {}).get("annotations") or {}
            if ((current.get("subsets") or []) == subsets and ((current.get("metadata") or {}).get("labels") or {}) == labels
                    and (cur_ann.get(OVER_CAPACITY) == "truncated") == truncated):  # fmt: skip
                return
            ep = json_copy(current)
        else:
            ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": namespace}}
        ep["metadata"]["labels"] = labels
        ann = ep["metadata"].setdefault("annotations", {})
        if truncated:
            ann[OVER_CAPACITY] = "truncated"
        else:
            ann.pop(OVER_CAPACITY, None)
        if trigger_time is not None:
            ann[LAST_CHANGE_TRIGGER_TIME] = format_trigger_time(trigger_time)
        else:
            ann.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if not ann:
            ep["metadata"].pop("annotations")
        if subsets:
            ep["subsets"] = subsets
        else:
            ep.pop("subsets", None)
        try:
            if current is None:
                await self.client.create("endpoints", ep, namespace)
            else:
                await self.client.update("endpoints", ep, namespace)
        except errors.StatusError as err:
            if errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                return
            raise
