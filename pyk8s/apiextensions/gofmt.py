"""Go's `%#v` rendering of the internal apiextensions types that upstream's CRD validation puts in a few field
errors as the offending value (the versions list, a root schema, an items array, a CA bundle).

Go prints a non-nil pointer field as its address; those addresses differ on every run, so a fixed stand-in
address is printed instead. Everything else follows fmt's rules: struct fields in declaration order, map
keys sorted, nil slices and maps as `T(nil)`.
"""

from __future__ import annotations

from typing import Any

from ..api.errors import go_quote
from ..api.gofmt import go_sharp_v

POINTER = "0xc000000000"  # the stand-in for a Go heap address
_PKG = "apiextensions."


class GoValue:
    """A value that prints in a field error exactly as given."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def go_string(self) -> str:
        return self.text


def _ptr(type_name: str, present: bool) -> str:
    return f"(*{type_name})({POINTER if present else 'nil'})"


def go_strings(v: Any) -> str:
    if not isinstance(v, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(str(x)) for x in v) + "}"


def go_bytes(b: bytes | None) -> str:
    if b is None:
        return "[]byte(nil)"
    return "[]byte{" + ", ".join(f"0x{x:x}" for x in b) + "}"


def _s(v: Any) -> str:
    return go_quote(v if isinstance(v, str) else "")


def _b(v: Any) -> str:
    return "true" if v is True else "false"


def _slice(items: Any, type_name: str, render: Any) -> str:
    if not isinstance(items, list):
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(render(x) for x in items) + "}"


def _map(items: Any, type_name: str, render: Any) -> str:
    if not isinstance(items, dict):
        return f"{type_name}(nil)"
    body = ", ".join(f"{go_quote(str(k))}:{render(v)}" for k, v in sorted(items.items()))
    return f"{type_name}{{{body}}}"


def _rule(r: Any) -> str:
    r = r if isinstance(r, dict) else {}
    return (
        f"{_PKG}ValidationRule{{Rule:{_s(r.get('rule'))}, Message:{_s(r.get('message'))}, "
        f"MessageExpression:{_s(r.get('messageExpression'))}, "
        f"Reason:{_ptr(_PKG + 'FieldValueErrorReason', r.get('reason') is not None)}, "
        f"FieldPath:{_s(r.get('fieldPath'))}, OptionalOldSelf:{_ptr('bool', r.get('optionalOldSelf') is not None)}}}"
    )


def go_schema(s: Any) -> str:
    """An apiextensions.JSONSchemaProps built from a v1 schema dict."""
    s = s if isinstance(s, dict) else {}
    props_type = f"map[string]{_PKG}JSONSchemaProps"
    fields = [
        ("ID", _s(s.get("id"))),
        ("Schema", _s(s.get("$schema"))),
        ("Ref", _ptr("string", s.get("$ref") is not None)),
        ("Description", _s(s.get("description"))),
        ("Type", _s(s.get("type"))),
        ("Nullable", _b(s.get("nullable"))),
        ("Format", _s(s.get("format"))),
        ("Title", _s(s.get("title"))),
        ("Default", _ptr(_PKG + "JSON", s.get("default") is not None)),
        ("Maximum", _ptr("float64", s.get("maximum") is not None)),
        ("ExclusiveMaximum", _b(s.get("exclusiveMaximum"))),
        ("Minimum", _ptr("float64", s.get("minimum") is not None)),
        ("ExclusiveMinimum", _b(s.get("exclusiveMinimum"))),
        ("MaxLength", _ptr("int64", s.get("maxLength") is not None)),
        ("MinLength", _ptr("int64", s.get("minLength") is not None)),
        ("Pattern", _s(s.get("pattern"))),
        ("MaxItems", _ptr("int64", s.get("maxItems") is not None)),
        ("MinItems", _ptr("int64", s.get("minItems") is not None)),
        ("UniqueItems", _b(s.get("uniqueItems"))),
        ("MultipleOf", _ptr("float64", s.get("multipleOf") is not None)),
        ("Enum", _slice(s.get("enum"), _PKG + "JSON", go_sharp_v)),
        ("MaxProperties", _ptr("int64", s.get("maxProperties") is not None)),
        ("MinProperties", _ptr("int64", s.get("minProperties") is not None)),
        ("Required", go_strings(s.get("required"))),
        ("Items", _ptr(_PKG + "JSONSchemaPropsOrArray", s.get("items") is not None)),
        ("AllOf", _slice(s.get("allOf"), _PKG + "JSONSchemaProps", go_schema)),
        ("OneOf", _slice(s.get("oneOf"), _PKG + "JSONSchemaProps", go_schema)),
        ("AnyOf", _slice(s.get("anyOf"), _PKG + "JSONSchemaProps", go_schema)),
        ("Not", _ptr(_PKG + "JSONSchemaProps", s.get("not") is not None)),
        ("Properties", _map(s.get("properties"), props_type, go_schema)),
        ("AdditionalProperties", _ptr(_PKG + "JSONSchemaPropsOrBool", s.get("additionalProperties") is not None)),
        ("PatternProperties", _map(s.get("patternProperties"), props_type, go_schema)),
        ("Dependencies", _map(s.get("dependencies"), _PKG + "JSONSchemaDependencies", _dependency)),
        ("AdditionalItems", _ptr(_PKG + "JSONSchemaPropsOrBool", s.get("additionalItems") is not None)),
        ("Definitions", _map(s.get("definitions"), _PKG + "JSONSchemaDefinitions", go_schema)),
        ("ExternalDocs", _ptr(_PKG + "ExternalDocumentation", s.get("externalDocs") is not None)),
        ("Example", _ptr(_PKG + "JSON", s.get("example") is not None)),
        ("XPreserveUnknownFields", _ptr("bool", s.get("x-kubernetes-preserve-unknown-fields") is not None)),
        ("XEmbeddedResource", _b(s.get("x-kubernetes-embedded-resource"))),
        ("XIntOrString", _b(s.get("x-kubernetes-int-or-string"))),
        ("XListMapKeys", go_strings(s.get("x-kubernetes-list-map-keys"))),
        ("XListType", _ptr("string", s.get("x-kubernetes-list-type") is not None)),
        ("XMapType", _ptr("string", s.get("x-kubernetes-map-type") is not None)),
        ("XValidations", _rules(s.get("x-kubernetes-validations"))),
    ]
    return f"{_PKG}JSONSchemaProps{{" + ", ".join(f"{k}:{v}" for k, v in fields) + "}"


def _rules(v: Any) -> str:
    if not isinstance(v, list):
        return f"{_PKG}ValidationRules(nil)"
    return f"{_PKG}ValidationRules{{" + ", ".join(_rule(r) for r in v) + "}"


def _dependency(v: Any) -> str:
    schema, prop = (v, None) if isinstance(v, dict) else (None, v if isinstance(v, list) else None)
    return (
        f"{_PKG}JSONSchemaPropsOrStringArray{{Schema:{_ptr(_PKG + 'JSONSchemaProps', schema is not None)}, "
        f"Property:{go_strings(prop)}}}"
    )


def go_schema_props_or_array(items: Any) -> str:
    """An apiextensions.JSONSchemaPropsOrArray (a single schema, or the array form)."""
    schema = items if isinstance(items, dict) else None
    array = items if isinstance(items, list) else None
    return (
        f"{_PKG}JSONSchemaPropsOrArray{{Schema:{_ptr(_PKG + 'JSONSchemaProps', schema is not None)}, "
        f"JSONSchemas:{_slice(array, _PKG + 'JSONSchemaProps', go_schema)}}}"
    )


def _column(c: Any) -> str:
    c = c if isinstance(c, dict) else {}
    priority = c.get("priority") if isinstance(c.get("priority"), int) else 0
    return (
        f"{_PKG}CustomResourceColumnDefinition{{Name:{_s(c.get('name'))}, Type:{_s(c.get('type'))}, "
        f"Format:{_s(c.get('format'))}, Description:{_s(c.get('description'))}, Priority:{priority}, "
        f"JSONPath:{_s(c.get('jsonPath'))}}}"
    )


def _selectable(f: Any) -> str:
    return f"{_PKG}SelectableField{{JSONPath:{_s((f or {}).get('jsonPath') if isinstance(f, dict) else '')}}}"


def go_version(v: dict[str, Any]) -> str:
    """An internal apiextensions.CustomResourceDefinitionVersion; `v` holds the internal fields under their v1
    names (schema, subresources, additionalPrinterColumns, selectableFields: None when moved to the spec)."""
    return (
        f"{_PKG}CustomResourceDefinitionVersion{{Name:{_s(v.get('name'))}, Served:{_b(v.get('served'))}, "
        f"Storage:{_b(v.get('storage'))}, Deprecated:{_b(v.get('deprecated'))}, "
        f"DeprecationWarning:{_ptr('string', v.get('deprecationWarning') is not None)}, "
        f"Schema:{_ptr(_PKG + 'CustomResourceValidation', v.get('schema') is not None)}, "
        f"Subresources:{_ptr(_PKG + 'CustomResourceSubresources', v.get('subresources') is not None)}, "
        f"AdditionalPrinterColumns:{_slice(v.get('additionalPrinterColumns'), _PKG + 'CustomResourceColumnDefinition', _column)}, "
        f"SelectableFields:{_slice(v.get('selectableFields'), _PKG + 'SelectableField', _selectable)}}}"
    )


def go_versions(versions: list[dict[str, Any]] | None) -> str:
    return _slice(versions, _PKG + "CustomResourceDefinitionVersion", go_version)
