"""The Deployment controller's arithmetic and bookkeeping (upstream: pkg/controller/deployment/util/
deployment_util.go): which ReplicaSet is the new one, revisions and the annotations that carry them, maxSurge and
maxUnavailable with upstream's rounding, how far the new ReplicaSet may grow, proportional scaling, and the
Progressing/Available conditions.

Objects are plain dicts as the API serves them (after defaulting: `spec.replicas`, `spec.strategy`, ... are set).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from ...api.intstr import scaled_value
from ...api.meta import parse_time, rfc3339

Object = Mapping[str, Any]

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO_ANNOTATION = "deprecated.deployment.rollback.to"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
# Never copied from a Deployment to its ReplicaSets.
ANNOTATIONS_TO_SKIP = frozenset({LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
                                 DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION})  # fmt: skip
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
MAX_INT32 = 2**31 - 1

# Condition reasons (upstream's constants of the same meaning).
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"


# -- fields ---------------------------------------------------------------------------------------------------


def spec_replicas(obj: Object) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def status_int(obj: Object | None, key: str) -> int:
    return int(((obj or {}).get("status") or {}).get(key) or 0)


def annotations_of(obj: Object) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def strategy_type(d: Object) -> str:
    return str(((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate")


def is_rolling_update(d: Object) -> bool:
    return strategy_type(d) == "RollingUpdate"


def has_progress_deadline(d: Object) -> bool:
    pds = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return pds is not None and int(pds) != MAX_INT32


def has_revision_history_limit(d: Object) -> bool:
    rhl = (d.get("spec") or {}).get("revisionHistoryLimit")
    return rhl is not None and int(rhl) != MAX_INT32


def creation_key(rs: Object) -> tuple[str, str]:
    """Oldest first, ties by name (upstream: ReplicaSetsByCreationTimestamp). RFC 3339 UTC strings of one
    format sort as times."""
    md = rs.get("metadata") or {}
    return (str(md.get("creationTimestamp") or ""), str(md.get("name") or ""))


def by_creation(rss: Iterable[Object]) -> list[Object]:
    return sorted(rss, key=creation_key)


def active(rss: Iterable[Object | None]) -> list[Object]:
    """The ReplicaSets with replicas wanted (upstream: FilterActiveReplicaSets)."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


# -- templates and hashes -------------------------------------------------------------------------------------


def _without_hash(template: Object) -> Any:
    t = dict(template or {})
    md = dict(t.get("metadata") or {})
    labels = dict(md.get("labels") or {})
    labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    if labels:
        md["labels"] = labels
    else:
        md.pop("labels", None)
    if md:
        t["metadata"] = md
    else:
        t.pop("metadata", None)
    return t


def equal_ignore_hash(t1: Object, t2: Object) -> bool:
    """Whether two pod templates are the same but for the pod-template-hash label (upstream: EqualIgnoreHash)."""
    return bool(_without_hash(t1) == _without_hash(t2))


_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream's rand.SafeEncodeString: no vowels, no 0/1/3


def compute_hash(template: Object, collision_count: int | None) -> str:
    """The pod-template-hash of a template: FNV-32a over the template (here its canonical JSON; upstream hashes a
    Go dump, so the values differ from a real cluster's) and the collision count, as a decimal string spelled in
    upstream's safe alphabet."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little", signed=False)
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(h))


def find_new_replica_set(d: Object, rss: Sequence[Object]) -> Object | None:
    """The oldest ReplicaSet whose template is the Deployment's (upstream: FindNewReplicaSet)."""
    template = (d.get("spec") or {}).get("template") or {}
    for rs in by_creation(rss):
        if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs
    return None


def find_old_replica_sets(d: Object, rss: Sequence[Object]) -> tuple[list[Object], list[Object]]:
    """(the old ReplicaSets with replicas, all old ReplicaSets) (upstream: FindOldReplicaSets)."""
    new = find_new_replica_set(d, rss)
    new_uid = ((new or {}).get("metadata") or {}).get("uid")
    olds = [rs for rs in rss if new is None or (rs.get("metadata") or {}).get("uid") != new_uid]
    return [rs for rs in olds if spec_replicas(rs) != 0], olds


# -- revisions and annotations --------------------------------------------------------------------------------


def revision(obj: Object) -> int | None:
    raw = annotations_of(obj).get(REVISION_ANNOTATION)
    if raw is None:
        return 0
    try:
        return int(raw)
    except ValueError:
        return None


def max_revision(rss: Iterable[Object]) -> int:
    return max((r for rs in rss if (r := revision(rs)) is not None), default=0)


def set_deployment_revision(d: dict[str, Any], rev: str) -> bool:
    md = d.setdefault("metadata", {})
    ann = md.setdefault("annotations", {})
    if ann.get(REVISION_ANNOTATION) == rev:
        return False
    ann[REVISION_ANNOTATION] = rev
    return True


def max_surge(d: Object) -> int:
    if not is_rolling_update(d):
        return 0
    surge, _ = resolve_fenceposts(d)
    return surge


def max_unavailable(d: Object) -> int:
    replicas = spec_replicas(d)
    if not is_rolling_update(d) or replicas == 0:
        return 0
    _, unavailable = resolve_fenceposts(d)
    return min(unavailable, replicas)


def resolve_fenceposts(d: Object) -> tuple[int, int]:
    """(maxSurge rounded up, maxUnavailable rounded down) of a rolling Deployment; if both are 0, maxUnavailable
    is 1 (upstream: ResolveFenceposts)."""
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    replicas = spec_replicas(d)
    surge = scaled_value(ru.get("maxSurge", "25%"), replicas, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(max_replicas))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Object, desired: int, max_replicas: int) -> bool:
    ann = annotations_of(rs)
    return ann.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or ann.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas)


def _int_annotation(rs: Object, key: str) -> int | None:
    raw = annotations_of(rs).get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def set_new_replica_set_annotations(d: Object, rs: dict[str, Any], new_revision: str, exists: bool) -> bool:
    """Copy the Deployment's annotations onto its new ReplicaSet, raise the ReplicaSet's revision to
    `new_revision` (keeping the revisions it had in revision-history when it comes back: a rollback), and give a
    ReplicaSet about to be created its replica annotations (upstream: SetNewReplicaSetAnnotations)."""
    ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for k, v in annotations_of(d).items():
        if k in ANNOTATIONS_TO_SKIP or ann.get(k) == v:
            continue
        ann[k] = v
        changed = True
    had = REVISION_ANNOTATION in ann
    old_revision = ann.get(REVISION_ANNOTATION, "")
    try:
        old_int = int(old_revision) if old_revision else 0
    except ValueError:
        return False
    new_int = int(new_revision)
    if old_int < new_int:
        ann[REVISION_ANNOTATION] = new_revision
        changed = True
        if had:
            history = ann.get(REVISION_HISTORY_ANNOTATION, "")
            if not history:
                ann[REVISION_HISTORY_ANNOTATION] = old_revision
            else:
                olds = history.split(",")
                total = len(history) + len(old_revision) + 1
                start = 0
                while total > MAX_REV_HISTORY_LENGTH_IN_CHARS and start < len(olds):
                    total -= len(olds[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS:
                    ann[REVISION_HISTORY_ANNOTATION] = ",".join([*olds[start:], old_revision])
    if not exists and set_replicas_annotations(rs, spec_replicas(d), spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


# -- scaling --------------------------------------------------------------------------------------------------


def replica_count(rss: Iterable[Object | None]) -> int:
    """Σ spec.replicas (upstream: GetReplicaCountForReplicaSets)."""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def actual_count(rss: Iterable[Object | None]) -> int:
    return sum(status_int(rs, "replicas") for rs in rss if rs is not None)


def ready_count(rss: Iterable[Object | None]) -> int:
    return sum(status_int(rs, "readyReplicas") for rs in rss if rs is not None)


def available_count(rss: Iterable[Object | None]) -> int:
    return sum(status_int(rs, "availableReplicas") for rs in rss if rs is not None)


def new_rs_new_replicas(d: Object, all_rss: Iterable[Object | None], new_rs: Object) -> int:
    """How many replicas the new ReplicaSet may have now (upstream: NewRSNewReplicas): under RollingUpdate, as
    many as maxSurge leaves room for, at most the Deployment's replicas; under Recreate, all of them."""
    replicas = spec_replicas(d)
    if not is_rolling_update(d):
        return replicas
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(ru.get("maxSurge", "25%"), replicas, True)
    current = replica_count(all_rss)
    max_total = replicas + surge
    if current >= max_total:
        return spec_replicas(new_rs)
    return spec_replicas(new_rs) + min(max_total - current, replicas - spec_replicas(new_rs))


def is_saturated(d: Object, rs: Object | None) -> bool:
    if rs is None:
        return False
    replicas = spec_replicas(d)
    desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
    return desired == replicas and spec_replicas(rs) == replicas and status_int(rs, "availableReplicas") == replicas


def find_active_or_latest(new_rs: Object | None, old_rss: Sequence[Object]) -> Object | None:
    """The one ReplicaSet with replicas, or the newest if none has any; None when several have replicas
    (upstream: FindActiveOrLatest)."""
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=creation_key, reverse=True)
    live = active([*newest_first, new_rs])
    if not live:
        return new_rs if new_rs is not None else newest_first[0]
    return live[0] if len(live) == 1 else None


def _fraction(rs: Object, d: Object) -> int:
    """How much a ReplicaSet grows or shrinks when its Deployment is resized (upstream: getReplicaSetFraction)."""
    if spec_replicas(d) == 0:
        return -spec_replicas(rs)
    max_replicas = spec_replicas(d) + max_surge(d)
    before = _int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if not before:
        before = status_int(d, "replicas")
        if before == 0:
            return 0
    size = spec_replicas(rs) * max_replicas / before
    # Go's math.Round: halves away from zero.
    rounded = math.floor(size + 0.5) if size >= 0 else -math.floor(-size + 0.5)
    return rounded - spec_replicas(rs)


def proportion(rs: Object | None, d: Object, to_add: int, added: int) -> int:
    """This ReplicaSet's share of `to_add` replicas, `added` of which are given out already (upstream:
    GetProportion)."""
    if rs is None or spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def proportional_sizes(d: Object, live: Sequence[Object]) -> tuple[list[Object], list[int], str]:
    """The active ReplicaSets of a rolling Deployment resized mid-rollout, in the order they are written, their
    new sizes, and "up"/"down" (upstream: the proportional part of scale): the room `replicas + maxSurge` leaves
    (or lacks) is shared in proportion to each one's size, largest first, and what rounding leaves over goes to
    the largest, never below zero."""
    allowed = spec_replicas(d) + max_surge(d) if spec_replicas(d) > 0 else 0
    to_add = allowed - replica_count(live)
    operation = ""
    ordered = list(live)
    if to_add > 0:
        ordered, operation = by_size(live, newer_first=True), "up"
    elif to_add < 0:
        ordered, operation = by_size(live, newer_first=False), "down"
    added = 0
    sizes: list[int] = []
    for rs in ordered:
        share = proportion(rs, d, to_add, added) if to_add else 0
        sizes.append(spec_replicas(rs) + share)
        added += share
    if ordered and to_add:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return ordered, sizes, operation


def by_size(rss: Iterable[Object], newer_first: bool) -> list[Object]:
    """Largest first; equal sizes newer first (scaling up) or older first (scaling down) (upstream:
    ReplicaSetsBySizeNewer / ReplicaSetsBySizeOlder)."""

    def cmp(a: Object, b: Object) -> int:
        if spec_replicas(a) != spec_replicas(b):
            return spec_replicas(b) - spec_replicas(a)
        ka, kb = creation_key(a), creation_key(b)
        if ka == kb:
            return 0
        older = -1 if ka < kb else 1
        return -older if newer_first else older

    return sorted(rss, key=functools.cmp_to_key(cmp))


def by_revision(rss: Iterable[Object]) -> list[Object]:
    """Lowest revision first, then oldest (upstream: ReplicaSetsByRevision)."""
    return sorted(rss, key=lambda rs: (revision(rs) or 0, creation_key(rs)))


# -- conditions -----------------------------------------------------------------------------------------------


def new_condition(type_: str, status: str, reason: str, message: str, now: dt.datetime) -> dict[str, Any]:
    t = rfc3339(now)
    return {"type": type_, "status": status, "lastUpdateTime": t, "lastTransitionTime": t, "reason": reason,
            "message": message}  # fmt: skip


def get_condition(status: Object, type_: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return None


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """Put `cond` last in `status.conditions` (upstream: SetDeploymentCondition): nothing changes when the
    status and reason are the same; a condition whose status is unchanged keeps its lastTransitionTime."""
    current = get_condition(status, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [*(c for c in status.get("conditions") or () if c.get("type") != cond["type"]), cond]


def remove_condition(status: dict[str, Any], type_: str) -> None:
    kept = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def deployment_complete(d: Object, status: Object) -> bool:
    """Every replica updated and available, and the latest spec observed (upstream: DeploymentComplete)."""
    replicas = spec_replicas(d)
    generation = int((d.get("metadata") or {}).get("generation") or 0)
    return (int(status.get("updatedReplicas") or 0) == replicas and int(status.get("replicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("observedGeneration") or 0) >= generation)  # fmt: skip


def deployment_progressing(d: Object, new: Object) -> bool:
    """Whether the rollout moved since the stored status (upstream: DeploymentProgressing)."""
    old = d.get("status") or {}

    def n(s: Object, k: str) -> int:
        return int(s.get(k) or 0)

    return (n(new, "updatedReplicas") > n(old, "updatedReplicas")
            or n(new, "replicas") - n(new, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
            or n(new, "readyReplicas") > n(old, "readyReplicas")
            or n(new, "availableReplicas") > n(old, "availableReplicas"))  # fmt: skip


def progress_deadline_at(d: Object, cond: Object) -> dt.datetime | None:
    """When the rollout times out if it makes no progress: the Progressing condition's lastUpdateTime plus
    progressDeadlineSeconds."""
    raw = cond.get("lastUpdateTime")
    if not raw:
        return None
    try:
        start = parse_time(str(raw))
    except ValueError:
        return None
    return start + dt.timedelta(seconds=int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0))


def deployment_timed_out(d: Object, status: Object, now: dt.datetime) -> bool:
    """Whether the rollout has made no progress for progressDeadlineSeconds (upstream: DeploymentTimedOut)."""
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    deadline = progress_deadline_at(d, cond)
    return deadline is not None and deadline < now
