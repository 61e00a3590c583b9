"""The InterPodAffinity plugin itself (upstream: interpodaffinity/plugin.go): construction from
InterPodAffinityArgs with upstream's defaults and validation, and the cluster events (with queueing hints) that
may make a pod it rejected schedulable. Filtering and scoring live in filtering.py and scoring.py.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from ...framework.interface import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EnqueueExtensions,
    Node,
    Pod,
    QueueingHint,
)
from ...framework.types import PodInfo
from .common import NAME, NodeShares, PodCounts, labels_of, pod_matches_all_terms
from .filtering import Filtering
from .scoring import Scoring

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def validate_args(args: dict[str, Any]) -> None:
    """Upstream's ValidateInterPodAffinityArgs: hardPodAffinityWeight within [0, 100]."""
    w = args["hardPodAffinityWeight"]
    if isinstance(w, bool) or not isinstance(w, int):
        raise ValueError(f"hardPodAffinityWeight: Invalid value: {w!r}: must be an integer")
    if w < MIN_HARD_POD_AFFINITY_WEIGHT or w > MAX_HARD_POD_AFFINITY_WEIGHT:
        raise ValueError(
            f"hardPodAffinityWeight: Invalid value: {w}: not in valid range "
            f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
        )


def default_args(args: dict[str, Any] | None) -> dict[str, Any]:
    """The v1 InterPodAffinityArgs with upstream's defaults filled in."""
    out = dict(args or {})
    if out.get("hardPodAffinityWeight") is None:
        out["hardPodAffinityWeight"] = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if out.get("ignorePreferredTermsOfExistingPods") is None:
        out["ignorePreferredTermsOfExistingPods"] = False
    return out


class InterPodAffinity(Filtering, Scoring, EnqueueExtensions):
    """Pods (anti-)affine to other pods in a topology domain: required terms filter, preferred ones score."""

    name: ClassVar[str] = NAME

    def __init__(
        self, handle: Any, hard_pod_affinity_weight: int, ignore_preferred_terms_of_existing_pods: bool
    ) -> None:
        self._handle = handle
        # Per-node match counts and shares kept across cycles (see common.PodCounts and NodeShares).
        self._pod_counts = PodCounts()
        self._node_shares = NodeShares()
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        gates = getattr(handle, "feature_gates", None) or {}
        self._queueing_hints = bool(gates.get("SchedulerQueueingHints", True))

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> Self:
        a = default_args(args)
        validate_args(a)
        return cls(handle, a["hardPodAffinityWeight"], bool(a["ignorePreferredTermsOfExistingPods"]))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Pod add (may satisfy affinity), label update, delete (may lift anti-affinity); node add or label
        # change (new topology domains). Without queueing hints upstream also listens to taint updates, since
        # the queue's pre-check could swallow the node's Add event.
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self._queueing_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), is_schedulable_after_node_change),
        ]


def _node_name(pod: Pod) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """Whether adding, relabelling or deleting a scheduled pod may help `pod` (upstream's
    isSchedulableAfterPodChange, including its use of all-terms matching for anti-affinity)."""
    if (new is not None and not _node_name(new)) or (old is not None and not _node_name(old)):
        return QueueingHint.SKIP  # unscheduled pods count for nothing
    pi = PodInfo(pod)
    if pi.required_terms_unparsable:
        return QueueingHint.QUEUE
    terms, anti_terms = pi.required_affinity_terms, pi.required_anti_affinity_terms
    if new is not None and old is not None:
        if not pod_matches_all_terms(terms, old) and pod_matches_all_terms(terms, new):
            return QueueingHint.QUEUE
        if pod_matches_all_terms(anti_terms, old) and not pod_matches_all_terms(anti_terms, new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
    if new is not None:
        return QueueingHint.QUEUE if pod_matches_all_terms(terms, new) else QueueingHint.SKIP
    if old is not None:
        return QueueingHint.QUEUE if pod_matches_all_terms(anti_terms, old) else QueueingHint.SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_node_change(pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
    """Whether a node added or relabelled may help `pod`: it gains (or, for affinity, changes) a topology value
    the pod's affinity needs, or loses or changes one its anti-affinity forbids; any added node may host a pod
    with anti-affinity (upstream's isSchedulableAfterNodeChange)."""
    if new is None:
        return QueueingHint.QUEUE
    pi = PodInfo(pod)
    if pi.required_terms_unparsable:
        return QueueingHint.QUEUE
    new_labels = labels_of(new)
    old_labels = labels_of(old)
    for t in pi.required_affinity_terms:
        key = t.topology_key
        if old is None:
            if key in new_labels:
                return QueueingHint.QUEUE
            continue
        if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
            return QueueingHint.QUEUE
    for t in pi.required_anti_affinity_terms:
        if old is None:
            return QueueingHint.QUEUE
        key = t.topology_key
        if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
