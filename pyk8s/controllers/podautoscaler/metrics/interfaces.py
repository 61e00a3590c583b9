"""What the horizontal pod autoscaler asks of a metrics source (upstream:
pkg/controller/podautoscaler/metrics/interfaces.go): per-pod values of a resource or a custom metric, one
object's metric, or an external metric's values.

Values are milli-units (upstream's MilliValue: 250m CPU is 250, 1Gi of memory is 1073741824000) and times are
seconds since the epoch; `None` stands for Go's zero time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ....api.selectors import LabelSelector


class MetricsError(Exception):
    """A metric that could not be had; the message reads as upstream's error does, wrapped by each caller."""


@dataclass(frozen=True)
class PodMetric:
    """One pod's value of a metric, when it was measured and over what window (seconds)."""

    value: int
    timestamp: float | None = None
    window: float = 0.0


# Pod name -> its metric.
PodMetricsInfo = dict[str, PodMetric]


class MetricsClient(Protocol):
    """The four kinds of metrics the controller reads; each raises MetricsError when it cannot answer."""

    async def get_resource_metric(
        self, resource: str, namespace: str, selector: LabelSelector, container: str
    ) -> tuple[PodMetricsInfo, float | None]:
        """A resource's usage (`cpu`, `memory`) of each pod the selector matches (of one container when
        `container` is set), and the first pod's measurement time."""
        ...

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: LabelSelector, metric_selector: Mapping[str, Any] | None
    ) -> tuple[PodMetricsInfo, float | None]:
        """A custom per-pod metric of the pods the selector matches."""
        ...

    async def get_object_metric(
        self, metric_name: str, namespace: str, object_ref: Mapping[str, Any], metric_selector: Mapping[str, Any] | None
    ) -> tuple[int, float | None]:
        """A custom metric of one object (`describedObject`)."""
        ...

    async def get_external_metric(
        self, metric_name: str, namespace: str, metric_selector: Mapping[str, Any] | None
    ) -> tuple[list[int], float | None]:
        """Every value of an external metric that matches the selector."""
        ...
