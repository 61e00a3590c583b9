"""Reconciling one role or binding with its default (upstream: k8s.io/component-helpers/auth/rbac/reconciliation,
computeReconciledRole and computeReconciledRoleBinding).

The stored object is the start: the default's labels and annotations are merged under it (a value already
stored wins), its missing rules are appended as broken-down single rules, its missing aggregation selectors and
subjects are appended. With the remove-extra flags off, as the API server runs it, nothing is taken away
(except an aggregationRule on a role whose default has none, and a binding whose roleRef differs is recreated,
as upstream). An object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is protected: the
result says so and the caller leaves it alone.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from .bootstrap_policy import AUTO_UPDATE_ANNOTATION
from .escalation import covers

Object = dict[str, Any]
Rule = dict[str, Any]

NONE, CREATE, UPDATE, RECREATE = "none", "create", "update", "recreate"


@dataclass
class RoleResult:
    role: Object
    operation: str = NONE
    protected: bool = False
    missing_rules: list[Rule] = field(default_factory=list)
    extra_rules: list[Rule] = field(default_factory=list)
    missing_selectors: list[dict[str, Any]] = field(default_factory=list)
    extra_selectors: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BindingResult:
    binding: Object
    operation: str = NONE
    protected: bool = False
    missing_subjects: list[dict[str, Any]] = field(default_factory=list)
    extra_subjects: list[dict[str, Any]] = field(default_factory=list)


def is_protected(obj: Object) -> bool:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION) == "false"


def _merge_meta(result: Object, existing: Object, expected: Object, key: str) -> bool:
    """Expected's map under the stored one (stored values win); whether that changed the stored map."""
    md = result.setdefault("metadata", {})
    before = (existing.get("metadata") or {}).get(key)
    wanted = (expected.get("metadata") or {}).get(key)
    if wanted is None and before is None:
        return False
    merged = {**(wanted or {}), **(before or {})}
    md[key] = merged
    return merged != before


def _rules(obj: Object) -> list[Rule]:
    rules = obj.get("rules")
    return rules if isinstance(rules, list) else []


def _selectors(aggregation_rule: Any) -> list[dict[str, Any]]:
    return list((aggregation_rule or {}).get("clusterRoleSelectors") or [])


def _normal_selector(selector: dict[str, Any]) -> dict[str, Any]:
    # Semantic equality: an empty list or map is the same as none.
    return {k: v for k, v in selector.items() if v not in (None, [], {})}


def _aggregation_covers(owner: Any, servant: Any) -> list[dict[str, Any]]:
    """The servant's selectors the owner lacks (upstream: aggregationRuleCovers)."""
    if servant is None:
        return []
    if owner is None:
        return _selectors(servant)
    have = [_normal_selector(s) for s in _selectors(owner)]
    return [s for s in _selectors(servant) if _normal_selector(s) not in have]


def compute_reconciled_role(existing: Object, expected: Object, remove_extra_permissions: bool = False) -> RoleResult:
    """What `existing` (a Role or ClusterRole) becomes when reconciled with `expected`."""
    result = RoleResult(role=copy.deepcopy(existing), protected=is_protected(existing))
    if _merge_meta(result.role, existing, expected, "annotations"):
        result.operation = UPDATE
    if _merge_meta(result.role, existing, expected, "labels"):
        result.operation = UPDATE

    expected_agg, existing_agg = expected.get("aggregationRule"), existing.get("aggregationRule")
    # Equal rules cover each other: the usual restart, where the coverage check would be most of the cost.
    if _rules(existing) != _rules(expected):
        # an aggregated role's rules are the controller's: extra ones are only looked for when either is plain
        if expected_agg is None or existing_agg is None:
            _, result.extra_rules = covers(_rules(expected), _rules(existing))
        _, result.missing_rules = covers(_rules(existing), _rules(expected))
    if not remove_extra_permissions and result.missing_rules:
        result.role["rules"] = _rules(result.role) + result.missing_rules
        result.operation = UPDATE
    elif remove_extra_permissions and (result.missing_rules or result.extra_rules):
        result.role["rules"] = copy.deepcopy(_rules(expected))
        result.operation = UPDATE

    result.extra_selectors = _aggregation_covers(expected_agg, existing_agg)
    result.missing_selectors = _aggregation_covers(existing_agg, expected_agg)
    if expected_agg is None and existing_agg is not None:
        # the default is not aggregated (any more): neither is the stored role
        result.role.pop("aggregationRule", None)
        result.operation = UPDATE
    elif not remove_extra_permissions and result.missing_selectors:
        agg = result.role.get("aggregationRule") or {}
        agg["clusterRoleSelectors"] = _selectors(agg) + copy.deepcopy(result.missing_selectors)
        result.role["aggregationRule"] = agg
        result.operation = UPDATE
    elif remove_extra_permissions and (result.missing_selectors or result.extra_selectors):
        result.role["aggregationRule"] = copy.deepcopy(expected_agg)
        result.operation = UPDATE
    return result


def _subject_key(subject: dict[str, Any]) -> tuple[str, str, str, str]:
    return (subject.get("kind") or "", subject.get("apiGroup") or "", subject.get("name") or "",
            subject.get("namespace") or "")  # fmt: skip


def _diff_subjects(expected: list[dict[str, Any]], existing: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(missing from existing, extra in existing) (upstream: diffSubjectLists)."""
    have = {_subject_key(s) for s in existing}
    want = {_subject_key(s) for s in expected}
    return [s for s in expected if _subject_key(s) not in have], [s for s in existing if _subject_key(s) not in want]


def _role_ref(obj: Object) -> tuple[str, str, str]:
    ref = obj.get("roleRef") or {}
    return (ref.get("apiGroup") or "", ref.get("kind") or "", ref.get("name") or "")


def compute_reconciled_role_binding(existing: Object, expected: Object,
                                    remove_extra_subjects: bool = False) -> BindingResult:  # fmt: skip
    """What `existing` (a RoleBinding or ClusterRoleBinding) becomes when reconciled with `expected`."""
    protected = is_protected(existing)
    if _role_ref(existing) != _role_ref(expected):
        # roleRef cannot change: the binding is deleted and made anew
        return BindingResult(binding=copy.deepcopy(expected), operation=RECREATE, protected=protected)
    result = BindingResult(binding=copy.deepcopy(existing), protected=protected)
    if _merge_meta(result.binding, existing, expected, "annotations"):
        result.operation = UPDATE
    if _merge_meta(result.binding, existing, expected, "labels"):
        result.operation = UPDATE
    existing_subjects = list(existing.get("subjects") or [])
    result.missing_subjects, result.extra_subjects = _diff_subjects(list(expected.get("subjects") or []),
                                                                    existing_subjects)  # fmt: skip
    if not remove_extra_subjects and result.missing_subjects:
        result.binding["subjects"] = existing_subjects + copy.deepcopy(result.missing_subjects)
        result.operation = UPDATE
    elif remove_extra_subjects and (result.missing_subjects or result.extra_subjects):
        result.binding["subjects"] = copy.deepcopy(list(expected.get("subjects") or []))
        result.operation = UPDATE
    return result


def reconcile_role(existing: Object | None, expected: Object) -> RoleResult:
    """`compute_reconciled_role`, or a create when there is nothing stored."""
    if existing is None:
        return RoleResult(role=copy.deepcopy(expected), operation=CREATE)
    return compute_reconciled_role(existing, expected)


def reconcile_role_binding(existing: Object | None, expected: Object) -> BindingResult:
    if existing is None:
        return BindingResult(binding=copy.deepcopy(expected), operation=CREATE)
    return compute_reconciled_role_binding(existing, expected)
