"""kubectl's last-applied-configuration annotation, written byte for byte as kubectl writes it.

The annotation `kubectl.kubernetes.io/last-applied-configuration` holds the configuration exactly as kubectl
records it (upstream: kubectl pkg/util/apply.go, util.GetModifiedConfiguration, util.GetOriginalConfiguration
and util.CreateApplyAnnotation): the object from the manifest with that annotation removed and
`metadata.annotations` present (`{}` when there are none), encoded like Go's encoding/json (json.Marshal of a
map[string]interface{}: keys sorted, compact, `<`, `>`, `&` escaped, integral numbers without a fraction) plus a
newline. A manifest applied by pyk8s and then by kubectl, or the other way round, is therefore "unchanged".

`go_json` is that encoder; the three-way patch (`three_way_patch`) prints values with it as upstream's `%v`
does. `ApplyError` is the failure of one applied object that is not a server error (a bad annotation, a value
Go cannot encode, a patch that cannot be built); `apply` reports it per object.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class ApplyError(Exception):
    """A failure of one object that is not a server error (a bad annotation, a patch that cannot be built)."""


# -- Go's encoding/json, for the annotation ----------------------------------------------------------------

_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _go_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).translate(_GO_ESCAPES)


def _go_float(f: float) -> str:
    if f != f or f in (float("inf"), float("-inf")):
        raise ApplyError(f"json: unsupported value: {f}")
    if f.is_integer() and abs(f) < 1e21:
        return str(int(f))
    a = abs(f)
    text = repr(f)
    if a < 1e-6 or a >= 1e21:
        # Go writes exponents with at least two digits but then trims a negative one's leading zero.
        return text.replace("e-0", "e-")
    if "e" in text:
        return format(Decimal(text), "f")
    return text


def go_json(value: Any) -> str:
    """`value` encoded as Go's json.Marshal encodes a map[string]interface{}: sorted keys, no spaces, HTML
    characters escaped, integral numbers without a fraction."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise ApplyError(f"json: unsupported type: {type(value).__name__}")


# -- the last-applied configuration ------------------------------------------------------------------------


def get_original_configuration(live: dict[str, Any]) -> dict[str, Any] | None:
    """The configuration last applied to a live object, from its annotation (upstream:
    util.GetOriginalConfiguration); None when there is none."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        original = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise ApplyError(f"the {LAST_APPLIED} annotation is not valid JSON: {err}") from err
    if not isinstance(original, dict):
        raise ApplyError(f"the {LAST_APPLIED} annotation is not a JSON object")
    return original


def get_modified_configuration(obj: dict[str, Any], annotate: bool) -> str:
    """The configuration kubectl records for `obj` (upstream: util.GetModifiedConfiguration): the object
    without the last-applied annotation, `metadata.annotations` present even when empty, Go-encoded with a
    trailing newline. With `annotate`, the encoding of that object once the first encoding has been set as
    its annotation (what the patch is computed towards)."""
    o = dict(obj)
    meta = dict(o.get("metadata") or {})
    o["metadata"] = meta
    raw = meta.get("annotations")
    annotations = dict(raw) if isinstance(raw, dict) else {}
    annotations.pop(LAST_APPLIED, None)
    meta["annotations"] = annotations
    text = go_json(o) + "\n"
    if not annotate:
        return text
    meta["annotations"] = {**annotations, LAST_APPLIED: text}
    return go_json(o) + "\n"


def with_apply_annotation(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` carrying its last-applied annotation, for a create (upstream: util.CreateApplyAnnotation)."""
    text = get_modified_configuration(obj, annotate=False)
    meta = dict(obj.get("metadata") or {})
    raw = meta.get("annotations")
    meta["annotations"] = {**(raw if isinstance(raw, dict) else {}), LAST_APPLIED: text}
    return {**obj, "metadata": meta}
