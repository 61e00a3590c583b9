"""What PodTopologySpread's filtering and scoring share (upstream: podtopologyspread/common.go and
plugins/helper/spread.go): the parsed form of a pod's spread constraints, the merging of matchLabelKeys into
the selector, the default constraints' selector deduced from the Services and controllers that select the
pod, node inclusion policies, and counting the pods a constraint's selector matches on a node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....api.selectors import EQUALS, LabelSelector, Requirement, label_selector_from_object
from ...framework.interface import Handle, Node, Pod
from ...framework.types import PodInfo
from ..helper import find_matching_untolerated_taint, node_taints, pod_tolerations, required_node_affinity_matches

NAME = "PodTopologySpread"

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

# The constraints a pod without its own gets when the plugin's defaultingType is "System".
SYSTEM_DEFAULT_CONSTRAINTS: list[dict[str, Any]] = [
    {"maxSkew": 3, "topologyKey": HOSTNAME_KEY, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": ZONE_KEY, "whenUnsatisfiable": SCHEDULE_ANYWAY},
]

# Taint effects that keep pods off a node; only these count under nodeTaintsPolicy: Honor (upstream:
# helper.DoNotScheduleTaintsFilterFunc).
DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Constraint:
    """One topology spread constraint with its selector parsed (upstream: topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


@dataclass(frozen=True, slots=True)
class Features:
    """The feature gates the plugin consults, read once from the handle."""

    match_label_keys: bool = True
    node_inclusion_policy: bool = True
    queueing_hints: bool = True

    @classmethod
    def from_gates(cls, gates: dict[str, bool]) -> Features:
        return cls(
            match_label_keys=gates.get("MatchLabelKeysInPodTopologySpread", True),
            node_inclusion_policy=gates.get("NodeInclusionPolicyInPodTopologySpread", True),
            queueing_hints=gates.get("SchedulerQueueingHints", True),
        )


def pod_labels(pod: Pod) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def node_labels(node: Node) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def pod_namespace(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("namespace", "")


def merge_label_set(match_labels: dict[str, str], selector: LabelSelector) -> LabelSelector:
    """The pod's values of matchLabelKeys ANDed with the constraint's selector. A nil selector contributes no
    requirements, so the result then matches on the pod's values alone, as upstream's merge does."""
    reqs = [Requirement(k, EQUALS, (v,)) for k, v in match_labels.items()]
    if not selector.nothing:
        reqs.extend(selector.requirements)
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


def filter_constraints(
    constraints: list[dict[str, Any]], labels: dict[str, str], action: str, features: Features
) -> list[Constraint]:
    """The constraints with whenUnsatisfiable == `action`, parsed, with upstream's defaults for unset fields
    (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore). Raises SelectorError on a bad selector."""
    out: list[Constraint] = []
    for c in constraints:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = label_selector_from_object(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or []
        if features.match_label_keys and keys:
            match_labels = {k: labels[k] for k in keys if k in labels}
            if match_labels:
                selector = merge_label_set(match_labels, selector)
        # minDomains has no gate left in v1.32 (MinDomainsInPodTopologySpread went GA in v1.30, then away)
        min_domains = 1
        if c.get("minDomains") is not None:
            min_domains = int(c["minDomains"])
        affinity_policy, taints_policy = HONOR, IGNORE
        if features.node_inclusion_policy:
            affinity_policy = c.get("nodeAffinityPolicy") or HONOR
            taints_policy = c.get("nodeTaintsPolicy") or IGNORE
        out.append(
            Constraint(
                max_skew=int(c.get("maxSkew", 0)),
                topology_key=c.get("topologyKey", ""),
                selector=selector,
                min_domains=min_domains,
                node_affinity_policy=affinity_policy,
                node_taints_policy=taints_policy,
            )
        )
    return out


# -- default constraints ------------------------------------------------------------------------------------


def _set_selector(labels: dict[str, str]) -> LabelSelector:
    return LabelSelector(tuple(Requirement(k, EQUALS, (str(v),)) for k, v in sorted(labels.items())))


def _set_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _controller_of(pod: Pod) -> dict[str, Any] | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def _group_version(api_version: str) -> tuple[str, str] | None:
    """(group, version) of an apiVersion; None when it does not parse (more than one slash)."""
    if not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def default_selector(pod: Pod, handle: Handle) -> LabelSelector:
    """The selector deduced from the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting
    the pod (upstream: helper.DefaultSelector): their selectors ANDed, since they all match the pod."""
    ns, labels = pod_namespace(pod), pod_labels(pod)
    label_set: dict[str, str] = {}
    for svc in handle.objects.list("services", ns):
        sel = (svc.get("spec") or {}).get("selector")
        if sel is None:  # a Service without a selector matches nothing, not everything
            continue
        if _set_matches(sel, labels):
            label_set.update(sel)
    selector = _set_selector(label_set)
    owner = _controller_of(pod)
    if owner is None:
        return selector
    gv = _group_version(owner.get("apiVersion", ""))
    if gv is None:
        return selector
    kind, name = owner.get("kind", ""), owner.get("name", "")
    if gv == ("", "v1") and kind == "ReplicationController":
        rc = handle.objects.get("replicationcontrollers", ns, name)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            selector = _set_selector(label_set)
    elif gv == ("apps", "v1") and kind in ("ReplicaSet", "StatefulSet"):
        obj = handle.objects.get("replicasets" if kind == "ReplicaSet" else "statefulsets", ns, name)
        if obj is not None:
            try:
                other = label_selector_from_object((obj.get("spec") or {}).get("selector"))
            except ValueError:
                return selector
            if not other.nothing:  # a nil selector has no requirements to add
                reqs = selector.requirements + other.requirements
                selector = LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))
    return selector


# -- nodes and pods ------------------------------------------------------------------------------------------


def node_has_all_keys(labels: dict[str, str], constraints: list[Constraint]) -> bool:
    """Whether the node carries every constraint's topology key (upstream: nodeLabelsMatchSpreadConstraints)."""
    return all(c.topology_key in labels for c in constraints)


def taints_tolerated(pod: Pod, node: Node) -> bool:
    """No NoSchedule/NoExecute taint of the node is left untolerated by the pod."""
    taints = node_taints(node)
    if not taints:
        return True
    return (
        find_matching_untolerated_taint(
            taints, pod_tolerations(pod), lambda t: t.get("effect") in DO_NOT_SCHEDULE_EFFECTS
        )
        is None
    )


def match_node_inclusion_policies(c: Constraint, pod: Pod, node: Node) -> bool:
    """Whether the node counts for this constraint under its nodeAffinityPolicy and nodeTaintsPolicy."""
    if c.node_affinity_policy == HONOR and not required_node_affinity_matches(pod, node):
        return False
    return not (c.node_taints_policy == HONOR and not taints_tolerated(pod, node))


def is_terminating(pod: Pod) -> bool:
    return (pod.get("metadata") or {}).get("deletionTimestamp") is not None


def count_pods_match_selector(pods: list[PodInfo], selector: LabelSelector, ns: str) -> int:
    """Pods in namespace `ns` the selector matches; terminating pods do not count (upstream #87621)."""
    if selector.nothing:
        return 0
    n = 0
    for pi in pods:
        md = pi.pod["metadata"]
        if md.get("deletionTimestamp") is not None or md.get("namespace", "") != ns:
            continue
        if selector.matches(md.get("labels")):
            n += 1
    return n


def pod_labels_match_constraints(constraints: list[Constraint], labels: dict[str, str] | None) -> bool:
    """Whether any constraint's selector matches these labels (upstream: podLabelsMatchSpreadConstraints)."""
    return any(c.selector.matches(labels) for c in constraints)
