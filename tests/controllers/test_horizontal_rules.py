"""The horizontal pod autoscaler's arithmetic without a cluster: the replica calculator over given pods and
metrics (upstream: replica_calculator_test.go's kinds of cases, worked out here), the behavior-less and behavior
normalization (stabilization windows, scaling policies, selectPolicy, min/max), and properties of both under
hypothesis: the count never leaves [minReplicas, maxReplicas], never grows past what the policies allow within a
period, and never moves against the usage."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.selectors import LabelSelector, parse_label_selector
from pyk8s.controllers.podautoscaler import normalization as norm
from pyk8s.controllers.podautoscaler.metrics import MetricsError, PodMetric, PodMetricsInfo
from pyk8s.controllers.podautoscaler.replica_calculator import ReplicaCalculator, group_pods

NOW = 1_700_000_000.0
SELECTOR = parse_label_selector("app=web")


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, cpu: str = "1", *, phase: str = "Running", ready: bool = True, started: float = NOW - 3600,
        transition: float | None = None, deleting: bool = False, containers: list[dict[str, Any]] | None = None,
        ) -> dict[str, Any]:  # fmt: skip
    md: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": "web"}}
    if deleting:
        md["deletionTimestamp"] = stamp(NOW)
    status: dict[str, Any] = {"phase": phase, "startTime": stamp(started), "conditions": [
        {"type": "Ready", "status": "True" if ready else "False",
         "lastTransitionTime": stamp(started + 1 if transition is None else transition)}]}  # fmt: skip
    spec = {"containers": containers or [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": cpu}}}]}
    return {"metadata": md, "spec": spec, "status": status}


class FakeMetrics:
    """A MetricsClient answering from a table: pod -> milli-value (per container when `container` is asked)."""

    def __init__(self, values: Mapping[str, int], *, timestamp: float = NOW, window: float = 15.0,
                 per_container: Mapping[str, Mapping[str, int]] | None = None, error: str = "") -> None:  # fmt: skip
        self.values, self.timestamp, self.window = values, timestamp, window
        self.per_container = per_container or {}
        self.error = error

    async def get_resource_metric(
        self, resource: str, namespace: str, selector: LabelSelector, container: str
    ) -> tuple[PodMetricsInfo, float | None]:
        if self.error:
            raise MetricsError(self.error)
        source = {p: c[container] for p, c in self.per_container.items()} if container else self.values
        return {p: PodMetric(v, self.timestamp, self.window) for p, v in source.items()}, self.timestamp

    async def get_raw_metric(self, *args: Any) -> tuple[PodMetricsInfo, float | None]:
        raise MetricsError("no custom metrics API (custom.metrics.k8s.io) registered")

    async def get_object_metric(self, *args: Any) -> tuple[int, float | None]:
        raise MetricsError("no custom metrics API (custom.metrics.k8s.io) registered")

    async def get_external_metric(self, *args: Any) -> tuple[list[int], float | None]:
        raise MetricsError("nothing here")


def calculator(pods: list[dict[str, Any]], metrics: FakeMetrics) -> ReplicaCalculator:
    return ReplicaCalculator(metrics, lambda ns, sel: [p for p in pods if sel.matches(p["metadata"]["labels"])],
                             clock=lambda: NOW)  # fmt: skip


def utilization(pods: list[dict[str, Any]], values: Mapping[str, int], current: int, target: int,
                resource: str = "cpu", container: str = "", **metrics: Any) -> tuple[int, int, int]:  # fmt: skip
    calc = calculator(pods, FakeMetrics(values, **metrics))
    replicas, pct, raw, _ = asyncio.run(
        calc.get_resource_replicas(current, target, resource, "ns", SELECTOR, container)
    )
    return replicas, pct, raw


# -- the replica calculator -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "values", "current", "target", "want"),
    [
        # 1500m of 3000m requested is 50 % against 30 %: 3 x 50/30, rounded up.
        ([pod("a"), pod("b"), pod("c")], {"a": 300, "b": 500, "c": 700}, 3, 30, (5, 50, 500)),
        # 28 % against 50 %: 5 x 0.56 = 2.8 -> 3.
        ([pod(n) for n in "abcde"], {"a": 100, "b": 300, "c": 500, "d": 250, "e": 250}, 5, 50, (3, 28, 280)),
        # 102 % against 100 %: inside the 10 % tolerance.
        ([pod("a", "900m"), pod("b", "1"), pod("c", "1100m")], {"a": 1010, "b": 1030, "c": 1020}, 3, 100,
         (3, 102, 1020)),
        # An unready pod on a scale-up counts as 0 %: (500 + 700 + 0) / 3000 = 40 % -> 3 x 40/30 -> 4 (not 6).
        ([pod("a", ready=False, transition=NOW - 3600 + 5), pod("b"), pod("c")], {"a": 300, "b": 500, "c": 700},
         3, 30, (4, 60, 600)),
        # A missing pod on a scale-down counts as using its whole request: (300 + 1000) / 4000 = 32 % -> 3, not 1.
        ([pod(n) for n in "abcd"], {"a": 100, "b": 100, "c": 100}, 4, 50, (3, 10, 100)),
        # A missing pod on a scale-up counts as 0 %: 2700 / 4000 = 67 % -> 4 x 1.34 -> 6.
        ([pod(n) for n in "abcd"], {"a": 900, "b": 900, "c": 900}, 4, 50, (6, 90, 900)),
        # ... unless that turns the direction round: 600 / 2000 = 30 % < 50 %, so nothing changes.
        ([pod("a"), pod("b")], {"a": 600}, 2, 50, (2, 60, 600)),
        # Failed and deleting pods are left out; a Pending one is unready.
        ([pod("a"), pod("b", phase="Failed"), pod("c", deleting=True), pod("d", phase="Pending")],
         {"a": 200, "b": 900, "c": 900}, 2, 50, (1, 20, 200)),
    ],
)  # fmt: skip
def test_resource_utilization(pods, values, current, target, want):
    assert utilization(pods, values, current, target) == want


def test_container_resource_and_average_value():
    two = [{"name": "app", "resources": {"requests": {"cpu": "500m"}}},
           {"name": "side", "resources": {"requests": {"cpu": "500m"}}}]  # fmt: skip
    pods = [pod("a", containers=two), pod("b", containers=two)]
    per = {"a": {"app": 450, "side": 10}, "b": {"app": 350, "side": 10}}
    # Only the app containers: 800m of 1000m is 80 % against 40 % -> 4.
    assert utilization(pods, {}, 2, 40, container="app", per_container=per) == (4, 80, 400)
    calc = calculator([pod(n) for n in "abc"], FakeMetrics({"a": 300, "b": 500, "c": 700}))
    replicas, usage, _ = asyncio.run(calc.get_raw_resource_replicas(3, 400, "cpu", "ns", SELECTOR, ""))
    assert (replicas, usage) == (4, 500)  # 500m each against 400m: 3 x 1.25 -> 4


@pytest.mark.parametrize(
    ("pods", "values", "message"),
    [
        ([], {"a": 1}, "no pods returned by selector while calculating replica count"),
        ([pod("a", phase="Pending")], {"a": 1}, "did not receive metrics for targeted pods (pods might be unready)"),
        ([pod("a", containers=[{"name": "c"}])], {"a": 1}, "missing request for cpu in container c of Pod a"),
    ],
)
def test_calculator_errors(pods, values, message):
    with pytest.raises(MetricsError) as err:
        utilization(pods, values, 1, 50)
    assert str(err.value) == message
    with pytest.raises(MetricsError) as err:
        utilization([pod("a")], {}, 1, 50, error="boom")
    assert str(err.value) == "unable to get metrics for resource cpu: boom"


def test_cpu_samples_count_once_the_pod_has_settled():
    start = NOW - 60  # within the 5 minutes' CPU initialization period
    pods = [
        pod("ready-long-enough", started=start, transition=NOW - 20),  # Ready 20 s before a 15 s-window sample
        pod("ready-too-recently", started=start, transition=NOW - 10),  # the sample may predate readiness
        pod("not-ready", started=start, ready=False, transition=start + 1),
        pod("never-ready", started=NOW - 3600, ready=False, transition=NOW - 3600 + 20),  # within 30 s of start
        pod("was-ready", started=NOW - 3600, ready=False, transition=NOW - 600),  # unready later on: counts
        pod("unknown", started=NOW - 3600, ready=False) | {"status": {"phase": "Running"}},  # no condition, no start
    ]
    metrics = {p["metadata"]["name"]: PodMetric(100, NOW, 15.0) for p in pods}
    ready, unready, missing, ignored = group_pods(pods, metrics, "cpu", 300.0, 30.0, NOW)
    assert (ready, missing, ignored) == (2, set(), set())
    assert unready == {"ready-too-recently", "not-ready", "never-ready", "unknown"}
    # Other resources are trusted at once.
    assert group_pods(pods, metrics, "memory", 300.0, 30.0, NOW)[0] == 6


# -- normalization ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "desired", "lo", "hi", "want"),
    [
        (1, 6, 1, 4, (4, "TooManyReplicas")),  # max 4 is within the 2x/4 step
        (1, 10, 1, 20, (4, "ScaleUpLimit")),  # from 1, at most 4 at once
        (10, 30, 1, 50, (20, "ScaleUpLimit")),  # from 10, at most 20
        (5, 0, 2, 10, (2, "TooFewReplicas")),
        (3, 3, 1, 10, (3, "DesiredWithinRange")),
    ],
)
def test_convert_desired_replicas_with_rules(current, desired, lo, hi, want):
    got, reason, _ = norm.convert_desired_replicas_with_rules(current, desired, lo, hi)
    assert (got, reason) == want


def test_behavior_less_stabilization_keeps_the_highest_of_the_window():
    recs = [norm.Recommendation(5, NOW - 100), norm.Recommendation(9, NOW - 400)]
    assert norm.stabilize_recommendation(recs, 2, 300.0, NOW) == 5
    # The sample older than the window made room for this one.
    assert [(r.replicas, r.timestamp) for r in recs] == [(5, NOW - 100), (2, NOW)]
    assert norm.stabilize_recommendation(recs, 7, 300.0, NOW + 1) == 7


def rules(select: str = "Max", window: int = 0, *policies: tuple[str, int, int]) -> dict[str, Any]:
    return {"stabilizationWindowSeconds": window, "selectPolicy": select,
            "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in policies]}  # fmt: skip


UP = rules("Max", 0, ("Pods", 4, 60), ("Percent", 100, 60))
DOWN = rules("Max", 300, ("Percent", 50, 60))


def arg(current: int, desired: int, up: dict[str, Any] = UP, down: dict[str, Any] = DOWN, lo: int = 1,
        hi: int = 100) -> norm.NormalizationArg:  # fmt: skip
    return norm.NormalizationArg("ns/h", up, down, lo, hi, current, desired)


def test_stabilization_windows_per_direction():
    recs = [norm.Recommendation(8, NOW - 100), norm.Recommendation(3, NOW - 200)]
    # Down: the highest of the last 300 s (8) holds a scale-down from 10 to 2 at 8.
    assert norm.stabilize_recommendation_with_behaviors(recs, arg(10, 2), NOW)[:2] == (8, "ScaleDownStabilized")
    # Up with a 150 s window: the lowest of the window (2, just recorded) holds a scale-up from 4 at 4.
    recs = [norm.Recommendation(2, NOW - 100)]
    got = norm.stabilize_recommendation_with_behaviors(recs, arg(4, 9, up=rules("Max", 150, ("Pods", 4, 60))), NOW)
    assert got[:2] == (4, "ScaleUpStabilized")


@pytest.mark.parametrize(
    ("select", "want"),
    [("Max", 14), ("Min", 11), ("Disabled", 10)],
)
def test_scale_up_policies(select, want):
    # 3 added 30 s ago: the period started at 7; Pods allows 7 + 4 = 11, Percent 7 x 2 = 14.
    up_events = [norm.ScaleEvent(3, NOW - 30)]
    r = rules(select, 0, ("Pods", 4, 60), ("Percent", 100, 60))
    assert norm.calculate_scale_up_limit_with_scaling_rules(10, up_events, [], r, NOW) == want


def test_scale_down_policies_and_limits():
    down_events = [norm.ScaleEvent(2, NOW - 10), norm.ScaleEvent(5, NOW - 61)]  # the second is out of the period
    assert norm.calculate_scale_down_limit_with_behaviors(8, [], down_events, DOWN, NOW) == 5  # 10 x 50 %
    a = arg(8, 1)
    assert norm.convert_desired_replicas_with_behavior_rate(a, [], down_events, NOW)[:2] == (5, "ScaleDownLimit")
    assert norm.convert_desired_replicas_with_behavior_rate(arg(8, 1, lo=6), [], [], NOW)[:2] == (6, "TooFewReplicas")
    assert norm.convert_desired_replicas_with_behavior_rate(arg(3, 50, hi=5), [], [], NOW)[:2] == (5, "TooManyReplicas")
    assert norm.convert_desired_replicas_with_behavior_rate(arg(3, 50), [], [], NOW)[:2] == (7, "ScaleUpLimit")
    assert norm.convert_desired_replicas_with_behavior_rate(arg(3, 5), [], [], NOW)[:2] == (5, "DesiredWithinRange")


def test_scale_events_reuse_outdated_slots():
    ups: list[norm.ScaleEvent] = []
    behavior = {"scaleUp": UP, "scaleDown": DOWN}
    norm.store_scale_event(behavior, ups, [], 1, 3, NOW - 100)
    norm.store_scale_event(behavior, ups, [], 3, 4, NOW)  # the first is older than 60 s: its slot is reused
    assert [(e.replica_change, e.timestamp) for e in ups] == [(1, NOW)]
    norm.store_scale_event(None, ups, [], 4, 9, NOW)  # without behavior nothing is kept
    assert len(ups) == 1


# -- properties ---------------------------------------------------------------------------------------------

bounds = st.integers(1, 30).flatmap(lambda lo: st.tuples(st.just(lo), st.integers(lo, 60)))
policy = st.tuples(st.sampled_from(["Pods", "Percent"]), st.integers(1, 200), st.integers(1, 120))
scaling_rules = st.builds(
    lambda select, window, policies: rules(select, window, *policies),
    st.sampled_from(["Max", "Min", "Disabled"]), st.integers(0, 300), st.lists(policy, min_size=1, max_size=3),
)  # fmt: skip
events = st.lists(st.builds(norm.ScaleEvent, st.integers(0, 20), st.floats(NOW - 200, NOW)), max_size=5)


@given(bounds.flatmap(lambda b: st.tuples(st.just(b), st.integers(b[0], b[1]))), st.integers(0, 500))
def test_behavior_less_count_stays_within_bounds(bc, desired):
    (lo, hi), current = bc
    got, _, _ = norm.convert_desired_replicas_with_rules(current, desired, lo, hi)
    assert lo <= got <= hi
    assert got <= max(2 * current, 4) or got == lo


@given(bounds.flatmap(lambda b: st.tuples(st.just(b), st.integers(b[0], b[1]))), st.integers(0, 500),
       scaling_rules, scaling_rules, events, events,
       st.lists(st.tuples(st.integers(0, 500), st.floats(NOW - 600, NOW)), max_size=6))  # fmt: skip
def test_behavior_count_stays_within_bounds_and_policy_limits(bc, desired, up, down, ups, downs, history):
    (lo, hi), current = bc
    recs = [norm.Recommendation(r, t) for r, t in history]
    a = norm.NormalizationArg("k", up, down, lo, hi, current, desired)
    stabilized, _, _ = norm.stabilize_recommendation_with_behaviors(recs, a, NOW)
    a = norm.NormalizationArg("k", up, down, lo, hi, current, stabilized)
    got, _, _ = norm.convert_desired_replicas_with_behavior_rate(a, ups, downs, NOW)
    assert lo <= got <= hi
    if got > current:
        assert got <= norm.calculate_scale_up_limit_with_scaling_rules(current, ups, downs, up, NOW)
    if got < current:
        assert got >= norm.calculate_scale_down_limit_with_behaviors(current, ups, downs, down, NOW)
    if up["selectPolicy"] == "Disabled":
        assert got <= max(current, lo)


@settings(max_examples=60)
@given(st.integers(1, 10), st.integers(5, 60),
       st.lists(st.tuples(st.floats(0.5, 20), st.integers(1, 40)), min_size=1, max_size=25))  # fmt: skip
def test_scale_up_never_passes_the_pods_policy_within_a_period(value, period, steps):
    """Syncs at random moments with random recommendations: whenever pods are added, no more were added within
    the period up to then than the policy's value plus what was removed in it."""
    up = rules("Max", 0, ("Pods", value, period))
    down = rules("Max", 0, ("Pods", 3, period))
    behavior = {"scaleUp": up, "scaleDown": down}
    ups: list[norm.ScaleEvent] = []
    downs: list[norm.ScaleEvent] = []
    recs: list[norm.Recommendation] = []
    log: list[tuple[float, int]] = []  # (when, change) of every rescale
    now, current = NOW, 1
    for gap, desired in steps:
        now += gap
        a = norm.NormalizationArg("k", up, down, 1, 40, current, desired)
        stabilized, _, _ = norm.stabilize_recommendation_with_behaviors(recs, a, now)
        a = norm.NormalizationArg("k", up, down, 1, 40, current, stabilized)
        got, _, _ = norm.convert_desired_replicas_with_behavior_rate(a, ups, downs, now)
        if got != current:
            norm.store_scale_event(behavior, ups, downs, current, got, now)
            log.append((now, got - current))
            current = got
    for when, change in log:
        if change < 0:
            continue  # the bound is the scale-up's, when it is decided
        inside = [c for t, c in log if when - period < t <= when]
        assert sum(c for c in inside if c > 0) <= value + sum(-c for c in inside if c < 0)


@given(st.lists(st.integers(0, 3000), min_size=1, max_size=8), st.integers(0, 3), st.integers(0, 2),
       st.integers(10, 200))  # fmt: skip
def test_the_count_never_moves_against_the_usage(usages, missing, pending, target):
    """Whatever pods lack metrics or are not running yet, the count only grows when the measured pods use more
    than the target and only shrinks when they use less."""
    names = [f"p{i}" for i in range(len(usages) + missing + pending)]
    pods = [pod(n, phase="Pending" if i >= len(usages) + missing else "Running") for i, n in enumerate(names)]
    values = dict(zip(names, usages, strict=False))
    current = len(pods)
    got, pct, _ = utilization(pods, values, current, target, resource="memory")
    ratio = pct / target
    if ratio > 1.0:
        assert got >= current
    elif ratio < 1.0:
        assert got <= current
    if not missing and not pending and abs(1 - ratio) > 0.1:
        assert got == math.ceil(ratio * len(usages))
