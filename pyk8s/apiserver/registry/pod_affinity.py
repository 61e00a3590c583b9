"""matchLabelKeys and mismatchLabelKeys of a pod's (anti-)affinity terms (MatchLabelKeysInPodAffinity, beta and
on in v1.32): folding them into the terms' labelSelector when a pod is created, and their validation (upstream:
pkg/registry/core/pod/strategy.go mutatePodAffinity, pkg/apis/core/validation
validateMatchLabelKeysAndMismatchLabelKeys).

The scheduler never reads the two lists: it sees only the selector the API server stored, so a pod keeps what
was folded at its creation whatever its labels become later.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object

_KINDS = ("podAffinity", "podAntiAffinity")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def affinity_terms(affinity: Any, path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Each pod affinity and anti-affinity term with its field path, in upstream's validation order."""
    if not isinstance(affinity, dict):
        return
    for kind in _KINDS:
        section = affinity.get(kind)
        if not isinstance(section, dict):
            continue
        for i, t in enumerate(section.get(_REQUIRED) or []):
            if isinstance(t, dict):
                yield t, f"{path}.{kind}.{_REQUIRED}[{i}]"
        for i, w in enumerate(section.get(_PREFERRED) or []):
            t = w.get("podAffinityTerm") if isinstance(w, dict) else None
            if isinstance(t, dict):
                yield t, f"{path}.{kind}.{_PREFERRED}[{i}].podAffinityTerm"


def fold_label_keys(pod: Object) -> None:
    """Appends to each term's selector `key In [value]` per matchLabelKeys key and `key NotIn [value]` per
    mismatchLabelKeys key, with the pod's own label value, for the keys the pod has a label for. A term without
    a selector is left as it is: it selects nothing, and validation refuses the keys there."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not spec.get("affinity"):
        return
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for t, _ in affinity_terms(spec["affinity"], ""):
        selector = t.get("labelSelector")
        match, mismatch = t.get("matchLabelKeys") or [], t.get("mismatchLabelKeys") or []
        if not isinstance(selector, dict) or not (match or mismatch):
            continue
        added = [
            {"key": k, "operator": op, "values": [labels[k]]}
            for keys, op in ((match, "In"), (mismatch, "NotIn"))
            for k in keys
            if k in labels
        ]
        if added:
            selector["matchExpressions"] = (selector.get("matchExpressions") or []) + added


def validate_label_keys(affinity: Any, path: str) -> list[FieldError]:
    """The errors of every term's matchLabelKeys and mismatchLabelKeys, checked against the selector as stored
    (so, for a pod, after folding)."""
    errs: list[FieldError] = []
    for t, term_path in affinity_terms(affinity, path):
        errs += _validate_term(t, term_path)
    return errs


def _validate_term(t: dict[str, Any], path: str) -> list[FieldError]:
    match: list[str] = t.get("matchLabelKeys") or []
    mismatch: list[str] = t.get("mismatchLabelKeys") or []
    selector = t.get("labelSelector")
    errs = _label_names(match, selector, f"{path}.matchLabelKeys")
    errs += _label_names(mismatch, selector, f"{path}.mismatchLabelKeys")
    if isinstance(selector, dict):
        # Only a key the selector names twice counts, and folding adds one mention: a key that is also in the
        # user's selector fails once folded, but passes when the pod has no such label. The path is the term's
        # with the key's index appended, as v1.32 writes it.
        last_index = {k: i for i, k in enumerate(match)}
        seen = set(selector.get("matchLabels") or {})
        for req in selector.get("matchExpressions") or []:
            key = req.get("key", "") if isinstance(req, dict) else ""
            if key in last_index and key in seen:
                errs.append(
                    e.invalid(f"{path}[{last_index[key]}]", key, "exists in both matchLabelKeys and labelSelector")
                )
            seen.add(key)
    both = set(mismatch)
    for i, k in enumerate(match):
        if k in both:
            errs.append(
                e.invalid(f"{path}.matchLabelKeys[{i}]", k, "exists in both matchLabelKeys and mismatchLabelKeys")
            )
    return errs


def _label_names(keys: list[str], selector: Any, path: str) -> list[FieldError]:
    if not keys:
        return []
    if selector is None:
        return [e.forbidden(path, "must not be specified when labelSelector is not set")]
    return [e.invalid(f"{path}[{i}]", k, m) for i, k in enumerate(keys) for m in v.is_qualified_name(k)]
