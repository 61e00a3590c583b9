"""Validation of the parts a CRD version may carry: the scale subresource's paths, additional printer
columns and selectable fields (upstream: apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go,
ValidateCustomResourceDefinitionSubresources, ValidateCustomResourceColumnDefinition and
ValidateCustomResourceSelectableFields)."""

from __future__ import annotations

from typing import Any

from ..api import errors as e
from ..api.errors import FieldError
from .schema.structural import FieldPathError, render_field_path, valid_field_path

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
MAX_SELECTABLE_FIELDS = 8


def _s(x: Any) -> str:
    return x if isinstance(x, str) else ""


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _simple_json_path_errors(s: str, path: str) -> list[FieldError]:
    if not s:
        return [e.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [e.invalid(path, s, "must be a simple json path starting with .")]
    return []


def subresources_errors(subresources: Any, path: str) -> list[FieldError]:
    """The scale subresource's paths (upstream: ValidateCustomResourceDefinitionSubresources)."""
    scale = _d(subresources).get("scale")
    if not isinstance(scale, dict):
        return []
    errs: list[FieldError] = []
    for name, under in (("specReplicasPath", ".spec"), ("statusReplicasPath", ".status")):
        value, at = _s(scale.get(name)), f"{path}.scale.{name}"
        if not value:
            errs.append(e.required(at, ""))
        elif simple := _simple_json_path_errors(value, at):
            errs += simple
        elif not value.startswith(under + "."):
            errs.append(e.invalid(at, value, f"should be a json path under {under}"))
    selector = _s(scale.get("labelSelectorPath"))
    if selector:
        at = f"{path}.scale.labelSelectorPath"
        if simple := _simple_json_path_errors(selector, at):
            errs += simple
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(e.invalid(at, selector, "should be a json path under either .spec or .status"))
    return errs


def column_errors(col: dict[str, Any], path: str) -> list[FieldError]:
    """One additional printer column (upstream: ValidateCustomResourceColumnDefinition)."""
    errs: list[FieldError] = []
    if not _s(col.get("name")):
        errs.append(e.required(f"{path}.name", ""))
    type_, one_of = _s(col.get("type")), "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not type_:
        errs.append(e.required(f"{path}.type", one_of))
    elif type_ not in PRINTER_COLUMN_TYPES:
        errs.append(e.invalid(f"{path}.type", type_, one_of))
    format_ = _s(col.get("format"))
    if format_ and format_ not in PRINTER_COLUMN_FORMATS:
        errs.append(e.invalid(f"{path}.format", format_, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = _s(col.get("jsonPath"))
    if not json_path:
        errs.append(e.required(f"{path}.JSONPath", ""))  # upstream names the internal Go field here
    else:
        errs += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errs


def selectable_fields_errors(fields: list[Any], schema: dict[str, Any] | None, path: str) -> list[FieldError]:
    """Selectable fields must name distinct string, boolean or integer fields outside metadata, at most 8
    (upstream: ValidateCustomResourceSelectableFields)."""
    errs: list[FieldError] = []
    unique: set[str] = set()
    for i, selectable in enumerate(fields):
        json_path, at = _s(_d(selectable).get("jsonPath")), f"{path}[{i}].jsonPath"
        if not json_path:
            errs.append(e.required(at, ""))
            continue
        try:
            steps, found = valid_field_path(json_path, schema, allow_array_notation=False)
        except FieldPathError as exc:
            errs.append(e.invalid(at, json_path, f"is an invalid path: {exc}"))
            continue
        if steps[:1] == [("metadata", True)]:
            errs.append(e.invalid(at, json_path, "must not point to fields in metadata"))
        if found is None or _s(found.get("type")) not in ("string", "boolean", "integer"):
            errs.append(e.invalid(at, json_path, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))  # fmt: skip
        rendered = render_field_path(steps)
        if rendered in unique:
            errs.append(e.duplicate(at, json_path))
        unique.add(rendered)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        errs.append(e.too_many(path, len(unique), MAX_SELECTABLE_FIELDS))
    return errs
