"""The keyword checks of a CRD's openAPIV3Schema: refused keywords, defaults where they cannot apply, the
x-kubernetes-* extensions' placement and values, and the static rules of x-kubernetes-validations entries
(upstream: apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go,
ValidateCustomResourceDefinitionOpenAPISchema and specStandardValidatorV3). CEL rules are not compiled
here: a caller-supplied checker is called where upstream compiles them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...api import errors as e
from ...api.errors import FieldError, GoStrings
from ..gofmt import GoValue, go_schema_props_or_array
from .structural import (
    FieldPathError,
    Schema,
    additional,
    child,
    index,
    items_schema,
    key,
    new_structural_error,
    schema_has,
    sdict,
    slist,
    sstr,
    strue,
    valid_field_path,
)

OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")
SUPPORTED_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_META_FIELDS = frozenset(("metadata", "kind", "apiVersion"))
_NEWLINES = re.compile(r"[\n\r]+")

# Called for a schema node with x-kubernetes-validations: (node, its path, the uncorrelatable ancestor's path
# when oldSelf may not be used there) -> the rule compilation errors.
RulesChecker = Callable[[Schema, str, str | None], list[FieldError]]


@dataclass(frozen=True)
class SchemaOptions:
    """The checks that update-time ratcheting may switch off (upstream: validationOptions)."""

    require_structural: bool = True
    require_valid_property_type: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set: bool = True
    allow_defaults: bool = True


@dataclass(frozen=True)
class _Context:
    """What the walk knows about where it is (upstream: specStandardValidatorV3's state)."""

    allow_defaults: bool
    disallow_reason: str = ""
    inside_meta: bool = False
    uncorrelatable: str | None = None

    def forbid_defaults(self, reason: str) -> _Context:
        return replace(self, allow_defaults=False, disallow_reason=reason)

    def forbid_old_self(self, path: str) -> _Context:
        return self if self.uncorrelatable is not None else replace(self, uncorrelatable=path)


def keyword_errors(
    schema: Schema, path: str, options: SchemaOptions, rules_checker: RulesChecker | None = None
) -> list[FieldError]:
    """The keyword errors of a root schema, then the rule errors `rules_checker` reports."""
    schema_errs, rule_errs = _walk(schema, path, _Context(options.allow_defaults), True, options, rules_checker)
    return schema_errs + rule_errs


def _walk(
    s: Schema, path: str, ctx: _Context, is_root: bool, opts: SchemaOptions, checker: RulesChecker | None
) -> tuple[list[FieldError], list[FieldError]]:
    errs = _standard(s, path, ctx, opts)
    rule_errs: list[FieldError] = []

    def descend(sub: Any, sub_path: str, sub_ctx: _Context, sub_checker: RulesChecker | None) -> None:
        if isinstance(sub, dict):
            more, more_rules = _walk(sub, sub_path, sub_ctx, False, opts, sub_checker)
            errs.extend(more)
            rule_errs.extend(more_rules)

    if strue(s, "uniqueItems"):
        errs.append(e.forbidden(child(path, "uniqueItems"),
                                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))  # fmt: skip
    props = sdict(s, "properties")
    has_additional, allows, additional_schema = additional(s)
    if has_additional:
        if props and (not allows or additional_schema is not None):
            errs.append(e.forbidden(child(path, "additionalProperties"),
                                    "additionalProperties and properties are mutual exclusive"))  # fmt: skip
        sub = ctx.forbid_defaults("inside additionalProperties applying to object metadata") if ctx.inside_meta else ctx
        descend(additional_schema, child(path, "additionalProperties"), sub, checker)
    map_type = s.get("x-kubernetes-map-type")
    for name, prop in props.items():
        sub = ctx if map_type in (None, "granular", "atomic") else ctx.forbid_old_self(path)
        if (is_root or strue(s, "x-kubernetes-embedded-resource")) and name in _META_FIELDS:
            sub = replace(sub, inside_meta=True)
            if is_root:
                sub = sub.forbid_defaults(f"in top-level {name}")
        descend(prop, key(child(path, "properties"), name), sub, checker)
    descend(s.get("not"), child(path, "not"), ctx, None)
    for kw in ("allOf", "oneOf", "anyOf"):
        for i, x in enumerate(slist(s, kw)):
            descend(x, index(child(path, kw), i), ctx, None)
    for name, x in sdict(s, "definitions").items():
        descend(x, key(child(path, "definitions"), name), ctx, None)
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if items is not None:
        sub = ctx if list_type == "map" else ctx.forbid_old_self(path)
        if isinstance(items, dict):
            descend(items, child(path, "items"), sub, checker)
        elif isinstance(items, list):
            for i, x in enumerate(items):
                descend(x, index(child(path, "items"), i), sub, checker)
    for name, x in sdict(s, "dependencies").items():
        descend(x, key(child(path, "dependencies"), name), ctx, None)

    errs.extend(_extension_errors(s, path, opts))
    rules = slist(s, "x-kubernetes-validations")
    if rules:
        errs.extend(_rule_errors(s, rules, path))
        # Rules are compiled only where the schema here and below is sound, as their errors would mislead.
        if not errs and checker is not None:
            rule_errs.extend(checker(s, path, ctx.uncorrelatable))
    return errs, rule_errs


def _standard(s: Schema, path: str, ctx: _Context, opts: SchemaOptions) -> list[FieldError]:
    """The OpenAPI v3 keywords a CRD schema may not use (upstream: specStandardValidatorV3.validate)."""
    errs: list[FieldError] = []
    type_ = sstr(s, "type")
    if opts.require_valid_property_type and type_ and type_ not in OPENAPI_V3_TYPES:
        errs.append(e.not_supported(child(path, "type"), type_, OPENAPI_V3_TYPES))
    if s.get("default") is not None and not ctx.allow_defaults:
        detail = "must not be set" + (" " + ctx.disallow_reason if ctx.disallow_reason else "")
        errs.append(e.forbidden(child(path, "default"), detail))
    if sstr(s, "id"):
        errs.append(e.forbidden(child(path, "id"), "id is not supported"))
    if s.get("additionalItems") is not None:
        errs.append(e.forbidden(child(path, "additionalItems"), "additionalItems is not supported"))
    if sdict(s, "patternProperties"):
        errs.append(e.forbidden(child(path, "patternProperties"), "patternProperties is not supported"))
    if sdict(s, "definitions"):
        errs.append(e.forbidden(child(path, "definitions"), "definitions is not supported"))
    if s.get("dependencies") is not None:
        errs.append(e.forbidden(child(path, "dependencies"), "dependencies is not supported"))
    if s.get("$ref") is not None:
        errs.append(e.forbidden(child(path, "$ref"), "$ref is not supported"))
    if type_ == "null":
        errs.append(e.forbidden(child(path, "type"), "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        errs.append(e.forbidden(child(path, "items"), "items must be a schema object and not an array"))
    if ctx.inside_meta and strue(s, "x-kubernetes-embedded-resource"):
        errs.append(e.forbidden(child(path, "x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))  # fmt: skip
    return errs


def _type_must_be(s: Schema, path: str, detail: str) -> FieldError:
    type_ = sstr(s, "type")
    return e.required(child(path, "type"), detail) if not type_ else e.invalid(child(path, "type"), type_, detail)


def _extension_errors(s: Schema, path: str, opts: SchemaOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    type_ = sstr(s, "type")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(e.invalid(child(path, "x-kubernetes-preserve-unknown-fields"), False, "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and type_ != "object":
        errs.append(_type_must_be(s, path, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(e.not_supported(child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]))

    list_type = s.get("x-kubernetes-list-type")
    items = items_schema(s)
    set_must_be_atomic = "must be atomic as item of a list with x-kubernetes-list-type=set"
    if list_type is not None and type_ != "array":
        errs.append(_type_must_be(s, path, "must be array if x-kubernetes-list-type is specified"))
    elif opts.require_atomic_set_type and list_type == "set" and items is not None:
        item_list_type = items.get("x-kubernetes-list-type")
        if sstr(items, "type") == "array" and item_list_type is not None and item_list_type != "atomic":
            errs.append(e.invalid(child(child(path, "items"), "x-kubernetes-list-type"), item_list_type, set_must_be_atomic))  # fmt: skip
        elif sstr(items, "type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # Upstream reports the items' list type here (nil, printed "null", for an object).
            shown = item_list_type if item_list_type is not None else "null"
            errs.append(e.invalid(child(child(path, "items"), "x-kubernetes-map-type"), shown, set_must_be_atomic))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(e.not_supported(child(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]))

    map_keys = slist(s, "x-kubernetes-list-map-keys")
    if map_keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(e.required(child(path, "x-kubernetes-list-type"), detail))
        elif list_type != "map":
            errs.append(e.invalid(child(path, "x-kubernetes-list-type"), list_type, detail))
    if list_type == "map":
        errs.extend(_list_map_errors(s, path, map_keys))
    if opts.require_map_list_keys_map_set:
        errs.extend(map_list_keys_map_set_errors(s, path))
    return errs


def _list_map_errors(s: Schema, path: str, map_keys: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    keys_path = child(path, "x-kubernetes-list-map-keys")
    if not map_keys:
        errs.append(e.required(keys_path, "must not be empty if x-kubernetes-list-type is map"))
    raw_items = s.get("items")
    items = items_schema(s)
    if raw_items is None:
        errs.append(e.required(child(path, "items"), "must have a schema if x-kubernetes-list-type is map"))
    elif items is None:
        errs.append(e.invalid(child(path, "items"), GoValue(go_schema_props_or_array(raw_items)),
                              "must only have a single schema if x-kubernetes-list-type is map"))  # fmt: skip
    elif sstr(items, "type") != "object":
        errs.append(e.invalid(child(child(path, "items"), "type"), sstr(items, "type"),
                              "must be object if parent array's x-kubernetes-list-type is map"))  # fmt: skip
    else:
        shown = GoStrings([str(k) for k in map_keys])
        seen: set[Any] = set()
        item_props = sdict(items, "properties")
        for k in map_keys:
            prop = item_props.get(k) if isinstance(k, str) else None
            if isinstance(prop, dict):
                if sstr(prop, "type") in ("array", "object"):
                    # Upstream shows the items' type ("object") as the value here.
                    errs.append(e.invalid(child(key(child(child(path, "items"), "properties"), k), "type"), "object",
                                          "must be a scalar type if parent array's x-kubernetes-list-type is map"))  # fmt: skip
            else:
                errs.append(e.invalid(keys_path, shown, "entries must all be names of item properties"))
            if k in seen:
                errs.append(e.invalid(keys_path, shown, "must not contain duplicate entries"))
            seen.add(k)
    return errs


def map_list_keys_map_set_errors(s: Schema, path: str) -> list[FieldError]:
    """Items of set and map lists must not be nullable, and map keys must be required or defaulted, and not
    nullable (upstream: validateMapListKeysMapSet)."""
    items = items_schema(s)
    list_type = s.get("x-kubernetes-list-type")
    if items is None or list_type not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    items_path = child(path, "items")
    if strue(items, "nullable"):
        errs.append(e.forbidden(child(items_path, "nullable"), f"cannot be nullable when x-kubernetes-list-type is {list_type}"))  # fmt: skip
    if list_type == "map":
        required = set(slist(items, "required"))
        props = sdict(items, "properties")
        for k in slist(s, "x-kubernetes-list-map-keys"):
            prop = props.get(k) if isinstance(k, str) else None
            if not isinstance(prop, dict):
                continue  # reported as not a property already
            prop_path = key(child(items_path, "properties"), k)
            if k not in required and prop.get("default") is None:
                errs.append(e.required(child(prop_path, "default"),
                                       "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))  # fmt: skip
            if strue(prop, "nullable"):
                errs.append(e.forbidden(child(prop_path, "nullable"),
                                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))  # fmt: skip
    return errs


def _rule_errors(s: Schema, rules: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rule_path = index(child(path, "x-kubernetes-validations"), i)
        text, message = sstr(rule, "rule"), sstr(rule, "message")
        message_expression, field_path = sstr(rule, "messageExpression"), sstr(rule, "fieldPath")
        trimmed_rule, trimmed_message = text.strip(), message.strip()
        if not trimmed_rule:
            errs.append(e.required(child(rule_path, "rule"), "rule is not specified"))
        elif message and not trimmed_message:
            errs.append(e.invalid(child(rule_path, "message"), message, "message must be non-empty if specified"))
        elif _NEWLINES.search(trimmed_message):
            errs.append(e.invalid(child(rule_path, "message"), message, "message must not contain line breaks"))
        elif _NEWLINES.search(trimmed_rule) and not trimmed_message:
            errs.append(e.required(child(rule_path, "message"), "message must be specified if rule contains line breaks"))  # fmt: skip
        if message_expression and not message_expression.strip():
            errs.append(e.required(child(rule_path, "messageExpression"), "messageExpression must be non-empty if specified"))  # fmt: skip
        reason = rule.get("reason")
        if reason is not None and reason not in SUPPORTED_REASONS:
            errs.append(e.not_supported(child(rule_path, "reason"), reason, SUPPORTED_REASONS))
        if field_path and not field_path.strip():
            errs.append(e.invalid(child(rule_path, "fieldPath"), field_path, "fieldPath must be non-empty if specified"))  # fmt: skip
        if _NEWLINES.search(field_path):
            errs.append(e.invalid(child(rule_path, "fieldPath"), field_path, "fieldPath must not contain line breaks"))
        if field_path and not _path_valid(s, field_path):
            errs.append(e.invalid(child(rule_path, "fieldPath"), field_path, "fieldPath must be a valid path"))
    return errs


def _path_valid(s: Schema, field_path: str) -> bool:
    # A schema that does not convert is reported elsewhere; its paths get the benefit of the doubt.
    if new_structural_error(s) is not None:
        return True
    try:
        valid_field_path(field_path, s)
    except FieldPathError:
        return False
    return True


# -- what an existing CRD's schemas already have (for update-time ratcheting) -----------------------


def has_invalid_types(s: Schema | None) -> bool:
    return schema_has(s, lambda n: bool(sstr(n, "type")) and sstr(n, "type") not in OPENAPI_V3_TYPES)


def has_defaults(s: Schema | None) -> bool:
    return schema_has(s, lambda n: n.get("default") is not None)


def has_non_atomic_set_type(s: Schema | None) -> bool:
    def pred(n: Schema) -> bool:
        items = items_schema(n)
        if n.get("x-kubernetes-list-type") != "set" or items is None:
            return False
        if sstr(items, "type") == "array":
            return items.get("x-kubernetes-list-type") not in (None, "atomic")
        if sstr(items, "type") == "object":
            return items.get("x-kubernetes-map-type") != "atomic"
        return False

    return schema_has(s, pred)


def has_invalid_map_list_keys_map_set(s: Schema | None) -> bool:
    return schema_has(s, lambda n: bool(map_list_keys_map_set_errors(n, "")))


def has_kubernetes_extensions(s: Schema | None) -> bool:
    return schema_has(
        s,
        lambda n: (
            strue(n, "x-kubernetes-embedded-resource")
            or n.get("x-kubernetes-preserve-unknown-fields") is not None
            or strue(n, "x-kubernetes-int-or-string")
            or bool(slist(n, "x-kubernetes-list-map-keys"))
            or n.get("x-kubernetes-list-type") is not None
            or bool(slist(n, "x-kubernetes-validations"))
        ),
    )
