"""The metrics client the autoscaler reads through the API server (upstream:
pkg/controller/podautoscaler/metrics/client.go with k8s.io/metrics' custom and external clients).

- resource metrics from `metrics.k8s.io/v1beta1` PodMetrics (served by the API server itself here);
- custom metrics from `custom.metrics.k8s.io`, whose version discovery picks (v1beta2 or v1beta1); with no such
  group registered the answer is upstream's "no custom metrics API (custom.metrics.k8s.io) registered";
- external metrics from `external.metrics.k8s.io/v1beta1`, asked directly as upstream's client does; where
  nothing serves it, the 404 reads as client-go words one without a Status body, "the server could not find the
  requested resource (get <metric>.external.metrics.k8s.io)", which is what a v1.32 cluster without a metrics
  adapter answers.

Each error is wrapped as upstream wraps it ("unable to fetch metrics from ... API: ...").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....api import errors
from ....api.duration import parse_go_duration
from ....api.meta import parse_time
from ....api.quantity import QuantityError, milli_value, parse_quantity
from ....api.resources import TABLE
from ....api.selectors import LabelSelector, SelectorError, label_selector_from_object
from ....client.rest import RESTClient
from .interfaces import MetricsError, PodMetric, PodMetricsInfo

RESOURCE_METRICS_PATH = "/apis/metrics.k8s.io/v1beta1"
CUSTOM_GROUP = "custom.metrics.k8s.io"
EXTERNAL_GROUP = "external.metrics.k8s.io"
EXTERNAL_VERSION = "v1beta1"
_CUSTOM_VERSIONS = ("v1beta2", "v1beta1")  # what upstream's custom metrics client speaks, newest first
# The window a custom metric without windowSeconds is taken to cover (upstream: metricServerDefaultMetricWindow).
DEFAULT_METRIC_WINDOW = 60.0


def _time(text: Any) -> float | None:
    if not text:
        return None
    try:
        return parse_time(str(text)).timestamp()
    except ValueError:
        return None


def _window(text: Any) -> float:
    try:
        return parse_go_duration(str(text)) / 1e9 if text else 0.0
    except ValueError:
        return 0.0


def _milli(text: Any) -> int:
    try:
        return milli_value(parse_quantity(str(text)))
    except (QuantityError, ValueError) as e:
        raise MetricsError(f"invalid metric value {text!r}: {e}") from None


def _selector_param(selector: Mapping[str, Any] | None) -> str | None:
    """A metav1.LabelSelector in the query's string form; a nil one selects nothing, which prints empty too."""
    if selector is None:
        return None
    try:
        text = str(label_selector_from_object(selector))
    except SelectorError as e:
        raise MetricsError(str(e)) from None
    return text or None


class RESTMetricsClient:
    """The MetricsClient over a RESTClient."""

    def __init__(self, client: RESTClient) -> None:
        self.client = client

    # -- resource metrics ---------------------------------------------------------------------------------

    async def get_resource_metric(
        self, resource: str, namespace: str, selector: LabelSelector, container: str
    ) -> tuple[PodMetricsInfo, float | None]:
        path = f"{RESOURCE_METRICS_PATH}/namespaces/{namespace}/pods"
        try:
            doc = await self.client.request("GET", path, params={"labelSelector": str(selector) or None})
        except (errors.StatusError, ConnectionError) as e:
            raise MetricsError(f"unable to fetch metrics from resource metrics API: {e}") from None
        items = (doc or {}).get("items") or [] if isinstance(doc, dict) else []
        if not items:
            raise MetricsError("no metrics returned from resource metrics API")
        if container:
            res = _container_metrics(items, resource, container)
        else:
            res = _pod_metrics(items, resource)
        return res, _time(items[0].get("timestamp"))

    # -- custom metrics -----------------------------------------------------------------------------------

    async def _custom_version(self) -> str:
        """The custom metrics API version to ask (upstream: apiVersionsFromDiscovery.PreferredVersion)."""
        doc = await self.client.request("GET", "/apis")
        group = next((g for g in (doc or {}).get("groups") or () if g.get("name") == CUSTOM_GROUP), None)
        if group is None:
            raise MetricsError(f"no custom metrics API ({CUSTOM_GROUP}) registered")
        preferred = str((group.get("preferredVersion") or {}).get("version") or "")
        if preferred in _CUSTOM_VERSIONS:
            return preferred
        for v in group.get("versions") or ():
            if v.get("version") in _CUSTOM_VERSIONS:
                return str(v["version"])
        raise MetricsError("no known available metric versions found")

    async def _custom_get(self, tail: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            version = await self._custom_version()
            doc = await self.client.request("GET", f"/apis/{CUSTOM_GROUP}/{version}/{tail}", params=params)
        except (errors.StatusError, ConnectionError, MetricsError) as e:
            raise MetricsError(f"unable to fetch metrics from custom metrics API: {e}") from None
        return list((doc or {}).get("items") or []) if isinstance(doc, dict) else []

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: LabelSelector, metric_selector: Mapping[str, Any] | None
    ) -> tuple[PodMetricsInfo, float | None]:
        params = {"labelSelector": str(selector) or None, "metricLabelSelector": _selector_param(metric_selector)}
        items = await self._custom_get(f"namespaces/{namespace}/pods/*/{metric_name}", params)
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        res: PodMetricsInfo = {}
        for m in items:
            window = DEFAULT_METRIC_WINDOW if m.get("windowSeconds") is None else float(m["windowSeconds"])
            name = str((m.get("describedObject") or {}).get("name") or "")
            res[name] = PodMetric(_milli(m.get("value")), _time(m.get("timestamp")), window)
        return res, _time(items[0].get("timestamp"))

    async def get_object_metric(
        self, metric_name: str, namespace: str, object_ref: Mapping[str, Any], metric_selector: Mapping[str, Any] | None
    ) -> tuple[int, float | None]:
        group = str(object_ref.get("apiVersion") or "").rpartition("/")[0]
        kind = str(object_ref.get("kind") or "")
        params = {"metricLabelSelector": _selector_param(metric_selector)}
        if kind == "Namespace" and group == "":
            # A namespace's own metrics; the reference's name is not looked at, so that none escapes its namespace.
            tail = f"namespaces/{namespace}/metrics/{metric_name}"
        else:
            mapped = next((r for r in TABLE.in_preference_order() if r.group == group and r.kind == kind), None)
            if mapped is None:
                raise MetricsError(
                    f'unable to fetch metrics from custom metrics API: no matches for kind "{kind}" in group "{group}"'
                )
            resource = f"{mapped.plural}.{group}" if group else mapped.plural
            tail = f"namespaces/{namespace}/{resource}/{object_ref.get('name', '')}/{metric_name}"
        items = await self._custom_get(tail, params)
        if len(items) != 1:
            raise MetricsError(
                "unable to fetch metrics from custom metrics API: the custom metrics API server returned "
                f"{len(items)} results when we asked for exactly one"
            )
        return _milli(items[0].get("value")), _time(items[0].get("timestamp"))

    # -- external metrics ---------------------------------------------------------------------------------

    async def get_external_metric(
        self, metric_name: str, namespace: str, metric_selector: Mapping[str, Any] | None
    ) -> tuple[list[int], float | None]:
        path = f"/apis/{EXTERNAL_GROUP}/{EXTERNAL_VERSION}/namespaces/{namespace}/{metric_name}"
        try:
            doc = await self.client.request("GET", path, params={"labelSelector": _selector_param(metric_selector)})
        except errors.NotFound:
            raise MetricsError(
                "unable to fetch metrics from external metrics API: the server could not find the requested "
                f"resource (get {metric_name}.{EXTERNAL_GROUP})"
            ) from None
        except (errors.StatusError, ConnectionError) as e:
            raise MetricsError(f"unable to fetch metrics from external metrics API: {e}") from None
        items = (doc or {}).get("items") or [] if isinstance(doc, dict) else []
        if not items:
            raise MetricsError("no metrics returned from external metrics API")
        return [_milli(m.get("value")) for m in items], _time(items[0].get("timestamp"))


def _container_metrics(items: list[dict[str, Any]], resource: str, container: str) -> PodMetricsInfo:
    res: PodMetricsInfo = {}
    for m in items:
        md = m.get("metadata") or {}
        found = next((c for c in m.get("containers") or () if c.get("name") == container), None)
        if found is None:
            raise MetricsError(
                f"failed to get container metrics: container {container} not present in metrics for pod "
                f"{md.get('namespace', '')}/{md.get('name', '')}"
            )
        usage = (found.get("usage") or {}).get(resource)
        if usage is not None:
            res[str(md.get("name", ""))] = PodMetric(_milli(usage), _time(m.get("timestamp")), _window(m.get("window")))
    return res


def _pod_metrics(items: list[dict[str, Any]], resource: str) -> PodMetricsInfo:
    """Each pod's sum over its containers; a pod with no containers, or one lacking the resource, is left out."""
    res: PodMetricsInfo = {}
    for m in items:
        containers = m.get("containers") or []
        usages = [(c.get("usage") or {}).get(resource) for c in containers]
        if not containers or any(u is None for u in usages):
            continue
        name = str((m.get("metadata") or {}).get("name", ""))
        res[name] = PodMetric(sum(_milli(u) for u in usages), _time(m.get("timestamp")), _window(m.get("window")))
    return res
