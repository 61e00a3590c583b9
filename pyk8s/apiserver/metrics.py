"""The API server's Prometheus metrics, under upstream's names (apiserver_request_total,
apiserver_request_duration_seconds, apiserver_storage_objects, apiserver_current_inflight_requests,
apiserver_current_inqueue_requests, apiserver_longrunning_requests, apiserver_watch_events_total). One registry
per server, so several servers can live in one process (tests do)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from .request_info import RequestInfo

_VERBS = {
    "get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT", "patch": "PATCH",
    "delete": "DELETE", "deletecollection": "DELETE",
}  # fmt: skip
_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60)
LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")


class _Gauges:
    """Gauges computed when scraped."""

    def __init__(
        self,
        storage_objects: Callable[[], dict[str, int]],
        inflight: Callable[[], dict[str, int]],
        inqueue: Callable[[], dict[str, int]],
        watches: Callable[[], int],
        watch_events: Callable[[], int],
    ) -> None:
        self.storage_objects = storage_objects
        self.inflight = inflight
        self.inqueue = inqueue
        self.watches = watches
        self.watch_events = watch_events

    def collect(self) -> Iterator[Metric]:
        g = GaugeMetricFamily(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            labels=["resource"],
        )
        for res, n in sorted(self.storage_objects().items()):
            g.add_metric([res], n)
        yield g
        g = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            labels=["request_kind"],
        )
        for kind, n in sorted(self.inflight().items()):
            g.add_metric([kind], n)
        yield g
        g = GaugeMetricFamily(
            "apiserver_current_inqueue_requests",
            "Maximal number of queued requests in this apiserver per request kind in last second.",
            labels=["request_kind"],
        )
        for kind, n in sorted(self.inqueue().items()):
            g.add_metric([kind], n)
        yield g
        g = GaugeMetricFamily(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests.",
            labels=["verb", "component"],
        )
        g.add_metric(["WATCH", "apiserver"], self.watches())
        yield g
        c = GaugeMetricFamily("apiserver_watch_events_total", "Number of events sent in watch clients")
        c.add_metric([], self.watch_events())
        yield c


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, "
            "component, and HTTP response code.",
            [*LABELS, "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, "
            "subresource, scope and component.",
            LABELS,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self._children: dict[tuple[tuple[str, ...], int], tuple[Any, Any]] = {}

    def add_gauges(self, gauges: _Gauges) -> None:
        self.registry.register(gauges)  # type: ignore[arg-type]

    def observe(self, request: web.Request, code: int, seconds: float) -> None:
        info: RequestInfo | None = request.get("info")
        if info is None:
            return
        if info.is_resource_request:
            verb = _VERBS.get(info.verb, info.verb.upper())
            scope = "resource" if info.name else ("namespace" if info.namespace else "cluster")
            labels = (verb, "All" if request.query.get("dryRun") else "", info.api_group, info.api_version,
                      info.resource, info.subresource, scope, "apiserver")  # fmt: skip
        else:
            labels = (request.method, "", "", "", "", "", "", "apiserver")
        key = (labels, code)
        children = self._children.get(key)
        if children is None:
            # prometheus_client's labels() lookup is costly per request; keep the children.
            children = self._children[key] = (self.requests.labels(*labels, str(code)), self.duration.labels(*labels))
        children[0].inc()
        if info.verb != "watch":
            children[1].observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


Gauges = _Gauges
