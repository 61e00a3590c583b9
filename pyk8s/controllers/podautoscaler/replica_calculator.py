"""How many replicas a metric asks for (upstream: pkg/controller/podautoscaler/replica_calculator.go, v1.32).

For per-pod metrics the ratio of the pods' usage to the target scales the pods counted; a ratio within the
tolerance (`|1 - ratio| <= tolerance`) keeps the current count. Pods being deleted or Failed are ignored; Pending
pods are unready; for CPU a pod is also unready while its samples may still be from its start (see `group_pods`).
Pods without a metric are missing. When there are missing pods, or unready ones on a scale-up, the ratio is
worked out again with them filled in conservatively (missing: 100 % of their request, or the target if higher, on
a scale-down and 0 on a scale-up; unready: 0), and the count only moves when the new ratio still points the
same way and leaves the tolerance. Object and external metrics scale by a single value.

Every error message reads as upstream's, so that conditions and events say what a v1.32 cluster says.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...api.meta import parse_time
from ...api.quantity import QuantityError, milli_value, parse_quantity
from ...api.selectors import LabelSelector
from . import gofmt
from .metrics import (
    MetricsClient,
    MetricsError,
    PodMetric,
    PodMetricsInfo,
    get_metric_usage_ratio,
    get_resource_utilization_ratio,
)

Pod = Mapping[str, Any]
PodLister = Callable[[str, LabelSelector], list[Pod]]
INT32_MAX = 2**31 - 1


def _when(text: Any) -> float | None:
    if not text:
        return None
    try:
        return parse_time(str(text)).timestamp()
    except ValueError:
        return None


def _ready_condition(pod: Pod) -> Mapping[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), None)


def group_pods(
    pods: list[Pod], metrics: PodMetricsInfo, resource: str, cpu_initialization_period: float,
    delay_of_initial_readiness_status: float, now: float,
) -> tuple[int, set[str], set[str], set[str]]:  # fmt: skip
    """(ready pod count, unready, missing, ignored pod names).

    A CPU sample is only trusted once the pod has settled: without a Ready condition or a start time the pod is
    unready; within `cpu_initialization_period` of its start it is unready unless it is Ready and its sample was
    taken at least one metric window after it became Ready; later, it is unready only if it is not Ready and
    never was (its Ready condition last changed within `delay_of_initial_readiness_status` of its start)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        md, status = pod.get("metadata") or {}, pod.get("status") or {}
        name = str(md.get("name", ""))
        if md.get("deletionTimestamp") or status.get("phase") == "Failed":
            ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = _ready_condition(pod)
            started = _when(status.get("startTime"))
            if condition is None or started is None:
                is_unready = True
            else:
                # Go's zero time where the transition time is missing: long ago.
                transition = _when(condition.get("lastTransitionTime")) or -62135596800.0
                not_ready = condition.get("status") == "False"
                if started + cpu_initialization_period > now:
                    stamp = metric.timestamp if metric.timestamp is not None else -62135596800.0
                    is_unready = not_ready or stamp < transition + metric.window
                else:
                    is_unready = not_ready and started + delay_of_initial_readiness_status > transition
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def calculate_pod_requests(pods: list[Pod], container: str, resource: str) -> dict[str, int]:
    """Each pod's request of `resource` in milli-units: the sum over its containers and restartable (sidecar)
    init containers, or only `container`'s when one is named. A container without the request is an error."""
    requests: dict[str, int] = {}
    for pod in pods:
        md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        containers = list(spec.get("containers") or ())
        containers += [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
        total = 0
        for c in containers:
            if container and c.get("name") != container:
                continue
            raw = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if raw is None:
                raise MetricsError(
                    f"missing request for {resource} in container {c.get('name', '')} of Pod {md.get('name', '')}"
                )
            try:
                total += milli_value(parse_quantity(str(raw)))
            except (QuantityError, ValueError) as e:
                raise MetricsError(f"invalid request for {resource} in Pod {md.get('name', '')}: {e}") from None
        requests[str(md.get("name", ""))] = total
    return requests


def _int32(x: float) -> int:
    """Go's int32(math.Ceil(x)) for the values that occur (capped rather than wrapped)."""
    return min(math.ceil(x), INT32_MAX)


class ReplicaCalculator:
    """Replica counts from metrics, for pods listed by `pod_lister(namespace, selector)`."""

    def __init__(
        self, metrics_client: MetricsClient, pod_lister: PodLister, *, tolerance: float = 0.1,
        cpu_initialization_period: float = 300.0, delay_of_initial_readiness_status: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.metrics_client = metrics_client
        self.pod_lister = pod_lister
        self.tolerance = tolerance
        self.cpu_initialization_period = cpu_initialization_period
        self.delay_of_initial_readiness_status = delay_of_initial_readiness_status
        self.clock = clock

    def _within_tolerance(self, ratio: float) -> bool:
        return abs(1.0 - ratio) <= self.tolerance

    def _pods(self, namespace: str, selector: LabelSelector) -> list[Pod]:
        pods = self.pod_lister(namespace, selector)
        if not pods:
            raise MetricsError("no pods returned by selector while calculating replica count")
        return pods

    async def get_resource_replicas(
        self, current_replicas: int, target_utilization: int, resource: str, namespace: str,
        selector: LabelSelector, container: str,
    ) -> tuple[int, int, int, float | None]:  # fmt: skip
        """(replicas, utilization in percent of requests, raw average value, timestamp) for a Utilization
        target."""
        try:
            metrics, timestamp = await self.metrics_client.get_resource_metric(resource, namespace, selector, container)
        except MetricsError as e:
            raise MetricsError(f"unable to get metrics for resource {resource}: {e}") from None
        pods = self._pods(namespace, selector)
        ready_count, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization_period, self.delay_of_initial_readiness_status,
            self.clock(),
        )  # fmt: skip
        metrics = {k: v for k, v in metrics.items() if k not in ignored and k not in unready}
        if not metrics:
            raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
        requests = calculate_pod_requests(pods, container, resource)
        ratio, utilization, raw = get_resource_utilization_ratio(metrics, requests, target_utilization)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if self._within_tolerance(ratio):
                return current_replicas, utilization, raw, timestamp
            # Nothing unready or missing: the ratio over the ready pods is the answer.
            return _int32(ratio * ready_count), utilization, raw, timestamp

        if missing:
            if ratio < 1.0:
                # On a scale-down a missing pod is taken to use all of its request (or the target, above 100 %).
                fallback = max(100, target_utilization)
                for name in missing:
                    metrics[name] = PodMetric(requests[name] * fallback // 100)
            elif ratio > 1.0:
                for name in missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)

        new_ratio, _, _ = get_resource_utilization_ratio(metrics, requests, target_utilization)
        return self._refigured(current_replicas, ratio, new_ratio, len(metrics)), utilization, raw, timestamp

    def _refigured(self, current_replicas: int, ratio: float, new_ratio: float, counted: int) -> int:
        """The count from the ratio worked out again with the filled-in pods: the current one when the change is
        too small, or when the filled-in pods (in the ratio or in the count) turn the direction round."""
        if self._within_tolerance(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
            return current_replicas
        new_replicas = _int32(new_ratio * counted)
        if new_ratio < 1.0 and new_replicas > current_replicas:
            return current_replicas
        if new_ratio > 1.0 and new_replicas < current_replicas:
            return current_replicas
        return new_replicas

    async def get_raw_resource_replicas(
        self, current_replicas: int, target_usage: int, resource: str, namespace: str, selector: LabelSelector,
        container: str,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, average usage, timestamp) for an AverageValue target of a resource."""
        try:
            metrics, timestamp = await self.metrics_client.get_resource_metric(resource, namespace, selector, container)
        except MetricsError as e:
            raise MetricsError(f"unable to get metrics for resource {resource}: {e}") from None
        replicas, usage = self.calc_plain_metric_replicas(metrics, current_replicas, target_usage, namespace, selector,
                                                          resource)  # fmt: skip
        return replicas, usage, timestamp

    async def get_metric_replicas(
        self, current_replicas: int, target_usage: int, metric_name: str, namespace: str, selector: LabelSelector,
        metric_selector: Mapping[str, Any] | None,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, average usage, timestamp) for a Pods (custom per-pod) metric."""
        try:
            metrics, timestamp = await self.metrics_client.get_raw_metric(metric_name, namespace, selector,
                                                                          metric_selector)  # fmt: skip
        except MetricsError as e:
            raise MetricsError(f"unable to get metric {metric_name}: {e}") from None
        replicas, usage = self.calc_plain_metric_replicas(metrics, current_replicas, target_usage, namespace, selector,
                                                          "")  # fmt: skip
        return replicas, usage, timestamp

    def calc_plain_metric_replicas(
        self, metrics: PodMetricsInfo, current_replicas: int, target_usage: int, namespace: str,
        selector: LabelSelector, resource: str,
    ) -> tuple[int, int]:  # fmt: skip
        """(replicas, average usage) for a plain (not percentage) per-pod metric."""
        pods = self._pods(namespace, selector)
        ready_count, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization_period, self.delay_of_initial_readiness_status,
            self.clock(),
        )  # fmt: skip
        metrics = {k: v for k, v in metrics.items() if k not in ignored and k not in unready}
        if not metrics:
            raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
        ratio, usage = get_metric_usage_ratio(metrics, target_usage)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if self._within_tolerance(ratio):
                return current_replicas, usage
            return _int32(ratio * ready_count), usage

        if missing:
            if ratio < 1.0:
                # On a scale-down a missing pod is taken to use exactly the target.
                for name in missing:
                    metrics[name] = PodMetric(target_usage)
            elif ratio > 1.0:
                for name in missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)

        new_ratio, _ = get_metric_usage_ratio(metrics, target_usage)
        return self._refigured(current_replicas, ratio, new_ratio, len(metrics)), usage

    async def get_object_metric_replicas(
        self, current_replicas: int, target_usage: int, metric_name: str, namespace: str,
        object_ref: Mapping[str, Any], selector: LabelSelector, metric_selector: Mapping[str, Any] | None,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, usage, timestamp) for an Object metric with a Value target."""
        try:
            usage, _ = await self.metrics_client.get_object_metric(metric_name, namespace, object_ref, metric_selector)
        except MetricsError as e:
            raise MetricsError(
                f"unable to get metric {metric_name}: {e} on {object_ref.get('kind', '')} {namespace}/"
                f"{object_ref.get('name', '')}"
            ) from None
        replicas = self.get_usage_ratio_replica_count(current_replicas, usage / target_usage, namespace, selector)
        # As upstream: the object metric's own timestamp is not passed on.
        return replicas, usage, None

    def get_usage_ratio_replica_count(
        self, current_replicas: int, usage_ratio: float, namespace: str, selector: LabelSelector
    ) -> int:
        """The ready pods scaled by the ratio; from zero replicas, the ratio alone (scale-to-zero)."""
        if current_replicas != 0:
            if self._within_tolerance(usage_ratio):
                return current_replicas
            try:
                ready = self.get_ready_pods_count(namespace, selector)
            except MetricsError as e:
                raise MetricsError(f"unable to calculate ready pods: {e}") from None
            return _int32(usage_ratio * ready)
        return _int32(usage_ratio)

    async def get_object_per_pod_metric_replicas(
        self, status_replicas: int, target_average_usage: int, metric_name: str, namespace: str,
        object_ref: Mapping[str, Any], metric_selector: Mapping[str, Any] | None,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, usage per pod, timestamp) for an Object metric with an AverageValue target."""
        try:
            usage, timestamp = await self.metrics_client.get_object_metric(metric_name, namespace, object_ref,
                                                                           metric_selector)  # fmt: skip
        except MetricsError as e:
            raise MetricsError(
                f"unable to get metric {metric_name}: {e} on {object_ref.get('kind', '')} {namespace}/"
                f"{object_ref.get('name', '')}"
            ) from None
        return (*self._per_pod(status_replicas, usage, target_average_usage), timestamp)

    def _per_pod(self, status_replicas: int, usage: int, target_per_pod: int) -> tuple[int, int]:
        replicas = status_replicas
        ratio = usage / (target_per_pod * replicas) if replicas else math.inf
        if not self._within_tolerance(ratio):
            replicas = _int32(usage / target_per_pod)
        return replicas, (math.ceil(usage / status_replicas) if status_replicas else 0)

    def get_ready_pods_count(self, namespace: str, selector: LabelSelector) -> int:
        pods = self._pods(namespace, selector)
        return sum(
            1 for p in pods
            if (p.get("status") or {}).get("phase") == "Running" and (_ready_condition(p) or {}).get("status") == "True"
        )  # fmt: skip

    async def get_external_metric_replicas(
        self, current_replicas: int, target_usage: int, metric_name: str, namespace: str,
        metric_selector: Mapping[str, Any] | None, pod_selector: LabelSelector,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, total usage, timestamp) for an External metric with a Value target."""
        try:
            values, _ = await self.metrics_client.get_external_metric(metric_name, namespace, metric_selector)
        except MetricsError as e:
            raise MetricsError(
                f"unable to get external metric {namespace}/{metric_name}/{gofmt.label_selector(metric_selector)}: {e}"
            ) from None
        usage = sum(values)
        replicas = self.get_usage_ratio_replica_count(current_replicas, usage / target_usage, namespace, pod_selector)
        return replicas, usage, None

    async def get_external_per_pod_metric_replicas(
        self, status_replicas: int, target_usage_per_pod: int, metric_name: str, namespace: str,
        metric_selector: Mapping[str, Any] | None,
    ) -> tuple[int, int, float | None]:  # fmt: skip
        """(replicas, usage per pod, timestamp) for an External metric with an AverageValue target."""
        try:
            values, timestamp = await self.metrics_client.get_external_metric(metric_name, namespace, metric_selector)
        except MetricsError as e:
            raise MetricsError(
                f"unable to get external metric {namespace}/{metric_name}/{gofmt.label_selector(metric_selector)}: {e}"
            ) from None
        return (*self._per_pod(status_replicas, sum(values), target_usage_per_pod), timestamp)
