"""Which of a controller's pods count, and which go first when there are too many (upstream:
pkg/controller/controller_utils.go, IsPodActive and ActivePodsWithRanks).

A pod is active until it has terminated (Succeeded/Failed) or is being deleted. When a ReplicaSet has more
active pods than replicas, it deletes them in `deletion_order`: the earlier a pod is in its start-up the sooner
it goes, so that the pods serving longest stay. The comparison follows upstream's rules, in order (the first
that tells the two pods apart decides):

1. not yet scheduled before scheduled;
2. phase Pending before Unknown before Running;
3. not Ready before Ready;
4. lower `controller.kubernetes.io/pod-deletion-cost` first;
5. more pods of the same controller family on its node first (spreads what stays);
6. both Ready: Ready more recently first, compared in powers of two of the time since (so pods that became
   Ready a few seconds apart count as equally young, and the tie goes by UID);
7. more container restarts first (regular containers, then sidecars);
8. created more recently first, in the same powers of two, ties by UID.
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..api.meta import parse_time
from ..api.selectors import LabelSelector
from .podutil import is_pod_ready, ready_since

Pod = Mapping[str, Any]

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}  # anything else counts as Pending, as upstream's map


def is_pod_active(pod: Pod) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def filter_active_pods(pods: Iterable[Pod]) -> list[Pod]:
    return [p for p in pods if is_pod_active(p)]


def deletion_cost(pod: Pod) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or invalid (upstream rejects a leading `+`
    or leading zeros)."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST)
    if not isinstance(value, str) or not value:
        return 0
    digits = value[1:] if value[0] == "-" else value
    if not digits.isdigit() or not digits.isascii() or (digits[0] == "0" and value != "0"):
        return 0
    n = int(value)
    return n if -(2**31) <= n < 2**31 else 0


def max_container_restarts(pod: Pod) -> tuple[int, int]:
    """(the most restarts of a regular container, the most of a sidecar: a restartable init container)."""
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {
        c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or () if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or ()
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _creation(pod: Pod) -> dt.datetime | None:
    raw = (pod.get("metadata") or {}).get("creationTimestamp")
    if not raw:
        return None
    try:
        return parse_time(str(raw))
    except ValueError:
        return None


def _log_rank(t: dt.datetime, now: dt.datetime) -> int:
    ns = (now - t) // dt.timedelta(microseconds=1) * 1000
    return int(math.log2(ns)) if ns > 0 else -1


def _newer_first(t1: dt.datetime | None, t2: dt.datetime | None, b1: int, b2: int, uid1: str, uid2: str,
                 by_bucket: bool) -> int:  # fmt: skip
    """-1 if the first pod goes first by these times, 1 if the second, 0 when the times are equal. A missing time
    goes first (upstream: afterOrZero). With `by_bucket`, times in the same power of two of nanoseconds before
    now (`b1`, `b2`: their log ranks) tie, broken by UID."""
    if t1 == t2:
        return 0
    if t1 is None or t2 is None:
        return -1 if t1 is None else 1
    if not by_bucket:
        return -1 if t1 > t2 else 1
    if b1 == b2:
        return -1 if uid1 < uid2 else 1
    return -1 if b1 < b2 else 1


class RankFacts(NamedTuple):
    """What a pod's place in the deletion order takes from the pod alone: the same until the pod changes, so a
    controller keeps it per pod version (`Indexer.derived(RANK_FACTS, rank_facts)`) rather than re-reading every
    pod at every sync that deletes."""

    head: tuple[bool, int, bool, int]  # rules 1-4: scheduled, phase, Ready, deletion cost
    ready_at: dt.datetime | None
    restarts: tuple[int, int]
    created: dt.datetime | None
    uid: str


RANK_FACTS = "deletionRankFacts"


def rank_facts(pod: Pod) -> RankFacts:
    scheduled = bool((pod.get("spec") or {}).get("nodeName"))
    phase = _PHASE_ORDINAL.get((pod.get("status") or {}).get("phase") or "", 0)
    ready = is_pod_ready(pod)
    return RankFacts((scheduled, phase, ready, deletion_cost(pod)), ready_since(pod) if ready else None,
                     max_container_restarts(pod), _creation(pod), str((pod.get("metadata") or {}).get("uid") or ""))  # fmt: skip


class _Ranked:
    __slots__ = ("created", "created_bucket", "head", "pod", "ready", "ready_at", "ready_bucket", "restarts", "uid")

    def __init__(self, pod: Pod, rank: int, now: dt.datetime | None, facts: RankFacts) -> None:
        self.pod = pod
        self.ready = facts.head[2]
        # Rules 1-5 are plain orders: compared as one tuple, the rest only among pods equal on these.
        self.head = (*facts.head, -rank)
        self.ready_at = facts.ready_at
        self.restarts = facts.restarts
        self.created = facts.created
        self.uid = facts.uid
        # The power-of-two buckets depend on `now` only: computed once per pod, not per comparison.
        self.ready_bucket = _log_rank(self.ready_at, now) if now is not None and self.ready_at is not None else 0
        self.created_bucket = _log_rank(self.created, now) if now is not None and self.created is not None else 0


def _compare_rest(a: _Ranked, b: _Ranked, by_bucket: bool) -> int:
    """Rules 6-8 between two pods equal on rules 1-5 (so both ready, or neither)."""
    if a.ready and b.ready:
        by_ready = _newer_first(a.ready_at, b.ready_at, a.ready_bucket, b.ready_bucket, a.uid, b.uid, by_bucket)
        if by_ready:
            return by_ready
    for ra, rb in zip(a.restarts, b.restarts, strict=True):
        if ra != rb:
            return -1 if ra > rb else 1
    return _newer_first(a.created, b.created, a.created_bucket, b.created_bucket, a.uid, b.uid, by_bucket)


def deletion_order(pods: Sequence[Pod], ranks: Sequence[int], now: dt.datetime | None,
                   facts: Callable[[Pod], RankFacts] = rank_facts, first: int | None = None) -> list[Pod]:  # fmt: skip
    """`pods` in the order a controller deletes them (the module docstring's rules); `ranks[i]` is how many
    active pods of the same controller family share pod i's node. `now` None compares times exactly, without
    the powers of two. `facts` reads each pod's `RankFacts` (a controller passes its informer's memo). With
    `first`, only the first that many (the same as sorting all of them and cutting, without sorting 30,000 pods
    to delete 500)."""
    ranked = [_Ranked(p, r, now, facts(p)) for p, r in zip(pods, ranks, strict=True)]
    rest = functools.cmp_to_key(lambda a, b: _compare_rest(a, b, now is not None))

    def key(r: _Ranked) -> tuple[Any, ...]:
        return (r.head, rest(r))

    if first is not None and first < len(ranked):
        return [r.pod for r in heapq.nsmallest(first, ranked, key=key)]
    ranked.sort(key=key)
    return [r.pod for r in ranked]


def related_pods_per_node(candidates: Iterable[Pod], selectors: Sequence[LabelSelector],
                          active: Callable[[Pod], bool] = is_pod_active) -> dict[str, int]:  # fmt: skip
    """How many active pods each node holds among `candidates` that any of `selectors` matches (upstream: the
    pods getIndirectlyRelatedPods finds by the selectors of every ReplicaSet with the same owner, counted per node
    by getPodsRankedByRelatedPodsOnSameNode); each pod counted once, unscheduled ones under ""."""
    on_node: dict[str, int] = {}
    for p in candidates:
        labels = (p.get("metadata") or {}).get("labels") or {}
        if active(p) and any(sel.matches(labels) for sel in selectors):
            node = (p.get("spec") or {}).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    return on_node


def colocation_ranks(pods: Sequence[Pod], on_node: Mapping[str, int]) -> list[int]:
    """Each pod's rank for rule 5: how many related pods share its node (`related_pods_per_node`)."""
    return [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in pods]
