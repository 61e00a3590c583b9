"""Ratcheting of custom resource validation on update (v1.32 gate CRDValidationRatcheting, beta and on): an
old value is correlated with each new value through properties, additionalProperties keys and list-map keys,
and validation errors of a value equal to its correlated old value are dropped (upstream:
apiextensions-apiserver pkg/apiserver/validation/ratcheting.go and apiserver pkg/cel/common equality.go,
maplist.go).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api.errors import go_quote
from .values import deep_equal

if TYPE_CHECKING:
    from .validation import _Node


class Correlation:
    """An old value correlated to a new one (through properties, map keys and list-map keys), with the
    cached answer to "is it unchanged" (upstream: apiserver pkg/cel/common CorrelatedObject)."""

    __slots__ = ("_equal", "_kids", "_map_list", "new", "node", "old")

    def __init__(self, old: Any, new: Any, node: _Node) -> None:
        self.old, self.new, self.node = old, new, node
        self._equal: bool | None = None
        self._kids: dict[Any, Correlation | None] = {}
        self._map_list: dict[Any, Any] | None = None

    def key(self, k: str) -> Correlation | None:
        """The correlated child at property or map key k, or None when it has no old counterpart."""
        if k in self._kids:
            return self._kids[k]
        old, new, child = self.old, self.new, None
        if type(old) is dict and type(new) is dict and k in old and k in new:
            sub = self.node.props.get(k) or self.node.additional
            if sub is not None:
                child = Correlation(old[k], new[k], sub)
        self._kids[k] = child
        return child

    def index(self, i: int) -> Correlation | None:
        """The correlated child at index i: only list-map items correlate, by their keys."""
        if i in self._kids:
            return self._kids[i]
        old, new, node, child = self.old, self.new, self.node, None
        if type(old) is list and type(new) is list and i < len(new) and node.list_type == "map":
            if self._map_list is None:
                self._map_list = {}
                if node.type_str == "array" and node.list_map_keys:
                    for item in old:
                        if type(item) is dict and (key := _map_key(item, node.list_map_keys)) is not None:
                            self._map_list.setdefault(key, item)
            key = _map_key(new[i], node.list_map_keys) if type(new[i]) is dict else None
            match = self._map_list.get(key) if key is not None else None
            if match is not None and node.items is not None:
                child = Correlation(match, new[i], node.items)
        self._kids[i] = child
        return child

    def unchanged(self) -> bool:
        """Whether the new value equals the old one, as upstream compares them: children must correlate
        (a key the schema does not declare makes an object "changed"), list-maps compare by key."""
        if self._equal is None:
            self._equal = self._compare()
        return self._equal

    def _compare(self) -> bool:
        old, new = self.old, self.new
        if old is None or new is None:
            return old is None and new is None
        if type(old) is list and type(new) is list:
            if len(old) != len(new):
                return False
            if self.node.list_type != "map":
                return deep_equal(old, new)
            return all((c := self.index(i)) is not None and c.unchanged() for i in range(len(new)))
        if type(old) is dict and type(new) is dict:
            return len(old) == len(new) and all((c := self.key(k)) is not None and c.unchanged() for k in new)
        if type(old) in (list, dict) or type(new) in (list, dict):
            return False
        return deep_equal(old, new)


def _map_key(item: dict[str, Any], names: tuple[str, ...]) -> Any:
    # Upstream keys a single-key list by the value itself, several keys by a "%q"/"%d"/"%f"/"%t" string.
    if len(names) == 1:
        v = item.get(names[0], item)
        return (type(v).__name__, v) if type(v) in (bool, float, int, str) else None
    parts = []
    for name in names:
        v = item.get(name, item)
        if type(v) is bool:
            parts.append("true" if v else "false")
        elif type(v) is float:
            parts.append(f"{v:f}")
        elif type(v) is int:
            parts.append(str(v))
        elif type(v) is str:
            parts.append(go_quote(v))
        else:
            return None
    return "\x00" + "\x00".join(parts)
