"""A JSON value as CEL rules see it, by its OpenAPI schema (upstream: apiserver pkg/cel/common values.go
UnstructuredToVal and escaping.go): property names escaped (`foo-bar` is `self.foo__dash__bar`), null and
undeclared properties hidden, numbers as doubles, `byte`/`duration`/`date`/`date-time` strings as bytes,
durations and timestamps, and a resource's metadata reduced to name and generateName.

A `ValueModel` is built once per schema node; converting a value that needs none of this returns it unchanged,
without a copy. Set and map lists can also be put in a canonical order (`canonical=True`), so that CEL's ordered
list equality answers upstream's: sets equal whatever their order, map lists equal by key.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from typing import Any

from ..apiextensions.schema.values import go_json
from .kubetypes import duration, timestamp

_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                       "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"))  # fmt: skip
_SIMPLE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_EXPAND = re.compile(r"__|[-./]")
_EXPANSIONS = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_ALLOWED = re.compile(r"[a-zA-Z0-9_./-]*")


def escape(name: str) -> str | None:
    """A property name as a CEL identifier, or None when it has none (upstream: cel.Escape)."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if _SIMPLE.fullmatch(name) and "__" not in name:
        return name
    if not _ALLOWED.fullmatch(name):
        return None
    return _EXPAND.sub(lambda m: _EXPANSIONS[m.group(0)], name)


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
                   "d": 86400.0, "w": 604800.0}  # fmt: skip
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|μs|ms|s|m|h|d|w)")


def parse_duration(s: str) -> datetime.timedelta | None:
    """A duration as kube-openapi's strfmt.ParseDuration reads it ("1h30m", "2d", "-5s")."""
    text = s.strip()
    sign = -1 if text.startswith("-") else 1
    text = text.lstrip("+-")
    pos, seconds = 0, 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            return None
        seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        return None
    return datetime.timedelta(seconds=sign * seconds)


def _timestamp(s: str, date_only: bool) -> datetime.datetime | None:
    try:
        if date_only:
            d = datetime.date.fromisoformat(s)
            return datetime.datetime(d.year, d.month, d.day, tzinfo=datetime.UTC)
        t = datetime.datetime.fromisoformat(s.replace("z", "Z").replace("Z", "+00:00"))
        return t if t.tzinfo is not None else t.replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


class ValueModel:
    """How values of one schema node become CEL values."""

    __slots__ = ("additional", "fmt", "items", "key_names", "kind", "list_type", "meta", "needs", "needs_canon",
                 "props")  # fmt: skip

    def __init__(self, s: Any, *, resource_root: bool = False, _meta_filter: bool = False) -> None:
        s = s if isinstance(s, dict) else {}
        self.kind = "dyn" if s.get("x-kubernetes-int-or-string") is True else s.get("type") or "dyn"
        self.fmt = s.get("format") or ""
        self.list_type = s.get("x-kubernetes-list-type") or ""
        keys = s.get("x-kubernetes-list-map-keys")
        self.key_names: tuple[str, ...] = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        self.props: dict[str, tuple[str, ValueModel]] = {}
        self.additional: ValueModel | None = None
        self.items: ValueModel | None = None
        self.meta = self.kind == "object" and (resource_root or s.get("x-kubernetes-embedded-resource") is True)
        needs = False
        if self.kind == "object":
            props = s.get("properties")
            if (isinstance(props, dict) and props) or self.meta:
                needs = self._object(s, props if isinstance(props, dict) else {})
            elif isinstance(s.get("additionalProperties"), dict):
                self.additional = ValueModel(s["additionalProperties"])
                needs = self.additional.needs
        elif self.kind == "array" and isinstance(s.get("items"), dict):
            self.items = ValueModel(s["items"])
            needs = self.items.needs
        elif self.kind == "number" or (self.kind == "string" and self.fmt in ("byte", "duration", "date", "date-time")):
            needs = True
        self.needs = needs or _meta_filter
        children = [m for _, m in self.props.values()] + [m for m in (self.additional, self.items) if m]
        self.needs_canon = needs or self.list_type in ("set", "map") or any(m.needs_canon for m in children)

    def _object(self, s: dict[str, Any], props: dict[str, Any]) -> bool:
        """Declare the properties; whether values need rebuilding: a renamed, unnamable or nullable property, or
        fields beyond the properties (upstream's Find hides null and undeclared fields)."""
        needs = self.meta or s.get("x-kubernetes-preserve-unknown-fields") is True
        for name, sub in props.items():
            escaped = escape(name)
            needs = needs or escaped != name or (isinstance(sub, dict) and sub.get("nullable") is True)
            if escaped is not None:
                model = ValueModel(sub)
                self.props[name] = (escaped, model)
                needs = needs or model.needs
        if self.meta:
            string = {"type": "string"}
            self.props.setdefault("apiVersion", ("apiVersion", ValueModel(string)))
            self.props.setdefault("kind", ("kind", ValueModel(string)))
            meta = {"type": "object", "properties": {"name": string, "generateName": string}}
            self.props["metadata"] = ("metadata", ValueModel(meta, _meta_filter=True))
        return needs

    def convert(self, v: Any, canonical: bool = False) -> Any:
        """`v` as the rule sees it (unchanged when nothing about it differs)."""
        if v is None or not (self.needs_canon if canonical else self.needs):
            return v
        kind = self.kind
        if kind == "object" and type(v) is dict:
            if self.props or self.meta or self.needs:
                out = {}
                for name, x in v.items():
                    entry = self.props.get(name)
                    if entry is not None and x is not None:
                        out[entry[0]] = entry[1].convert(x, canonical)
                return out
            if self.additional is not None:
                return {k: self.additional.convert(x, canonical) for k, x in v.items()}
            return v
        if kind == "array" and type(v) is list:
            items = [self.items.convert(x, canonical) for x in v] if self.items is not None else list(v)
            if canonical and self.list_type == "set":
                items.sort(key=go_json)
            elif canonical and self.list_type == "map":
                items.sort(key=lambda x: go_json([x.get(_escaped(k), None) for k in self.key_names])
                           if type(x) is dict else "")  # fmt: skip
            return items
        if kind == "number" and type(v) is int:
            return float(v)
        if kind == "string" and type(v) is str:
            return self._string(v)
        return v

    def _string(self, v: str) -> Any:
        fmt = self.fmt
        if fmt == "byte":
            try:
                return base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                return v
        if fmt == "duration":
            d = parse_duration(v)
            return v if d is None else duration(d)
        if fmt in ("date", "date-time"):
            t = _timestamp(v, fmt == "date")
            return v if t is None else timestamp(t)
        return v


def _escaped(name: str) -> str:
    return escape(name) or name
