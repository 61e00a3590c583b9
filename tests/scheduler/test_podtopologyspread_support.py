"""Builders shared by the PodTopologySpread tests (and a check of them): nodes with arbitrary labels, pods with
spread constraints, and a plugin over a snapshot of them."""

from __future__ import annotations

from typing import Any

from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.podtopologyspread import PodTopologySpread
from tests.scheduler.wrappers import make_node, make_pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
TOLERATE_UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]


def node(name: str, labels: dict[str, str] | None = None, *, hostname: bool = False, taints: Any = None) -> dict:
    """A node with exactly these labels (plus kubernetes.io/hostname=name when `hostname`)."""
    n = make_node(name, labels=labels, taints=taints)
    if not hostname:
        n["metadata"]["labels"].pop(HOSTNAME, None)
        n["metadata"]["labels"].update(labels or {})
    return n


def zoned(name: str, zone: str, **extra: Any) -> dict:
    """A node labelled zone=<zone> and node=<name>, as upstream's tests build them."""
    labels = {"zone": zone, "node": name, **extra.pop("labels", {})}
    return node(name, labels, **extra)


def four_nodes() -> list[dict]:
    """node-a, node-b in zone1; node-x, node-y in zone2."""
    return [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2"), zoned("node-y", "zone2")]


def pod(
    name: str,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    *,
    ns: str = "default",
    terminating: bool = False,
    spread: list[dict] | None = None,
    owner: dict | None = None,
    **kw: Any,
) -> dict:
    p = make_pod(name, namespace=ns, labels=labels, node_name=node_name, spread=spread, **kw)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner is not None:
        p["metadata"]["ownerReferences"] = [owner]
    return p


def labelled(spec: dict[str, int], labels: dict[str, str] | None = None, prefix: str = "p") -> list[dict]:
    """`count` pods with `labels` (default foo="") on each node of `spec`."""
    out = []
    for node_name, count in spec.items():
        for i in range(count):
            out.append(pod(f"{prefix}-{node_name}-{i}", node_name, {"foo": ""} if labels is None else labels))
    return out


def sc(
    max_skew: int,
    key: str,
    when: str,
    selector: dict | None,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> dict:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = match_label_keys
    return c


def hard(max_skew: int, key: str, selector: dict | None, **kw: Any) -> dict:
    return sc(max_skew, key, "DoNotSchedule", selector, **kw)


def soft(max_skew: int, key: str, selector: dict | None, **kw: Any) -> dict:
    return sc(max_skew, key, "ScheduleAnyway", selector, **kw)


def required_affinity(key: str, op: str, values: list[str]) -> dict:
    term = {"matchExpressions": [{"key": key, "operator": op, "values": values}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def gates(inclusion: bool = False, match_label_keys: bool = False) -> dict[str, bool]:
    """Upstream's plugin tests run with these gates off unless a case turns them on."""
    return {"NodeInclusionPolicyInPodTopologySpread": inclusion, "MatchLabelKeysInPodTopologySpread": match_label_keys}


def make_plugin(
    nodes: list[dict],
    pods: list[dict] = (),  # type: ignore[assignment]
    *,
    args: dict | None = None,
    feature_gates: dict[str, bool] | None = None,
    objects: dict[str, list[dict]] | None = None,
) -> PodTopologySpread:
    snap = Snapshot.from_objects(nodes, pods)
    handle = FrameworkHandle(snap, StaticLister(objects or {}), feature_gates=feature_gates)
    return PodTopologySpread.new({"defaultingType": "List"} if args is None else args, handle)


def run_pre_filter(pl: PodTopologySpread, p: dict) -> tuple[CycleState, Any]:
    state = CycleState()
    _, status = pl.pre_filter(state, p, pl.handle.snapshot.node_info_list)
    return state, status


def sorted_paths(paths: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Critical paths with equal counts put in value order (their order is arbitrary upstream)."""
    if paths[0][1] == paths[1][1] and paths[0][0] > paths[1][0]:
        return [paths[1], paths[0]]
    return list(paths)


def test_builders() -> None:
    """The builders give nodes exactly the labels asked for and pods their constraints."""
    assert node("n", {"zone": "z"})["metadata"]["labels"] == {"zone": "z"}
    assert node("n", hostname=True)["metadata"]["labels"] == {HOSTNAME: "n"}
    p = pod("p", "n", {"foo": ""}, terminating=True, spread=[hard(1, "zone", FOO)])
    assert p["spec"]["nodeName"] == "n" and p["metadata"]["deletionTimestamp"]
    assert p["spec"]["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": FOO}
    ]
