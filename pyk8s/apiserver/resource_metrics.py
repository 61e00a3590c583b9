"""`metrics.k8s.io/v1beta1`, the resource metrics API `kubectl top` and the horizontal pod autoscaler read,
served by the API server itself in place of metrics-server until API aggregation exists (upstream:
kubernetes-sigs/metrics-server pkg/api node.go and pod.go; the types are k8s.io/metrics v1beta1 NodeMetrics
and PodMetrics).

Nothing is scraped and nothing runs in the background: each request reads the watch caches and computes the
simulated usage (`kubelet.container_model.usage`) of every container the pod status says is running. A pod
with no running container has no PodMetrics, as metrics-server omits a pod it has no points for. A node has
metrics while its Ready condition is True (metrics-server cannot scrape a kubelet that is down); its usage is
its running pods' plus SYSTEM_CPU_NANOCORES and SYSTEM_MEMORY_BYTES, a fixed figure for the node's own daemons
and kernel (metrics-server reports the node's root cgroup, which holds both).

`timestamp` and `window` are what metrics-server writes after scraping every METRIC_RESOLUTION seconds (its
shipped --metric-resolution): the last scrape time and the scrape interval. Lists take a label selector and a
field selector on metadata.name (and metadata.namespace for pods), as metrics-server filters.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from aiohttp import web

from ..api import errors
from ..api.meta import Object, rfc3339
from ..api.quantity import Format, Quantity, canonical, parse_quantity, value
from ..api.resources import Resource
from ..api.selectors import SelectorError, parse_field_selector, parse_label_selector
from ..kubelet.container_model import ANNOTATION, usage
from . import tables
from .encoding import respond
from .negotiation import Output, choose_output
from .registry.rest import RESTStore
from .request_info import RequestInfo

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = (
    Resource(GROUP, VERSION, "NodeMetrics", "nodes", False, verbs=("get", "list")),
    Resource(GROUP, VERSION, "PodMetrics", "pods", True, verbs=("get", "list")),
)
METRIC_RESOLUTION = 15  # seconds; metrics-server's shipped manifests
SYSTEM_CPU_NANOCORES = 50_000_000  # 50m: a node's kubelet, runtime and kernel threads, idle
SYSTEM_MEMORY_BYTES = 256 * 1024 * 1024  # 256Mi
# Pods worked through between two yields to the event loop: 150,000 pods take about a second (measured on the
# 2-core machine), which other requests must not wait behind.
YIELD_EVERY = 2000
_CONTAINER_STATUSES = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")


@functools.lru_cache(maxsize=4096)
def cpu_quantity(nanocores: int) -> str:
    """CPU as metrics-server writes it: a DecimalSI quantity scaled to nanocores (`250m`, `1234567n`)."""
    return canonical(Quantity.from_value(Fraction(nanocores, 10**9), Format.DecimalSI))


@functools.lru_cache(maxsize=4096)
def memory_quantity(nbytes: int) -> str:
    return canonical(Quantity.from_value(nbytes, Format.BinarySI))


_USAGE_LIMIT = 16384
_usage_memo: dict[Hashable, tuple[int, int]] = {}


def _usage_of(pod: Mapping[str, Any], container: Mapping[str, Any]) -> tuple[int, int]:
    # The same replica spec thousands of times over: worked out once per distinct (annotation, container) as
    # far as usage depends on them, with a key cheaper to build than the container's whole content.
    annotation = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    res = container.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    try:
        key: Hashable = (
            annotation, container.get("name"), tuple(container.get("command") or ()),
            tuple(container.get("args") or ()), req.get("cpu"), req.get("memory"), lim.get("cpu"), lim.get("memory"),
        )  # fmt: skip
        hash(key)
    except TypeError:  # not plain strings: nothing to share
        return usage(pod, container)
    found = _usage_memo.get(key)
    if found is None:
        found = usage(pod, container)
        if len(_usage_memo) >= _USAGE_LIMIT:
            _usage_memo.clear()
        _usage_memo[key] = found
    return found


def running_usage(pod: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(container, nanocores, bytes) of each container the pod status shows running, in spec order."""
    status = pod.get("status") or {}
    running = {
        cs.get("name")
        for kind in _CONTAINER_STATUSES
        for cs in status.get(kind) or ()
        if (cs.get("state") or {}).get("running") is not None
    }
    if not running:
        return []
    spec = pod.get("spec") or {}
    out = []
    for kind in _CONTAINER_KINDS:
        for c in spec.get(kind) or ():
            if c.get("name") in running:
                cpu, mem = _usage_of(pod, c)
                out.append((str(c["name"]), cpu, mem))
    return out


def _ready(node: Mapping[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class ResourceMetrics:
    """Serves the group's requests from the pods' and nodes' watch caches."""

    def __init__(self, pods: RESTStore, nodes: RESTStore, clock: Callable[[], float] = time.time) -> None:
        self.pods = pods
        self.nodes = nodes
        self.clock = clock

    def _times(self) -> tuple[str, str]:
        scraped = int(self.clock()) // METRIC_RESOLUTION * METRIC_RESOLUTION
        return rfc3339_at(scraped), f"{METRIC_RESOLUTION}s"

    async def serve(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if info.api_version != VERSION or info.resource not in ("nodes", "pods") or len(info.parts) > 2:
            raise errors.path_not_found()
        if info.resource == "nodes" and info.namespace:
            raise errors.path_not_found()
        plural = "nodemetrics" if info.resource == "nodes" else "podmetrics"
        if info.verb not in ("get", "list"):
            raise errors.method_not_supported(plural, info.verb, GROUP)
        now, window = self._times()
        if info.resource == "nodes":
            items = await self.node_metrics(request.query, info.name, now, window)
            kind = "NodeMetrics"
        else:
            items = await self.pod_metrics(request.query, info.namespace, info.name, now, window)
            kind = "PodMetrics"
        if info.verb == "get" and not items:
            raise errors.not_found(plural, info.name, GROUP)
        out = choose_output(request.headers.get("Accept"))
        if out.transform == "Table":
            include = tables.check_include_object(request.query.get("includeObject", ""))
            return respond(tables.table(items, GROUP, kind, include=include, version=out.version), out)
        if info.verb == "get":
            return respond(items[0], Output())
        doc = {"kind": f"{kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": items}
        return respond(doc, Output())

    def _selectors(self, query: Mapping[str, str]) -> tuple[Any, Any]:
        try:
            return parse_label_selector(query.get("labelSelector")), parse_field_selector(query.get("fieldSelector"))
        except SelectorError as e:
            raise errors.bad_request(str(e)) from None

    def _objects(self, store: RESTStore, namespace: str, name: str) -> Iterable[Object]:
        if name:
            entry = store.cacher.get(store.key(namespace, name))
            return [entry.obj] if entry is not None else []
        entries, _ = store.cacher.list(store.resource.collection_key(namespace))
        return (e.obj for e in entries)

    async def node_metrics(self, query: Mapping[str, str], name: str, now: str, window: str) -> list[Object]:
        labels, fields = self._selectors(query)
        nodes = {}
        for node in self._objects(self.nodes, "", name):
            md = node.get("metadata") or {}
            if not _ready(node) or not labels.matches(md.get("labels") or {}):
                continue
            if not fields.matches({"metadata.name": md.get("name", "")}):
                continue
            nodes[md["name"]] = node
        if not nodes:
            return []
        totals = {n: [SYSTEM_CPU_NANOCORES, SYSTEM_MEMORY_BYTES] for n in nodes}
        for i, pod in enumerate(self._objects(self.pods, "", "")):
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await asyncio.sleep(0)
            total = totals.get((pod.get("spec") or {}).get("nodeName"))
            if total is None:
                continue
            for _, cpu, mem in running_usage(pod):
                total[0] += cpu
                total[1] += mem
        created = rfc3339()
        return [
            {
                "kind": "NodeMetrics",
                "apiVersion": API_VERSION,
                "metadata": _meta(node, created),
                "timestamp": now,
                "window": window,
                "usage": {"cpu": cpu_quantity(totals[n][0]), "memory": memory_quantity(totals[n][1])},
            }
            for n, node in sorted(nodes.items())
        ]

    async def pod_metrics(
        self, query: Mapping[str, str], namespace: str, name: str, now: str, window: str
    ) -> list[Object]:
        labels, fields = self._selectors(query)
        ready = {
            e.obj["metadata"]["name"] for e in self.nodes.cacher.list(self.nodes.resource.collection_key())[0]
            if _ready(e.obj)
        }  # fmt: skip
        created = rfc3339()
        out = []
        for i, pod in enumerate(self._objects(self.pods, namespace, name)):
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await asyncio.sleep(0)
            md = pod.get("metadata") or {}
            if (pod.get("spec") or {}).get("nodeName") not in ready or not labels.matches(md.get("labels") or {}):
                continue
            if not fields.matches({"metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", "")}):
                continue
            containers = running_usage(pod)
            if not containers:
                continue
            out.append({
                "kind": "PodMetrics",
                "apiVersion": API_VERSION,
                "metadata": _meta(pod, created),
                "timestamp": now,
                "window": window,
                "containers": [
                    {"name": c, "usage": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(mem)}}
                    for c, cpu, mem in containers
                ],
            })  # fmt: skip
        return out


# metrics-server's table columns (pkg/api/table.go): a pod's figures are its containers' sums.
_COLUMNS = [
    tables.NAME,
    tables.Column("CPU", description="CPU usage"),
    tables.Column("Memory", description="Memory usage"),
    tables.Column("Window", description="Time window the usage was measured over"),
]


@tables.printer(GROUP, "NodeMetrics", _COLUMNS)
def _node_row(m: Object) -> tables.Cells:
    return [m["metadata"]["name"], m["usage"]["cpu"], m["usage"]["memory"], m["window"]]


@tables.printer(GROUP, "PodMetrics", _COLUMNS)
def _pod_row(m: Object) -> tables.Cells:
    cpu = sum((parse_quantity(c["usage"]["cpu"]).as_fraction() for c in m["containers"]), Fraction(0))
    memory = sum(value(parse_quantity(c["usage"]["memory"])) for c in m["containers"])
    cpu_text = canonical(Quantity.from_value(cpu, Format.DecimalSI))
    return [m["metadata"]["name"], cpu_text, memory_quantity(memory), m["window"]]


def _meta(obj: Mapping[str, Any], created: str) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    out: dict[str, Any] = {"name": md.get("name", "")}
    if md.get("namespace"):
        out["namespace"] = md["namespace"]
    out["creationTimestamp"] = created
    if md.get("labels"):
        out["labels"] = dict(md["labels"])
    return out


def rfc3339_at(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
