"""The equivalence cache never changes a decision: through random placements, removals and node changes, the
cached filter mask and scores of the vectorized framework equal a per-node framework's on the same snapshot."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.cache import SchedulerCache
from pyk8s.scheduler.config import default_config
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.registry import build_framework

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
