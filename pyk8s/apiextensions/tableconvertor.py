"""The server-side Table of a custom resource, built from its CRD version's additionalPrinterColumns (upstream:
apiextensions-apiserver pkg/registry/customresource/tableconvertor, and the default and scale columns of
pkg/apiserver/helpers.go).

`printer_for_columns(columns)` compiles the columns' JSONPaths once into a `tables.Printer` whose row function
is run for every object listed with `Accept: ...;as=Table`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..api import gotime, meta
from ..api.errors import go_quote
from ..api.jsonpath import NO_VALUE, JSONPath, JSONPathError, parse
from ..apiserver.tables import Cells, Column, Printer, human_duration

# metav1.ObjectMeta's swagger descriptions, which upstream uses for the Name and default Age columns.
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It "
    "is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
NAME_COLUMN = Column("Name", "string", "name", NAME_DESCRIPTION)
AGE_COLUMN: dict[str, Any] = {
    "name": "Age",
    "type": "date",
    "description": CREATION_TIMESTAMP_DESCRIPTION,
    "jsonPath": ".metadata.creationTimestamp",
}

_GO_ZERO_TIME = -62135596800  # 0001-01-01T00:00:00Z, Go's zero time.Time, in Unix seconds
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def default_columns(columns: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A version's printer columns, or the single `Age` column when it declares none (upstream:
    serveDefaultColumnsIfEmpty)."""
    return list(columns) if columns else [dict(AGE_COLUMN)]


def scale_columns(version: dict[str, Any]) -> list[dict[str, Any]]:
    """The columns of a version's scale subresource table: Desired and Available when the scale subresource
    names the replica paths, then Age (upstream: getScaleColumnsForVersion)."""
    scale = (version.get("subresources") or {}).get("scale") or {}
    cols: list[dict[str, Any]] = []
    if scale.get("specReplicasPath"):
        cols.append(
            {
                "name": "Desired",
                "type": "integer",
                "description": "Number of desired replicas",
                "jsonPath": ".spec.replicas",
            }
        )
    if scale.get("statusReplicasPath"):
        cols.append(
            {
                "name": "Available",
                "type": "integer",
                "description": "Number of actual replicas",
                "jsonPath": ".status.replicas",
            }
        )
    cols.append(dict(AGE_COLUMN))
    return cols


def _compile(path: str, name: str) -> JSONPath:
    return parse(name, "{" + path + "}", allow_missing_keys=True)


def validate_column_json_path(path: str) -> str | None:
    """Upstream's error for a column whose jsonPath does not compile (`unrecognized column definition "..."`), or
    None when it does."""
    try:
        _compile(path, "")
    except JSONPathError:
        return f"unrecognized column definition {go_quote(path)}"
    return None


def printer_for_columns(columns: list[dict[str, Any]] | None) -> Printer:
    """The Table printer of a CRD version with these additionalPrinterColumns: `Name`, then each column in order.

    Like upstream, a column whose jsonPath does not compile ends the list there: the columns before it are
    served, it and the ones after it are not (upstream logs the error and uses that partial convertor).
    """
    headers = [NAME_COLUMN]
    paths: list[tuple[JSONPath, str]] = []
    for col in default_columns(columns):
        path, name, typ = col.get("jsonPath") or "", col.get("name") or "", col.get("type") or ""
        try:
            compiled = _compile(path, name)
        except JSONPathError:
            break
        description = col.get("description") or f"Custom resource definition column (in JSONPath format): {path}"
        headers.append(Column(name, typ, col.get("format") or "", description, int(col.get("priority") or 0)))
        paths.append((compiled, typ))

    def row(obj: dict[str, Any]) -> Cells:
        cells: Cells = [(obj.get("metadata") or {}).get("name") or ""]
        for compiled, typ in paths:
            cells.append(_cell(compiled, typ, obj))
        return cells

    return Printer(tuple(headers), row)


def _cell(compiled: JSONPath, typ: str, obj: dict[str, Any]) -> Any:
    try:
        results = compiled.find_results(obj)
    except JSONPathError:
        return None
    if not results or not results[0]:
        return None
    # Only the first value counts: `.spec.items[*].name` shows the first item's name.
    value = results[0][0]
    if typ == "string":
        # Upstream prints the value re-wrapped, so a JSON null shows as `<no value>`.
        return compiled.print_results([NO_VALUE if value is None else value])
    return cell_for_json_value(typ, value)


def cell_for_json_value(column_type: str, value: Any) -> Any:
    """A non-string column's cell from the value its jsonPath found (upstream: cellForJSONValue); None when the
    value does not fit the column's type."""
    if value is None or value is NO_VALUE:
        return None
    is_bool = isinstance(value, bool)
    if column_type == "integer":
        if isinstance(value, int) and not is_bool:
            return value
        if isinstance(value, float):
            # Go's int64(f): truncation; out of range (or NaN) gives the minimum int64 on amd64.
            return int(value) if value == value and _INT64_MIN <= value < 2.0**63 else _INT64_MIN
    elif column_type == "number":
        if isinstance(value, int | float) and not is_bool:
            return float(value)
    elif column_type == "boolean":
        if is_bool:
            return value
    elif column_type == "string":
        if isinstance(value, str):
            return value
    elif column_type == "date" and isinstance(value, str):
        return _age(value)
    return None


def _age(value: str) -> str:
    """A `date` cell: the time since the timestamp, `<unknown>` for an empty or zero one, `<invalid>` for one that
    is not RFC 3339 (metav1.Time.UnmarshalQueryParameter, then ConvertToHumanReadableDateType)."""
    if value in ("", "null"):
        return "<unknown>"
    try:
        seconds, nanos = gotime.parse(value)
    except gotime.GoTimeError:
        return "<invalid>"
    if seconds == _GO_ZERO_TIME and nanos == 0:
        return "<unknown>"
    now = meta.now()
    now_ns = int(now.timestamp()) * 1_000_000_000 + now.microsecond * 1000
    # time.Since saturates at Go's Duration range (about 292 years).
    elapsed = max(_INT64_MIN, min(_INT64_MAX, now_ns - (seconds * 1_000_000_000 + nanos)))
    return human_duration(dt.timedelta(microseconds=elapsed / 1000))
