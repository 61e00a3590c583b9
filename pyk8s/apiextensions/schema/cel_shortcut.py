"""A create's CEL rules checked without the CEL runtime, where every rule a create evaluates is simple enough
for the rule shortcut (pyk8s.cel.fastpath) and reached through properties alone: each rule's value is found as
cel_validation's walk finds it, and when every rule is certainly true the create has no rule errors. Anything
else (a rule that may be false, or fails) goes to the full walk, which words the errors (upstream:
apiextensions-apiserver pkg/apiserver/schema/cel validation.go, for what the walk evaluates and where).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import cel_cost

if TYPE_CHECKING:
    from .cel_validation import _Node

# A node with rules, by the property names that lead to it, and the shortcuts of the rules a create evaluates.
_Site = tuple[tuple[str, ...], "_Node", tuple[Callable[[Any], bool], ...]]


class _NoShortcut(Exception):
    """A rule that the shortcut cannot answer for, or a place it cannot find the way the walk does."""


def shortcut_sites(root: _Node) -> list[_Site] | None:
    """Where a create's rules are, when every one of them has a shortcut (fastpath) and the walk reaches them
    through properties alone; None otherwise. Their static costs must fit the budget with room to spare (no
    evaluation is then charged more, nor refused)."""
    sites: list[_Site] = []
    total = 0

    def visit(node: _Node, steps: tuple[str, ...]) -> None:
        nonlocal total
        if node.items is not None or node.additional is not None or node.all_of:
            raise _NoShortcut
        checks = []
        for rule in node.rules:
            if rule.error:
                raise _NoShortcut
            program = rule.program
            if program is None or (program.uses_old_self and not rule.optional_old_self):
                continue  # not evaluated on create
            if program.shortcut is None or rule.cost > 1000:
                raise _NoShortcut
            total += max(rule.cost, 1)
            checks.append(program.shortcut)
        if checks:
            sites.append((steps, node, tuple(checks)))
        for k, sub in node.props.items():
            visit(sub, (*steps, k))

    try:
        visit(root, ())
    except _NoShortcut:
        return None
    return sites if total < cel_cost.RUNTIME_BUDGET else None


def all_certainly_true(sites: list[_Site], obj: Any) -> bool:
    """Whether every rule a create evaluates is certainly true (and so reports nothing): each site's value
    reached as _validate reaches it (maps all the way, no null), seen as _rules shows it to the rules."""
    for steps, node, checks in sites:
        v = obj
        for k in steps:
            if type(v) is not dict:
                v = None
                break
            v = v.get(k)
        if v is None:
            continue  # not reached: not evaluated
        model = node.model
        assert model is not None
        seen = model.convert(v) if model.needs else v  # (convert gives v itself when nothing needs converting)
        fields = node.self_fields
        if fields is not None and type(seen) is dict:
            seen = {k: seen[k] for k in fields if k in seen}
        for check in checks:
            if not check(seen):
                return False
    return True
