"""Matching rules several plugins share (upstream: component-helpers' nodeaffinity and v1 taint helpers):
node selector terms against a node's labels and name, a pod's required node affinity, and tolerations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..framework.interface import Node, Pod


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def requirement_matches(req: dict[str, Any], values_of: dict[str, str]) -> bool:
    """One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against labels or fields."""
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    have = values_of.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt"):
        if have is None or len(values) != 1:
            return False
        a, b = _int_or_none(have), _int_or_none(values[0])
        if a is None or b is None:
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_selector_term_matches(term: dict[str, Any], node: Node) -> bool:
    """All of a term's matchExpressions (labels) and matchFields (metadata.name) hold; an empty term matches
    nothing."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    md = node.get("metadata") or {}
    labels = md.get("labels") or {}
    if not all(requirement_matches(r, labels) for r in exprs):
        return False
    if fields:
        node_fields = {"metadata.name": md.get("name", "")}
        for r in fields:
            if r.get("key") != "metadata.name" or not requirement_matches(r, node_fields):
                return False
    return True


def node_selector_matches(selector: dict[str, Any] | None, node: Node) -> bool:
    """A NodeSelector: its terms are ORed."""
    terms = (selector or {}).get("nodeSelectorTerms") or []
    return any(node_selector_term_matches(t, node) for t in terms)


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """spec.nodeSelector and the required node affinity both hold (upstream: GetRequiredNodeAffinity.Match)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if selector:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return node_selector_matches(required, node)


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Whether one toleration tolerates one taint (upstream: Toleration.ToleratesTaint)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerations_tolerate_taint(tolerations: Iterable[dict[str, Any]], taint: dict[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Iterable[dict[str, Any]],
    tolerations: list[dict[str, Any]],
    include: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any] | None:
    """The first taint (among those `include` accepts) no toleration tolerates, or None."""
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def node_taints(node: Node) -> list[dict[str, Any]]:
    return (node.get("spec") or {}).get("taints") or []


def pod_tolerations(pod: Pod) -> list[dict[str, Any]]:
    return (pod.get("spec") or {}).get("tolerations") or []
