"""The autoscaler's metrics (upstream: pkg/controller/podautoscaler/metrics): the client interface
(interfaces.py), the client over the API server's metrics APIs (client.py), and the utilization arithmetic
(utilization.py)."""

from .client import RESTMetricsClient
from .interfaces import MetricsClient, MetricsError, PodMetric, PodMetricsInfo
from .utilization import get_metric_usage_ratio, get_resource_utilization_ratio

__all__ = [
    "MetricsClient",
    "MetricsError",
    "PodMetric",
    "PodMetricsInfo",
    "RESTMetricsClient",
    "get_metric_usage_ratio",
    "get_resource_utilization_ratio",
]
