"""One metric's replica proposal and its `currentMetrics` entry (upstream: computeReplicasForMetric and the
computeStatusFor*Metric functions of pkg/controller/podautoscaler/horizontal.go, v1.32).

Resource and ContainerResource metrics take a Utilization target (percent of the pods' requests) or an
AverageValue; Pods metrics an AverageValue; Object and External metrics a Value or an AverageValue. A metric
that cannot be had fails with upstream's wrapped message and the ScalingActive=False condition it proposes
(FailedGetResourceMetric, FailedGetPodsMetric, ...), after a Warning event of that reason, as upstream records.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ...api.quantity import Format, Quantity, QuantityError, canonical, milli_value, parse_quantity
from ...api.selectors import LabelSelector, SelectorError, label_selector_from_object
from . import gofmt
from .metrics import MetricsError
from .replica_calculator import ReplicaCalculator

Object = Mapping[str, Any]
# (type, status, reason, message) of an HPA condition.
Condition = tuple[str, str, str, str]
# Records a Warning event about the autoscaler: (reason, message).
Warn = Callable[[str, str], None]


@dataclass(frozen=True)
class Proposal:
    """What one metric asks for."""

    replicas: int
    metric: str  # how the metric is named in conditions and events
    timestamp: float | None
    status: dict[str, Any]  # its MetricStatus


class MetricFailure(Exception):
    """A metric that gave no proposal: the message, and the condition it proposes for the autoscaler."""

    def __init__(self, message: str, condition: Condition) -> None:
        super().__init__(message)
        self.condition = condition


def milli_quantity(milli: int) -> str:
    """resource.NewMilliQuantity(milli, DecimalSI) as it is written."""
    return canonical(Quantity.from_value(Fraction(milli, 1000), Format.DecimalSI))


def _milli(text: Any) -> int:
    try:
        return milli_value(parse_quantity(str(text)))
    except (QuantityError, ValueError) as e:
        raise MetricsError(f"invalid quantity {text!r}: {e}") from None


def _identifier(metric: Object) -> dict[str, Any]:
    out: dict[str, Any] = {"name": metric.get("name", "")}
    if metric.get("selector") is not None:
        out["selector"] = metric["selector"]
    return out


class MetricProposer:
    """Turns each metric spec into a Proposal through the replica calculator."""

    def __init__(self, calc: ReplicaCalculator) -> None:
        self.calc = calc

    @staticmethod
    def _unable(warn: Warn, reason: str, err: object) -> Condition:
        """Upstream's getUnableComputeReplicaCountCondition: an event, and the condition to set."""
        warn(reason, str(err))
        return ("ScalingActive", "False", reason, f"the HPA was unable to compute the replica count: {err}")

    async def propose(
        self, hpa: Object, spec: Object, spec_replicas: int, status_replicas: int, selector: LabelSelector, warn: Warn
    ) -> Proposal:
        """One metric's proposal; MetricFailure when it has none."""
        namespace = str((hpa.get("metadata") or {}).get("namespace") or "")
        kind = spec.get("type")
        if kind == "Object":
            source = spec.get("object") or {}
            return await self._checked(
                "FailedGetObjectMetric", "failed to get object metric value", source, warn,
                self._object(source, spec_replicas, status_replicas, namespace, selector, warn),
            )  # fmt: skip
        if kind == "Pods":
            source = spec.get("pods") or {}
            return await self._checked(
                "FailedGetPodsMetric", "failed to get pods metric value", source, warn,
                self._pods(source, spec_replicas, namespace, selector, warn),
            )  # fmt: skip
        if kind == "Resource":
            source = spec.get("resource") or {}
            try:
                return await self._resource(source, spec_replicas, namespace, selector, "", warn)
            except MetricFailure as f:
                raise MetricFailure(f"failed to get {source.get('name', '')} resource metric value: {f}",
                                    f.condition) from None  # fmt: skip
        if kind == "ContainerResource":
            source = spec.get("containerResource") or {}
            try:
                return await self._resource(source, spec_replicas, namespace, selector, str(source.get("container")),
                                            warn)  # fmt: skip
            except MetricFailure as f:
                raise MetricFailure(f"failed to get {source.get('container', '')} container metric value: {f}",
                                    f.condition) from None  # fmt: skip
        if kind == "External":
            source = spec.get("external") or {}
            try:
                return await self._external(source, spec_replicas, status_replicas, namespace, selector, warn)
            except MetricFailure as f:
                name = (source.get("metric") or {}).get("name", "")
                raise MetricFailure(f"failed to get {name} external metric value: {f}", f.condition) from None
        # The API server's validation keeps other types out.
        err = f"unknown metric source type {gofmt.quote(str(kind or ''))}"
        raise MetricFailure(err, self._unable(warn, "InvalidMetricSourceType", err))

    async def _checked(
        self, reason: str, wrap: str, source: Object, warn: Warn, compute: Coroutine[Any, Any, Proposal]
    ) -> Proposal:
        """Object and Pods metrics: their metric selector must parse before anything is asked."""
        selector = (source.get("metric") or {}).get("selector")
        try:
            if selector is not None:
                label_selector_from_object(selector)
        except SelectorError as e:
            compute.close()
            raise MetricFailure(f"{wrap}: {e}", self._unable(warn, reason, e)) from None
        try:
            result: Proposal = await compute
        except MetricFailure as f:
            raise MetricFailure(f"{wrap}: {f}", f.condition) from None
        return result

    async def _object(
        self, source: Object, spec_replicas: int, status_replicas: int, namespace: str, selector: LabelSelector,
        warn: Warn,
    ) -> Proposal:  # fmt: skip
        metric, target = source.get("metric") or {}, source.get("target") or {}
        described = source.get("describedObject") or {}
        name = str(metric.get("name", ""))
        if target.get("type") == "Value" and target.get("value") is not None:
            try:
                replicas, usage, stamp = await self.calc.get_object_metric_replicas(
                    spec_replicas, _milli(target["value"]), name, namespace, described, selector, metric.get("selector")
                )
            except MetricsError as e:
                raise MetricFailure(str(e), self._unable(warn, "FailedGetObjectMetric", e)) from None
            status = {"type": "Object", "object": {"describedObject": dict(described), "metric": _identifier(metric),
                                                   "current": {"value": milli_quantity(usage)}}}  # fmt: skip
            return Proposal(replicas, f"{described.get('kind', '')} metric {name}", stamp, status)
        if target.get("type") == "AverageValue" and target.get("averageValue") is not None:
            try:
                replicas, usage, stamp = await self.calc.get_object_per_pod_metric_replicas(
                    status_replicas, _milli(target["averageValue"]), name, namespace, described, metric.get("selector")
                )
            except MetricsError as e:
                raise MetricFailure(f"failed to get {name} object metric: {e}",
                                    self._unable(warn, "FailedGetObjectMetric", e)) from None  # fmt: skip
            # As upstream: no describedObject in this status (its zero value), and named as an external metric.
            status = {"type": "Object", "object": {"describedObject": {"kind": "", "name": ""},
                                                   "metric": _identifier(metric),
                                                   "current": {"averageValue": milli_quantity(usage)}}}  # fmt: skip
            return Proposal(replicas, f"external metric {name}({gofmt.label_selector(metric.get('selector'))})",
                            stamp, status)  # fmt: skip
        err = "invalid object metric source: neither a value target nor an average value target was set"
        raise MetricFailure(err, self._unable(warn, "FailedGetObjectMetric", err))

    async def _pods(
        self, source: Object, spec_replicas: int, namespace: str, selector: LabelSelector, warn: Warn
    ) -> Proposal:
        metric, target = source.get("metric") or {}, source.get("target") or {}
        name = str(metric.get("name", ""))
        try:
            replicas, usage, stamp = await self.calc.get_metric_replicas(
                spec_replicas, _milli(target.get("averageValue")), name, namespace, selector, metric.get("selector")
            )
        except MetricsError as e:
            raise MetricFailure(str(e), self._unable(warn, "FailedGetPodsMetric", e)) from None
        status = {"type": "Pods", "pods": {"metric": _identifier(metric),
                                           "current": {"averageValue": milli_quantity(usage)}}}  # fmt: skip
        return Proposal(replicas, f"pods metric {name}", stamp, status)

    async def _resource(
        self, source: Object, spec_replicas: int, namespace: str, selector: LabelSelector, container: str, warn: Warn
    ) -> Proposal:
        """Resource (container "") and ContainerResource metrics (upstream: computeStatusForResourceMetricGeneric
        and its two callers)."""
        name, target = str(source.get("name", "")), source.get("target") or {}
        reason = "FailedGetContainerResourceMetric" if container else "FailedGetResourceMetric"
        current: dict[str, Any]
        try:
            if target.get("averageValue") is not None:
                try:
                    replicas, raw, stamp = await self.calc.get_raw_resource_replicas(
                        spec_replicas, _milli(target["averageValue"]), name, namespace, selector, container
                    )
                except MetricsError as e:
                    raise MetricsError(f"failed to get {name} usage: {e}") from None
                metric_name, current = f"{name} resource", {"averageValue": milli_quantity(raw)}
            elif target.get("averageUtilization") is None:
                raise MetricsError(
                    "invalid resource metric source: neither an average utilization target nor an average value "
                    "(usage) target was set"
                )
            else:
                try:
                    replicas, pct, raw, stamp = await self.calc.get_resource_replicas(
                        spec_replicas, int(target["averageUtilization"]), name, namespace, selector, container
                    )
                except MetricsError as e:
                    raise MetricsError(f"failed to get {name} utilization: {e}") from None
                what = "container resource" if container else "resource"
                metric_name = f"{name} {what} utilization (percentage of request)"
                current = {"averageUtilization": pct, "averageValue": milli_quantity(raw)}
        except MetricsError as e:
            raise MetricFailure(str(e), self._unable(warn, reason, e)) from None
        if container:
            status = {"type": "ContainerResource",
                      "containerResource": {"name": name, "container": container, "current": current}}  # fmt: skip
        else:
            status = {"type": "Resource", "resource": {"name": name, "current": current}}
        return Proposal(replicas, metric_name, stamp, status)

    async def _external(
        self, source: Object, spec_replicas: int, status_replicas: int, namespace: str, selector: LabelSelector,
        warn: Warn,
    ) -> Proposal:  # fmt: skip
        metric, target = source.get("metric") or {}, source.get("target") or {}
        name, metric_selector = str(metric.get("name", "")), metric.get("selector")
        described = f"external metric {name}({gofmt.label_selector(metric_selector)})"
        if target.get("averageValue") is not None:
            try:
                replicas, usage, stamp = await self.calc.get_external_per_pod_metric_replicas(
                    status_replicas, _milli(target["averageValue"]), name, namespace, metric_selector
                )
            except MetricsError as e:
                raise MetricFailure(f"failed to get {name} external metric: {e}",
                                    self._unable(warn, "FailedGetExternalMetric", e)) from None  # fmt: skip
            current = {"averageValue": milli_quantity(usage)}
        elif target.get("value") is not None:
            try:
                replicas, usage, stamp = await self.calc.get_external_metric_replicas(
                    spec_replicas, _milli(target["value"]), name, namespace, metric_selector, selector
                )
            except MetricsError as e:
                raise MetricFailure(f"failed to get external metric {name}: {e}",
                                    self._unable(warn, "FailedGetExternalMetric", e)) from None  # fmt: skip
            current = {"value": milli_quantity(usage)}
        else:
            err = "invalid external metric source: neither a value target nor an average value target was set"
            raise MetricFailure(err, self._unable(warn, "FailedGetExternalMetric", err))
        status = {"type": "External", "external": {"metric": _identifier(metric), "current": current}}
        return Proposal(replicas, described, stamp, status)
