"""The scheduler's Prometheus metrics under upstream's names (upstream: pkg/scheduler/metrics), in one
registry served at `/metrics` by `pyk8s scheduler`."""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

SCHEDULER_REGISTRY = CollectorRegistry(auto_describe=True)


@functools.cache
def child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, looked up once: prometheus_client's lookup takes a lock and validates the
    labels on every call, and the scheduler's label sets are few (results, profiles, operations)."""
    return metric.labels(*labels)


_LATENCY_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # 1 ms .. ~16 s, upstream's exponential buckets
_PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))  # 10 µs .. ~22 ms

schedule_attempts = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=SCHEDULER_REGISTRY,
)
scheduling_attempt_duration = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=_LATENCY_BUCKETS,
    registry=SCHEDULER_REGISTRY,
)
scheduling_algorithm_duration = Histogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    buckets=_LATENCY_BUCKETS,
    registry=SCHEDULER_REGISTRY,
)
pod_scheduling_sli_duration = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve "
    "multiple scheduling attempts.",
    ["attempts"],
    buckets=tuple(0.01 * 2**i for i in range(20)),
    registry=SCHEDULER_REGISTRY,
)
pod_scheduling_attempts = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=(1, 2, 4, 8, 16),
    registry=SCHEDULER_REGISTRY,
)
framework_extension_point_duration = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=tuple(0.0001 * 2**i for i in range(12)),
    registry=SCHEDULER_REGISTRY,
)
plugin_execution_duration = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=_PLUGIN_BUCKETS,
    registry=SCHEDULER_REGISTRY,
)
pending_pods = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number "
    "of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted "
    "to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to "
    "schedule because they are gated.",
    ["queue"],
    registry=SCHEDULER_REGISTRY,
)
queue_incoming_pods = Counter(
    "scheduler_queue_incoming_pods_total",
    "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
    registry=SCHEDULER_REGISTRY,
)
unschedulable_pods = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins "
    "that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
    ["plugin", "profile"],
    registry=SCHEDULER_REGISTRY,
)
preemption_attempts = Counter(
    "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now",
    registry=SCHEDULER_REGISTRY,
)  # fmt: skip
preemption_victims = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=(1, 2, 4, 8, 16, 32, 64),
    registry=SCHEDULER_REGISTRY,
)
goroutines = Gauge(  # upstream counts goroutines; we count the binding tasks in flight under the same name
    "scheduler_goroutines", "Number of running goroutines split by the work they do such as binding.", ["operation"],
    registry=SCHEDULER_REGISTRY,
)  # fmt: skip
