"""How upstream's messages print values with Go's fmt verbs, where the autoscaler's conditions and events carry
them: a `*metav1.LabelSelector` under `%+v` (its generated String method, `nil` for none) and a string under
`%q`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...api.errors import go_quote


def label_selector(selector: Mapping[str, Any] | None) -> str:
    """`&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}`,
    or `nil`."""
    if selector is None:
        return "nil"
    labels = selector.get("matchLabels") or {}
    label_text = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in r.get('values') or ())}],}},"
        for r in selector.get("matchExpressions") or ()
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{label_text}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )


def quote(text: str) -> str:
    """Go's `%q`."""
    return go_quote(text)
