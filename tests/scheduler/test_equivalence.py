"""The equivalence cache never changes a decision: through random placements, removals and node changes, the
cached filter mask and scores of the vectorized framework equal a per-node framework's on the same snapshot;
and through placements, removals, taints and nominations, its memoised rejections and preemption verdicts
equal what the per-node framework finds afresh."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.cache import SchedulerCache
from pyk8s.scheduler.config import default_config
from pyk8s.scheduler.framework.equivalence import equivalence_key
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import PodInfo
from pyk8s.scheduler.plugins.registry import build_framework
from pyk8s.scheduler.queue import PriorityQueue

from .wrappers import make_node, make_pod

TAINT = {"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"}
HARD_TAINT = {"key": "hard", "value": "y", "effect": "NoSchedule"}


def template(kind: int) -> dict:
    if kind == 0:
        return make_pod("t", cpu="300m", memory="1Gi")
    if kind == 1:
        return make_pod("t", cpu="1", tolerations=[{"key": "hard", "operator": "Exists"}])
    pref = [{"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]
    return make_pod(
        "t", memory="3Gi", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}
    )


def per_node_view(fw, fw_plain, pod):
    """(mask, totals over feasible) from the cached vectorized framework and from the per-node one."""
    nodes = fw.handle.snapshot.node_info_list
    s1, s2 = CycleState(), CycleState()
    r1 = fw.run_pre_filter_plugins(s1, pod, nodes)
    r2 = fw_plain.run_pre_filter_plugins(s2, pod, nodes)
    assert (r1[1] is None) == (r2[1] is None)
    if r1[1] is not None:
        return None
    mask = fw.filter_mask(s1, pod)
    plain = np.array([fw_plain.run_filter_plugins(s2, pod, ni) is None for ni in nodes])
    assert mask.tolist() == plain.tolist()
    feasible = np.flatnonzero(mask).tolist()
    if not feasible:
        return None
    fw.run_pre_score_plugins(s1, pod, [nodes[i] for i in feasible])
    fw_plain.run_pre_score_plugins(s2, pod, [nodes[i] for i in feasible])
    t1, _ = fw.run_score_plugins(s1, pod, feasible)
    t2, _ = fw_plain.run_score_plugins(s2, pod, feasible)
    assert t1.tolist() == t2.tolist()
    return feasible, t1


ops = st.lists(
    st.tuples(st.sampled_from(["place", "place", "place", "remove", "relabel", "taint"]), st.integers(0, 2),
              st.integers(0, 7)),
    min_size=1, max_size=25,
)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
# A node rejected for its taint then losing a pod: only pods changed, and it must still be rejected.
@example([("place", 0, 0), ("taint", 1, 0), ("place", 0, 0), ("remove", 0, 0)])
def test_cached_decisions_equal_per_node_decisions(steps):
    cache = SchedulerCache()
    for i in range(8):
        cache.add_node(make_node(f"n{i}", cpu="2", memory="4Gi", labels={"zone": "ab"[i % 2]}))
    snapshot = Snapshot()
    fw = build_framework(default_config(), "default-scheduler", FrameworkHandle(snapshot))
    fw_plain = build_framework(default_config(), "default-scheduler", FrameworkHandle(snapshot), vectorized=False)
    placed: list[dict] = []
    counter = 0
    for op, kind, n in steps:
        if op == "place":
            cache.update_snapshot(snapshot)
            counter += 1
            pod = template(kind)
            pod["metadata"].update(name=f"p{counter}", uid=f"uid-{counter}")
            got = per_node_view(fw, fw_plain, pod)
            if got is not None:
                feasible, totals = got
                chosen = snapshot.node_info_list[feasible[int(np.argmax(totals))]].name
                bound = copy.deepcopy(pod)
                bound["spec"]["nodeName"] = chosen
                cache.assume_pod(bound)
                placed.append(bound)
        elif op == "remove" and placed:
            cache.forget_pod(placed.pop(n % len(placed)))
        elif op in ("relabel", "taint"):
            node = copy.deepcopy(cache.nodes[f"n{n}"].node)
            if op == "relabel":
                node["metadata"]["labels"]["zone"] = "a" if node["metadata"]["labels"]["zone"] != "a" else "b"
            else:
                node["spec"]["taints"] = [] if node["spec"].get("taints") else [TAINT, HARD_TAINT][: 1 + kind % 2]
            cache.update_node(cache.nodes[f"n{n}"].node, node)
    cache.update_snapshot(snapshot)
    for kind in range(3):
        per_node_view(fw, fw_plain, template(kind))


# -- memoised verdicts for pods that fit nowhere ------------------------------------------------------------------


def preemptor(kind: int, counter: int) -> dict:
    """Three classes of priority-5 pods, each too big for a busy node."""
    if kind == 0:
        pod = make_pod("q", cpu="1500m", priority=5)
    elif kind == 1:
        pod = make_pod("q", cpu="1200m", priority=5, tolerations=[{"key": "hard", "operator": "Exists"}])
    else:
        pod = make_pod("q", memory="3Gi", priority=5)
    pod["metadata"].update(name=f"q{counter}", uid=f"quid-{counter}")
    return pod


def verdicts(fw, pod):
    """(each node's filter status, the dry run's status per node, its candidates and their victims)."""
    snapshot = fw.handle.snapshot
    nodes = snapshot.node_info_list
    state = CycleState()
    _, st, _ = fw.run_pre_filter_plugins(state, pod, nodes)
    assert st is None
    statuses = fw.node_statuses(state, pod, range(len(nodes)))
    evaluator = fw.plugins["DefaultPreemption"].evaluator
    dry = evaluator.dry_run_preemption(state, pod, [ni for ni in nodes if ni.name in statuses], [], 0, len(nodes))
    shown = {name: (s.code, s.reasons) for name, s in statuses.items()}
    dry_shown = {name: (s.code, s.reasons) for name, s in dry.node_statuses.items()}
    victims = sorted((c.name, sorted(p["metadata"]["name"] for p in c.victims.pods)) for c in dry.candidates)
    return shown, dry_shown, victims


memo_ops = st.lists(
    st.tuples(st.sampled_from(["place", "place", "remove", "taint", "nominate", "nominate", "unnominate", "ask", "ask"]),
              st.integers(0, 3), st.integers(0, 2), st.sampled_from([0, 5, 10])),
    min_size=1, max_size=30,
)  # fmt: skip


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memo_ops)
@example([("nominate", 0, 0, 10), ("ask", 0, 0, 0), ("nominate", 0, 0, 10), ("ask", 0, 0, 0)])
@example([("place", 1, 1, 0), ("ask", 0, 0, 0), ("place", 1, 0, 0), ("ask", 0, 0, 0), ("remove", 0, 0, 0)])
@example([("place", 0, 2, 0), ("nominate", 0, 1, 10), ("ask", 0, 0, 0), ("unnominate", 0, 0, 0), ("ask", 0, 0, 0)])
def test_memoised_rejections_equal_fresh_ones(steps):
    cache = SchedulerCache()
    for i in range(4):
        cache.add_node(make_node(f"n{i}", cpu="2", memory="4Gi"))
    snapshot = Snapshot()
    queue = PriorityQueue(None)
    frameworks = []
    for vectorized in (True, False):
        handle = FrameworkHandle(snapshot)
        handle.nominator = queue
        fw = build_framework(default_config(), "default-scheduler", handle, vectorized=vectorized)
        handle.framework = fw
        frameworks.append(fw)
    fw, fw_plain = frameworks
    placed: list[dict] = []
    nominated: list[dict] = []
    counter = 0
    for op, n, kind, prio in steps:
        counter += 1
        if op == "place":
            pod = make_pod(f"p{counter}", cpu=["300m", "700m", "1"][kind], memory="1Gi", priority=prio,
                           node_name=f"n{n}")  # fmt: skip
            pod["metadata"]["uid"] = f"uid-{counter}"
            cache.assume_pod(pod)
            placed.append(pod)
        elif op == "remove" and placed:
            cache.forget_pod(placed.pop(n % len(placed)))
        elif op == "taint":
            node = copy.deepcopy(cache.nodes[f"n{n}"].node)
            node["spec"]["taints"] = [] if node["spec"].get("taints") else [HARD_TAINT]
            cache.update_node(cache.nodes[f"n{n}"].node, node)
        elif op == "nominate":
            pod = make_pod(f"m{counter}", cpu=["300m", "600m", "100m"][kind], priority=prio)
            pod["metadata"]["uid"] = f"muid-{counter}"
            pod["status"] = {"nominatedNodeName": f"n{n}"}
            queue.add_nominated_pod(PodInfo(pod))
            nominated.append(pod)
        elif op == "unnominate" and nominated:
            queue.delete_nominated_pod_if_exists(nominated.pop(n % len(nominated)))
        elif op == "ask":
            cache.update_snapshot(snapshot)
            pod = preemptor(kind, counter)
            assert verdicts(fw, pod) == verdicts(fw_plain, pod)
    cache.update_snapshot(snapshot)
    for kind in range(3):
        pod = preemptor(kind, counter + 1 + kind)
        assert verdicts(fw, pod) == verdicts(fw_plain, pod)


def test_reported_container_resources_split_a_class() -> None:
    # with InPlacePodVerticalScaling the scorers read a container's resized requests from its status
    def key(pod: dict) -> bytes:
        return equivalence_key(CycleState(), pod)

    plain = make_pod("a", cpu="1")
    resized = copy.deepcopy(plain)
    resized["status"] = {"containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    same = copy.deepcopy(resized)
    same["metadata"]["name"] = "b"
    assert key(plain) != key(resized) == key(same)
    assert key(plain) == key({**plain, "status": {"phase": "Pending"}})
