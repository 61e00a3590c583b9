"""The EndpointSlice controller (upstream: pkg/controller/endpointslice and k8s.io/endpointslice's reconciler,
`endpointslice-controller`): for every Service with a selector, EndpointSlices (`<service>-xxxxx`, owned by the
Service, labelled `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`) listing its pods, one
set per IP family of the Service, at most `max_endpoints_per_slice` endpoints each, pods with the same resolved
ports together. Every pod that is not terminal and has an IP is listed, terminating ones too: `ready` is
publishNotReadyAddresses or (Ready and not terminating), `serving` is Ready, `terminating` is the deletion mark. A
Service with no such pods keeps one empty placeholder slice. Existing slices are rewritten in place before new ones
are created, and only when their content changed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...api.meta import json_copy, owner_reference
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key, split_meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..endpointutil import (
    LAST_CHANGE_TRIGGER_TIME,
    Object,
    find_port,
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

SLICES = "endpointslices.discovery.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
ZONE_LABEL = "topology.kubernetes.io/zone"
DEFAULT_MAX_ENDPOINTS_PER_SLICE = 100


def _service_of(slice_: Object) -> str | None:
    labels = (slice_.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) != CONTROLLER_NAME or not labels.get(SERVICE_NAME_LABEL):
        return None
    return f"{(slice_.get('metadata') or {}).get('namespace')}/{labels[SERVICE_NAME_LABEL]}"


class EndpointSliceController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5,
                 max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE) -> None:  # fmt: skip
        self.client = client
        self.workers = workers
        self.max_per_slice = max_endpoints_per_slice
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="endpoint_slice")
        self.services = factory.informer_for("services")
        self.pods = factory.informer_for("pods")
        self.nodes = factory.informer_for("nodes")
        self.slices = factory.informer_for(SLICES)
        self.trigger_times = TriggerTimeTracker()
        self.services.add_event_handler(
            on_add=lambda s, _initial: self.queue.add(meta_namespace_key(s)),
            on_update=lambda _o, s: self.queue.add(meta_namespace_key(s)),
            on_delete=lambda s: self.queue.add(meta_namespace_key(deleted_object(s))),
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_changed(p, None),
            on_update=lambda old, cur: self._pod_changed(cur, old),
            on_delete=lambda p: self._pod_changed(deleted_object(p), None),
        )
        self.slices.add_event_handler(
            on_update=lambda _o, s: self._slice_changed(s), on_delete=lambda s: self._slice_changed(deleted_object(s))
        )

    def _pod_changed(self, pod: Object, old: Object | None) -> None:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        for key in services_to_sync(self.services.indexer.by_index("namespace", namespace), pod, old):
            self.queue.add(key)

    def _slice_changed(self, slice_: Object) -> None:
        key = _service_of(slice_)
        if key is not None:
            self.queue.add(key)

    async def run(self) -> None:
        await asyncio.gather(*(i.wait_for_sync() for i in (self.services, self.pods, self.nodes, self.slices)))
        tasks = queue_workers(self.queue, self.sync, "sync endpoint slices", self.workers)
        await run_workers(tasks, [self.queue])

    # -- what should be -------------------------------------------------------------------------------

    def _endpoint(self, svc: Object, pod: Object, ip: str) -> dict[str, Any]:
        serving = is_pod_ready(pod)
        terminating = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
        ep: dict[str, Any] = {"addresses": [ip], "conditions": {"ready": ready, "serving": serving,
                                                                "terminating": terminating}}  # fmt: skip
        if should_set_hostname(pod, svc):
            ep["hostname"] = (pod.get("spec") or {})["hostname"]
        ep["targetRef"] = target_ref(pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            ep["nodeName"] = node_name
            node = self.nodes.indexer.get_by_key(node_name)
            zone = ((node or {}).get("metadata") or {}).get("labels", {}).get(ZONE_LABEL)
            if zone:
                ep["zone"] = zone
        return ep

    def _selected_pods(self, svc: Object) -> list[Object]:
        selector = service_selector(svc)
        assert selector is not None
        namespace = str((svc.get("metadata") or {}).get("namespace") or "")
        return [p for p in self.pods.indexer.by_index("namespace", namespace)
                if selector.matches((p.get("metadata") or {}).get("labels") or {})]  # fmt: skip

    def desired(
        self, svc: Object, selected: list[Object] | None = None
    ) -> dict[str, dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]]:
        """Per address type, per port set (its repr): (ports, endpoints)."""
        spec = svc.get("spec") or {}
        families = list(spec.get("ipFamilies") or ["IPv4"])
        out: dict[str, dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]] = {f: {} for f in families}
        for pod in self._selected_pods(svc) if selected is None else selected:
            if not should_pod_be_in_endpoints(pod, True):
                continue
            ports = []
            for sp in spec.get("ports") or ():
                number = find_port(pod, sp)
                if number is None:
                    continue
                port: dict[str, Any] = {
                    "name": sp.get("name") or "",
                    "port": number,
                    "protocol": sp.get("protocol") or "TCP",
                }
                if sp.get("appProtocol"):
                    port["appProtocol"] = sp["appProtocol"]
                ports.append(port)
            for family in families:
                ip = pod_ip_of_family(pod, family)
                if ip is None:
                    continue
                group = out[family].setdefault(repr(ports), (ports, []))
                group[1].append(self._endpoint(svc, pod, ip))
        return out

    # -- making it so -----------------------------------------------------------------------------------

    def _slice(self, svc: Object, family: str, ports: list[dict[str, Any]] | None,
               endpoints: list[dict[str, Any]], base: Object | None) -> dict[str, Any]:  # fmt: skip
        md = svc.get("metadata") or {}
        labels = {**service_labels(svc, (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)), SERVICE_NAME_LABEL: md.get("name"),
                  MANAGED_BY_LABEL: CONTROLLER_NAME}  # fmt: skip
        if base is not None:
            out = json_copy(base)
        else:
            out = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"generateName": f"{md.get('name')}-", "namespace": md.get("namespace"),
                                "ownerReferences": [owner_reference(svc)]}}  # fmt: skip
        out["metadata"]["labels"] = labels
        out["addressType"] = family
        out["endpoints"] = endpoints
        if ports is None:
            out.pop("ports", None)
        else:
            out["ports"] = ports
        return out

    @staticmethod
    def _same(a: Object, b: Object) -> bool:
        keys = ("addressType", "endpoints", "ports")
        return all(a.get(k) == b.get(k) for k in keys) and (a.get("metadata") or {}).get("labels") == (
            b.get("metadata") or {}
        ).get("labels")

    async def sync(self, key: str) -> None:
        svc = self.services.indexer.get_by_key(key)
        if svc is None or service_selector(svc) is None:
            if svc is None:
                self.trigger_times.forget(*split_meta_namespace_key(key))
            return  # deleted (its slices go with it: owner references) or not selecting pods
        namespace = str((svc.get("metadata") or {}).get("namespace") or "")
        existing = [s for s in self.slices.indexer.by_index("namespace", namespace) if _service_of(s) == key
                    and not (s.get("metadata") or {}).get("deletionTimestamp")]  # fmt: skip
        wanted: list[tuple[str, list[dict[str, Any]] | None, list[dict[str, Any]]]] = []
        selected = self._selected_pods(svc)
        trigger_time = self.trigger_times.compute(svc, selected)
        for family, groups in self.desired(svc, selected).items():
            if not groups:
                wanted.append((family, None, []))  # the placeholder
                continue
            for group_ports, group in groups.values():
                group.sort(key=lambda e: (e["addresses"][0], e["targetRef"].get("uid") or ""))
                for i in range(0, len(group), self.max_per_slice):
                    wanted.append((family, group_ports, group[i : i + self.max_per_slice]))
        # Reuse the slices there are (those of the same address type and ports first) before creating more.
        remaining = list(existing)
        writes: list[tuple[Object | None, dict[str, Any]]] = []
        for family, ports, endpoints in wanted:
            match = next((s for s in remaining if s.get("addressType") == family and s.get("ports") == ports), None)
            if match is None:
                match = next((s for s in remaining if s.get("addressType") == family), None)
            if match is not None:
                remaining.remove(match)
            writes.append((match, self._slice(svc, family, ports, endpoints, match)))
        try:
            for base, body in writes:
                if base is not None and self._same(base, body):
                    continue
                # Slices written in this sync say when the change behind them happened (none known: no annotation).
                ann = body["metadata"].get("annotations") or {}
                if trigger_time is not None:
                    ann[LAST_CHANGE_TRIGGER_TIME] = format_trigger_time(trigger_time)
                else:
                    ann.pop(LAST_CHANGE_TRIGGER_TIME, None)
                if ann:
                    body["metadata"]["annotations"] = ann
                else:
                    body["metadata"].pop("annotations", None)
                if base is None:
                    await self.client.create(SLICES, body, namespace)
                else:
                    await self.client.update(SLICES, body, namespace)
        except errors.StatusError as err:
            if errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                return
            raise
        for stale in remaining:
            try:
                await self.client.delete(SLICES, str(stale["metadata"]["name"]), namespace)
            except errors.NotFound:
                pass
