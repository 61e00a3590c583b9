"""How far the pods' metrics are from the target (upstream: pkg/controller/podautoscaler/metrics/utilization.go).

Integer arithmetic as upstream's int64/int32: a utilization is whole percents of the requests, rounded down, and
an average is rounded down too, so the ratios here are exactly those upstream computes."""

from __future__ import annotations

from collections.abc import Mapping

from .interfaces import MetricsError, PodMetricsInfo


def _div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def get_resource_utilization_ratio(
    metrics: PodMetricsInfo, requests: Mapping[str, int], target_utilization: int
) -> tuple[float, int, int]:
    """(usage ratio to the target, current utilization in percent of the requests, average raw value) over the
    pods that have both a metric and a request."""
    metrics_total = requests_total = entries = 0
    for pod, metric in metrics.items():
        request = requests.get(pod)
        if request is None:
            continue  # missing requests are reported elsewhere; a metric without one is extraneous
        metrics_total += metric.value
        requests_total += request
        entries += 1
    # When no metric's pod is among those with requests, there is nothing to divide by.
    if requests_total == 0:
        raise MetricsError("no metrics returned matched known pods")
    utilization = _div(metrics_total * 100, requests_total)
    return utilization / target_utilization, utilization, _div(metrics_total, entries)


def get_metric_usage_ratio(metrics: PodMetricsInfo, target_usage: int) -> tuple[float, int]:
    """(usage ratio to the target, average usage) of a plain (not percentage) metric."""
    total = sum(m.value for m in metrics.values())
    usage = _div(total, len(metrics))
    return usage / target_usage, usage
