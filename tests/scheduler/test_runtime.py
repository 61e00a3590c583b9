"""The framework runtime's rules (upstream: framework/runtime/framework_test.go and waiting_pods_map.go): Permit
waits with a timer per plugin, PreFilter going on past an Unschedulable plugin, the plugins whose
PreFilterResult narrowed the nodes, upstream's error messages, and the equivalence cache's replay failing as
the per-node path does."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.scheduler.cache import SchedulerCache
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import (
    Code,
    CycleState,
    FilterPlugin,
    NodeScore,
    PermitPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from pyk8s.scheduler.framework.runtime import FilterError, Framework, ScoreError
from pyk8s.scheduler.framework.snapshot import Snapshot

from .wrappers import make_node, make_pod

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class FakePreFilter(PreFilterPlugin):
    def __init__(self, name: str, status: Status | None = None, nodes: set[str] | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.status = status
        self.nodes = nodes
        self.ran = False

    def pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> tuple[PreFilterResult | None, Status | None]:
        self.ran = True
        state.write(f"ran/{self.name}", True)
        return (None if self.nodes is None else PreFilterResult(set(self.nodes))), self.status


class FakePermit(PermitPlugin):
    def __init__(self, name: str, timeout: float) -> None:
        self.name = name  # type: ignore[misc]
        self.timeout = timeout

    def permit(self, state: CycleState, pod: Any, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT), self.timeout


def framework(plugins: dict[str, list[Any]], snapshot: Snapshot | None = None, **kw: Any) -> Framework:
    registry = {}
    config: dict[str, list[tuple[str, int]]] = {}
    for point, instances in plugins.items():
        for p in instances:
            registry[p.name] = lambda args, handle, p=p: p
            config.setdefault(point, []).append((p.name, 1))
    return Framework("test", config, registry, handle=FrameworkHandle(snapshot or Snapshot()), require_bind=False, **kw)


def snapshot_of(*names: str) -> tuple[SchedulerCache, Snapshot]:
    cache = SchedulerCache()
    for n in names:
        cache.add_node(make_node(n))
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


# -- Permit --------------------------------------------------------------------------------------------------


async def test_each_waiting_plugin_has_its_own_timer_and_allowing_one_keeps_the_others() -> None:
    fw = framework({"permit": [FakePermit("Short", 0.05), FakePermit("Long", 0.3)]})
    pod = make_pod("p")
    st = fw.run_permit_plugins(CycleState(), pod, "n1")
    assert st is not None and st.code == Code.WAIT
    assert st.message() == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    wp = fw.waiting_pods[pod["metadata"]["uid"]]
    wp.allow("Short")  # Long's timer keeps running: the pod waits on, then Long times out
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    st = await fw.wait_on_permit(pod)
    assert loop.time() - t0 > 0.2
    assert st is not None and st.code == U and st.plugin == "Long"
    assert st.message() == "rejected due to timeout after waiting 300ms at plugin Long"
    assert not fw.waiting_pods


async def test_the_first_timer_to_run_out_rejects_the_pod() -> None:
    fw = framework({"permit": [FakePermit("Slow", 10.0), FakePermit("Quick", 0.05)]})
    pod = make_pod("p")
    fw.run_permit_plugins(CycleState(), pod, "n1")
    st = await asyncio.wait_for(fw.wait_on_permit(pod), 5)
    assert st is not None and st.plugin == "Quick"
    assert st.message() == "rejected due to timeout after waiting 50ms at plugin Quick"


async def test_allowed_by_every_plugin_before_the_timers_stops_them() -> None:
    fw = framework({"permit": [FakePermit("A", 0.05), FakePermit("B", 1.5)]})
    pod = make_pod("p")
    fw.run_permit_plugins(CycleState(), pod, "n1")
    wp = fw.waiting_pods[pod["metadata"]["uid"]]
    assert sorted(wp.get_pending_plugins()) == ["A", "B"]
    wp.allow("A")
    wp.allow("B")
    assert await fw.wait_on_permit(pod) is None
    await asyncio.sleep(0.1)  # A's timer would have run out by now: it was stopped
    assert wp.future.result() is None


async def test_timeouts_print_as_go_durations() -> None:
    fw = framework({"permit": [FakePermit("W", 1.5)]})
    pod = make_pod("p")
    fw.run_permit_plugins(CycleState(), pod, "n1")
    wp = fw.waiting_pods[pod["metadata"]["uid"]]
    wp._timed_out("W", 10.0)  # what the timer does when it fires
    assert wp.future.result().message() == "rejected due to timeout after waiting 10s at plugin W"
    wp2_pod = make_pod("q")
    fw.run_permit_plugins(CycleState(), wp2_pod, "n1")
    wp2 = fw.waiting_pods[wp2_pod["metadata"]["uid"]]
    wp2._timed_out("W", 1.5)
    assert wp2.future.result().message() == "rejected due to timeout after waiting 1.5s at plugin W"
    assert await fw.wait_on_permit(pod) is not None and await fw.wait_on_permit(wp2_pod) is not None


async def test_a_rejected_waiting_pod_is_not_waited_on_longer() -> None:
    fw = framework({"permit": [FakePermit("W", 60.0)]})
    pod = make_pod("p")
    fw.run_permit_plugins(CycleState(), pod, "n1")
    fw.waiting_pods[pod["metadata"]["uid"]].reject("", "removed")
    st = await asyncio.wait_for(fw.wait_on_permit(pod), 1)
    assert st == Status(U, "removed")


# -- PreFilter ------------------------------------------------------------------------------------------------


def test_pre_filter_runs_on_after_unschedulable_and_returns_it_at_the_end() -> None:
    _, snap = snapshot_of("n1", "n2")
    first = FakePreFilter("First", Status(U, "no"))
    skipper = FakePreFilter("Skipper", Status(Code.SKIP))
    narrowing = FakePreFilter("Narrowing", nodes={"n1"})
    fw = framework({"preFilter": [first, skipper, narrowing]}, snap)
    state = CycleState()
    result, st, plugins = fw.run_pre_filter_plugins(state, make_pod("p"), snap.node_info_list)
    assert narrowing.ran and state.get("ran/Narrowing")  # its state is there for preemption
    assert st is not None and st.code == U and st.plugin == "First" and st.message() == "no"
    assert result == PreFilterResult({"n1"})
    assert plugins == {"Narrowing"}
    assert state.skip_filter_plugins == {"Skipper"}


def test_pre_filter_returns_the_last_unschedulable_status_as_upstream() -> None:
    _, snap = snapshot_of("n1")
    fw = framework({"preFilter": [FakePreFilter("A", Status(U, "a")), FakePreFilter("B", Status(U, "b"))]}, snap)
    _, st, _ = fw.run_pre_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list)
    assert st is not None and st.plugin == "B"


def test_unschedulable_and_unresolvable_stops_at_once_and_still_records_skips() -> None:
    _, snap = snapshot_of("n1")
    later = FakePreFilter("Later")
    fw = framework(
        {"preFilter": [FakePreFilter("Skip", Status(Code.SKIP)), FakePreFilter("Stop", Status(UU, "never")), later]},
        snap,
    )
    state = CycleState()
    state.skip_filter_plugins = {"stale"}
    result, st, plugins = fw.run_pre_filter_plugins(state, make_pod("p"), snap.node_info_list)
    assert not later.ran
    assert result is None and st is not None and st.code == UU and st.plugin == "Stop" and plugins == set()
    assert state.skip_filter_plugins == {"Skip"}


@pytest.mark.parametrize("code", [Code.PENDING, Code.ERROR, Code.WAIT])
def test_other_pre_filter_statuses_are_errors(code: Code) -> None:
    _, snap = snapshot_of("n1")
    fw = framework({"preFilter": [FakePreFilter("Odd", Status(code, "huh")), FakePreFilter("Later")]}, snap)
    _, st, plugins = fw.run_pre_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list)
    assert st is not None and st.code == Code.ERROR and st.plugin == "Odd"
    assert st.message() == 'running PreFilter plugin "Odd": huh'
    assert plugins == set()


def test_plugins_with_nodes_are_returned_on_success() -> None:
    _, snap = snapshot_of("n1", "n2", "n3")
    fw = framework(
        {
            "preFilter": [
                FakePreFilter("B", nodes={"n1", "n2"}),
                FakePreFilter("All"),
                FakePreFilter("A", nodes={"n2", "n3"}),
            ]
        },
        snap,
    )
    result, st, plugins = fw.run_pre_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list)
    assert st is None and result == PreFilterResult({"n2"})
    assert plugins == {"A", "B"}


def test_no_node_left_names_the_plugins_sorted() -> None:
    _, snap = snapshot_of("n1", "n2")
    fw = framework({"preFilter": [FakePreFilter("Zed", nodes={"n1"}), FakePreFilter("Alpha", nodes={"n2"})]}, snap)
    result, st, plugins = fw.run_pre_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list)
    assert st is not None and st.code == UU
    assert st.message() == "node(s) didn't satisfy plugin(s) [Alpha Zed] simultaneously"
    assert plugins == {"Alpha", "Zed"} and result == PreFilterResult(set())
    fw = framework({"preFilter": [FakePreFilter("Only", nodes=set())]}, snap)
    _, st, _ = fw.run_pre_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list)
    assert st is not None and st.message() == "node(s) didn't satisfy plugin Only"


# -- Filter and Score messages ----------------------------------------------------------------------------------


class OddFilter(FilterPlugin):
    name = "Odd"

    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        return Status(Code.ERROR, "broken")


class FailingScore(ScorePlugin, ScoreExtensions):
    name = "Bad"

    def __init__(self, fail_score: bool) -> None:
        self.fail_score = fail_score

    def score(self, state: CycleState, pod: Any, node_info: Any) -> tuple[int, Status | None]:
        return 0, Status.as_error("no score") if self.fail_score else None

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(self, state: CycleState, pod: Any, scores: list[NodeScore]) -> Status | None:
        raise RuntimeError("no normalize")


def test_error_messages_quote_plugin_names_as_upstream() -> None:
    _, snap = snapshot_of("n1")
    fw = framework({"filter": [OddFilter()]}, snap)
    st = fw.run_filter_plugins(CycleState(), make_pod("p"), snap.node_info_list[0])
    assert st is not None and st.code == Code.ERROR and st.plugin == "Odd"
    assert st.message() == 'running "Odd" filter plugin: broken'
    fw = framework({"score": [FailingScore(fail_score=True)]}, snap)
    with pytest.raises(ScoreError) as e:
        fw.run_score_plugins(CycleState(), make_pod("p"), [0])
    assert e.value.status.message() == 'running Score plugins: plugin "Bad" failed with: no score'
    fw = framework({"score": [FailingScore(fail_score=False)]}, snap)
    with pytest.raises(ScoreError) as e:
        fw.run_score_plugins(CycleState(), make_pod("p"), [0])
    assert e.value.status.message() == 'running Normalize on Score plugins: plugin "Bad" failed with: no normalize'


# -- the equivalence cache's replay -------------------------------------------------------------------------------


class LocalPlugin(FilterPlugin, ScorePlugin):
    """A node-local plugin whose vector forms pass every node, and whose per-node forms fail on `bad` nodes."""

    name = "Local"
    node_local = True

    def __init__(self) -> None:
        self.bad: set[str] = set()
        self.bad_status: Status | None = None

    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        if node_info.name in self.bad:
            if self.bad_status is None:
                raise RuntimeError("boom")
            return self.bad_status
        return None

    def filter_vector(self, state: CycleState, pod: Any, snapshot: Snapshot) -> np.ndarray:
        return np.ones(snapshot.num_nodes(), dtype=bool)

    def score(self, state: CycleState, pod: Any, node_info: Any) -> tuple[int, Status | None]:
        if node_info.name in self.bad:
            if self.bad_status is None:
                raise RuntimeError("boom")
            return 7, self.bad_status
        return 1, None

    def score_vector(self, state: CycleState, pod: Any, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        return np.ones(len(idx), dtype=np.int64)


def _replayed(kind: str, bad_status: Status | None) -> Any:
    cache, snap = snapshot_of("n1", "n2")
    plugin = LocalPlugin()
    plugin.bad_status = bad_status
    fw = framework({kind: [plugin]}, snap)
    pod = make_pod("p")
    run = (lambda: fw.filter_mask(CycleState(), pod)) if kind == "filter" else (
        lambda: fw.run_score_plugins(CycleState(), pod, [0, 1]))  # fmt: skip
    run()  # computed with the vector form: the column is cached
    plugin.bad = {"n2"}
    cache.add_pod(make_pod("other", node_name="n2"))
    cache.update_snapshot(snap)  # n2 changed: its value is replayed with the per-node form
    return run()


def test_replay_turns_a_filter_exception_or_error_into_a_filter_error() -> None:
    with pytest.raises(FilterError) as e:
        _replayed("filter", None)
    assert e.value.status.code == Code.ERROR and e.value.status.message() == 'running "Local" filter plugin: boom'
    with pytest.raises(FilterError):
        _replayed("filter", Status(Code.ERROR, "bad"))
    assert _replayed("filter", Status(U, "no")).tolist() == [True, False]  # a rejection is a verdict


def test_replay_turns_a_score_exception_or_failure_into_a_score_error() -> None:
    with pytest.raises(ScoreError) as e:
        _replayed("score", None)
    assert e.value.status.message() == 'running Score plugins: plugin "Local" failed with: boom'
    with pytest.raises(ScoreError):
        _replayed("score", Status(U, "no"))


@given(st.lists(st.integers(0, 10_000), max_size=30), st.integers(-40, 40), st.integers(-40, 40))
def test_positions_read_like_the_list_they_hold(values, i, j):
    """Feasible positions kept as a numpy array answer len, indexing (before and after being listed), slices,
    iteration and equality as the plain list does."""
    from pyk8s.scheduler.framework.types import Positions, position_array

    fresh = Positions(np.array(values, dtype=np.int64))
    if -len(values) <= i < len(values):
        assert fresh[i] == values[i] and type(fresh[i]) is int
    assert len(fresh) == len(values) and bool(fresh) == bool(values)
    assert fresh[i:j] == values[i:j]
    assert list(fresh) == values and fresh == values
    assert position_array(fresh) is fresh.array
    assert position_array(values).tolist() == values
