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

from typing import Any

import orjson

from ..api import gofmt

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class ApplyError(Exception):
    """A failure of one object that is not a server error (a bad annotation, a patch that cannot be built)."""


# -- Go's encoding/json, for the annotation ----------------------------------------------------------------


def go_json(value: Any) -> str:
    """`value` encoded as Go's json.Marshal encodes a map[string]interface{} (api.gofmt), ApplyError where Go's
    would fail (NaN, infinities)."""
    try:
        return gofmt.go_json(value)
    except ValueError as e:
        raise ApplyError(str(e)) from None


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
