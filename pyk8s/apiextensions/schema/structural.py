"""The structural-schema rules of a CRD's openAPIV3Schema (upstream: apiextensions-apiserver
pkg/apiserver/schema: convert.go's NewStructural refusals, validation.go's ValidateStructural and
complete.go's completeness check), plus `structural_errors`, which combines them with the keyword checks
of pkg/apis/apiextensions/validation the way upstream's validateCustomResourceDefinitionValidation does.

Schemas are the v1 JSON dicts. A key holding JSON null counts as absent, as Go's decoder leaves the field at
its zero value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...api import errors as e
from ...api.errors import FieldError
from ..gofmt import GoValue, go_schema
from .goregexp import go_regexp_error

if TYPE_CHECKING:
    from .keywords import RulesChecker, SchemaOptions

Schema = dict[str, Any]

ROOT, ITEM, FIELD = 0, 1, 2  # the level of a node: the root, array items, or an object's field

# The keys NewStructural refuses, in the order it checks them, with its words.
_UNSUPPORTED = (
    ("id", "id"),
    ("$schema", "schema"),
    ("$ref", "$ref"),
    ("patternProperties", "patternProperties"),
    ("dependencies", "dependencies"),
    ("additionalItems", "additionalItems"),
    ("definitions", "definitions"),
)


# -- paths and accessors ---------------------------------------------------------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def sget(s: Schema, name: str) -> Any:
    return s.get(name)


def sstr(s: Schema, name: str) -> str:
    v = s.get(name)
    return v if isinstance(v, str) else ""


def strue(s: Schema, name: str) -> bool:
    return s.get(name) is True


def sdict(s: Schema, name: str) -> dict[str, Any]:
    """A map-valued keyword (properties, patternProperties, ...): empty when unset."""
    v = s.get(name)
    return v if isinstance(v, dict) else {}


def slist(s: Schema, name: str) -> list[Any]:
    v = s.get(name)
    return v if isinstance(v, list) else []


def items_schema(s: Schema) -> Schema | None:
    """`items` when it is one schema (not the array form)."""
    v = s.get("items")
    return v if isinstance(v, dict) else None


def additional(s: Schema) -> tuple[bool, bool, Schema | None]:
    """additionalProperties as (set, allows, schema): `true`, `false` or a schema (which allows)."""
    v = s.get("additionalProperties")
    if isinstance(v, dict):
        return True, True, v
    if isinstance(v, bool):
        return True, v, None
    return False, False, None


def subschemas(s: Schema) -> Iterator[Schema]:
    """Every schema directly nested in `s`, under any keyword (upstream SchemaHas's walk)."""
    it = s.get("items")
    if isinstance(it, dict):
        yield it
    elif isinstance(it, list):
        yield from (x for x in it if isinstance(x, dict))
    for kw in ("allOf", "anyOf", "oneOf"):
        yield from (x for x in slist(s, kw) if isinstance(x, dict))
    if isinstance(s.get("not"), dict):
        yield s["not"]
    yield from (x for x in sdict(s, "properties").values() if isinstance(x, dict))
    for kw in ("additionalProperties", "additionalItems"):
        if isinstance(s.get(kw), dict):
            yield s[kw]
    for kw in ("patternProperties", "definitions", "dependencies"):
        yield from (x for x in sdict(s, kw).values() if isinstance(x, dict))


def schema_has(s: Schema | None, pred: Callable[[Schema], bool]) -> bool:
    """Whether `pred` holds for `s` or any schema nested in it (upstream: SchemaHas)."""
    if not isinstance(s, dict):
        return False
    stack = [s]
    while stack:
        node = stack.pop()
        if pred(node):
            return True
        stack.extend(subschemas(node))
    return False


# -- NewStructural ---------------------------------------------------------------------------------


def new_structural_error(s: Schema) -> str | None:
    """The error NewStructural returns for `s` (the first it meets in its walk), or None."""
    for name, word in _UNSUPPORTED:
        v = s.get(name)
        if name == "additionalItems":
            bad = v is not None
        elif name in ("patternProperties", "dependencies", "definitions"):
            bad = isinstance(v, dict) and len(v) > 0
        else:
            bad = isinstance(v, str) and len(v) > 0
        if bad:
            return f"OpenAPIV3Schema '{word}' is not supported"
    for kw in ("not", "allOf", "anyOf", "oneOf"):  # the value validations come first
        for nested in [s[kw]] if kw == "not" and isinstance(s.get(kw), dict) else slist(s, kw):
            if isinstance(nested, dict) and (err := new_structural_error(nested)):
                return err
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    it = s.get("items")
    if isinstance(it, list) and it:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    nested_nodes: list[Any] = [it, *sdict(s, "properties").values(), s.get("additionalProperties")]
    for node in nested_nodes:
        if isinstance(node, dict) and (err := new_structural_error(node)):
            return err
    return None


# -- ValidateStructural ----------------------------------------------------------------------------


def validate_structural(s: Schema, path: str) -> list[FieldError]:
    """ValidateStructural: the invariants and completeness of a schema NewStructural accepts, sorted by
    their text as upstream sorts them."""
    errs: list[FieldError] = []
    _invariants(s, ROOT, path, errs)
    _completeness(s, path, errs)
    errs.sort(key=str)
    return errs


def is_structural(s: Schema | None) -> bool:
    """Whether `s` converts and passes ValidateStructural (a missing schema counts as structural)."""
    if not isinstance(s, dict):
        return True
    return new_structural_error(s) is None and not validate_structural(s, "")


def _int_or_string_branch(x: Any, type_: str) -> bool:
    """Whether a junctor branch is exactly `{type: <type_>}` once converted to a nested value validation."""
    return isinstance(x, dict) and sstr(x, "type") == type_ and not _nested_nonzero(x, skip_type=True)


def _is_int_or_string_any_of(any_of: list[Any]) -> bool:
    return (
        len(any_of) == 2 and _int_or_string_branch(any_of[0], "integer") and _int_or_string_branch(any_of[1], "string")
    )


_STRING_KEYS = frozenset(("description", "type", "title", "format", "pattern"))
_BOOL_KEYS = frozenset(("nullable", "exclusiveMaximum", "exclusiveMinimum", "uniqueItems",
                        "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
                        "x-kubernetes-preserve-unknown-fields"))  # fmt: skip
_APPENDED_KEYS = frozenset(("enum", "allOf", "anyOf", "oneOf"))  # converted element by element: [] stays nil
# Pointers and slices copied as they are: set as soon as the key holds anything (even []).
_PRESENT_KEYS = frozenset(("default", "maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems",
                           "multipleOf", "maxProperties", "minProperties", "required", "not", "properties",
                           "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
                           "x-kubernetes-validations"))  # fmt: skip


def _nested_nonzero(x: Schema, *, skip_type: bool = False, structural: bool = False) -> bool:
    """Whether the nested value validation (or, with `structural`, the structural node) NewStructural builds
    from `x` has anything set. Examples, docs and the refused keywords are not kept; unknown keys are
    dropped by the decoder."""
    for k, v in x.items():
        if v is None or (skip_type and k == "type"):
            continue
        if k in _STRING_KEYS:
            nonzero = v != ""
        elif k in _BOOL_KEYS:
            nonzero = v is True
        elif k in _APPENDED_KEYS:
            nonzero = isinstance(v, list) and len(v) > 0
        elif k in _PRESENT_KEYS:
            nonzero = True
        elif k == "items":
            nonzero = isinstance(v, dict)
        elif k == "additionalProperties":
            # A structural node keeps `false` as a StructuralOrBool; a nested one drops it.
            nonzero = structural or v is not False
        else:
            nonzero = False
        if nonzero:
            return True
    return False


def _invariants(s: Schema, lvl: int, path: str, errs: list[FieldError]) -> None:
    type_ = sstr(s, "type")
    items = items_schema(s)
    if type_ == "array" and items is None:
        errs.append(e.required(child(path, "items"), "must be specified"))
    if items is not None:
        _invariants(items, ITEM, child(path, "items"), errs)
    props = {k: v for k, v in sdict(s, "properties").items() if isinstance(v, dict)}
    for name, prop in props.items():
        _invariants(prop, FIELD, key(child(path, "properties"), name), errs)
    has_additional, _, additional_schema = additional(s)
    if has_additional:
        if lvl == ROOT:
            errs.append(e.forbidden(child(path, "additionalProperties"), "must not be used at the root"))
        if additional_schema is not None:
            _invariants(additional_schema, FIELD, child(path, "additionalProperties"), errs)

    int_or_string = strue(s, "x-kubernetes-int-or-string")
    preserve = strue(s, "x-kubernetes-preserve-unknown-fields")
    embedded = strue(s, "x-kubernetes-embedded-resource")
    if int_or_string and preserve:
        errs.append(e.invalid(child(path, "x-kubernetes-preserve-unknown-fields"), True,
                              "must be false if x-kubernetes-int-or-string is true"))  # fmt: skip
    if int_or_string and embedded:
        errs.append(e.invalid(child(path, "x-kubernetes-embedded-resource"), True,
                              "must be false if x-kubernetes-int-or-string is true"))  # fmt: skip

    all_of = slist(s, "allOf")
    skip_any_of = _is_int_or_string_any_of(slist(s, "anyOf"))
    skip_first_all_of = (
        bool(all_of) and isinstance(all_of[0], dict) and _is_int_or_string_any_of(slist(all_of[0], "anyOf"))
    )
    _value_validation(s, skip_any_of, skip_first_all_of, path, errs)

    check_metadata = lvl == ROOT or embedded
    if embedded and type_ != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errs.append(
            e.required(child(path, "type"), detail) if not type_ else e.invalid(child(path, "type"), type_, detail)
        )
    elif not type_ and not int_or_string and not preserve:
        what = ("at the root", "for specified array items", "for specified object fields")[lvl]
        errs.append(e.required(child(path, "type"), f"must not be empty {what}"))
    if embedded and has_additional:
        errs.append(e.forbidden(child(path, "additionalProperties"),
                                "must not be used if x-kubernetes-embedded-resource is set"))  # fmt: skip
    if lvl == ROOT and type_ and type_ != "object":
        errs.append(e.invalid(child(path, "type"), type_, "must be object at the root"))
    if check_metadata:
        for name in ("kind", "apiVersion"):
            if name in props and sstr(props[name], "type") != "string":
                errs.append(e.invalid(child(key(child(path, "properties"), name), "type"), sstr(props[name], "type"),
                                      "must be string"))  # fmt: skip
    if "metadata" in props:
        _metadata_invariants(props["metadata"], check_metadata, lvl, key(child(path, "properties"), "metadata"), errs)
    if embedded and not preserve and not props:
        errs.append(e.required(child(path, "properties"),
                               "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))  # fmt: skip


def _metadata_invariants(s: Schema, check_metadata: bool, lvl: int, path: str, errs: list[FieldError]) -> None:
    if check_metadata and sstr(s, "type") != "object":
        errs.append(e.invalid(child(path, "type"), sstr(s, "type"), "must be object"))
    if lvl != ROOT:
        return
    props = {k for k, v in sdict(s, "properties").items() if isinstance(v, dict)}
    if props and props <= {"name", "generateName"}:
        props = set()
    # Everything but the type, the default and a name/generateName restriction makes metadata "specified".
    rest = {k: v for k, v in s.items() if k not in ("type", "default", "properties")}
    if props or _structural_nonzero(rest):
        errs.append(e.forbidden(path, "must not specify anything other than name and generateName, but metadata is implicitly specified"))  # fmt: skip


def _structural_nonzero(x: Schema) -> bool:
    return _nested_nonzero(x, structural=True)


def _value_validation(s: Schema, skip_any_of: bool, skip_first_all_of: bool, path: str, errs: list[FieldError]) -> None:
    if not skip_any_of:
        for i, x in enumerate(slist(s, "anyOf")):
            if isinstance(x, dict):
                _nested(x, False, False, index(child(path, "anyOf"), i), errs)
    for i, x in enumerate(slist(s, "allOf")):
        if isinstance(x, dict):
            _nested(x, skip_first_all_of and i == 0, False, index(child(path, "allOf"), i), errs)
    for i, x in enumerate(slist(s, "oneOf")):
        if isinstance(x, dict):
            _nested(x, False, False, index(child(path, "oneOf"), i), errs)
    if isinstance(s.get("not"), dict):
        _nested(s["not"], False, False, child(path, "not"), errs)
    pattern = sstr(s, "pattern")
    if pattern and (msg := go_regexp_error(pattern)):
        errs.append(e.invalid(child(path, "pattern"), pattern, f"must be a valid regular expression, but isn't: {msg}"))


_NESTED_FORBIDDEN = (
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(v: Schema, skip_any_of: bool, skip_all_of_any_of: bool, path: str, errs: list[FieldError]) -> None:
    """A schema under allOf/anyOf/oneOf/not: only value validations may be set there."""
    _value_validation(v, skip_any_of, skip_all_of_any_of, path, errs)
    if isinstance(v.get("items"), dict):
        _nested(v["items"], False, False, child(path, "items"), errs)
    for name, prop in sdict(v, "properties").items():
        if isinstance(prop, dict):
            _nested(prop, False, False, key(child(path, "properties"), name), errs)
    if sstr(v, "type"):
        errs.append(e.forbidden(child(path, "type"), "must be empty to be structural"))
    has_additional, allows, additional_schema = additional(v)
    if has_additional and (allows or additional_schema is not None):
        errs.append(e.forbidden(child(path, "additionalProperties"), "must be undefined to be structural"))
    if v.get("default") is not None:
        errs.append(e.forbidden(child(path, "default"), "must be undefined to be structural"))
    for name, detail in _NESTED_FORBIDDEN:
        val = v.get(name)
        if name in ("title", "description"):
            bad = isinstance(val, str) and val != ""
        elif name in ("x-kubernetes-list-map-keys", "x-kubernetes-validations"):
            bad = isinstance(val, list) and len(val) > 0
        elif name in ("x-kubernetes-list-type", "x-kubernetes-map-type"):
            bad = val is not None
        else:
            bad = val is True
        if bad:
            errs.append(e.forbidden(child(path, name), detail))
    if "metadata" in sdict(v, "properties"):
        errs.append(
            e.forbidden(key(child(path, "properties"), "metadata"), "must not be specified in a nested context")
        )


def _completeness(s: Schema, path: str, errs: list[FieldError]) -> None:
    """Every property or items a root-level junctor restricts must exist in the structure itself."""
    _junctors_complete(s, s, path, path, errs)


def _junctors_complete(v: Schema, s: Schema | None, s_path: str, v_path: str, errs: list[FieldError]) -> None:
    if s is None:
        errs.append(e.required(s_path, f"because it is defined in {v_path}"))
        return
    if isinstance(v.get("not"), dict):
        _nested_complete(v["not"], s, s_path, child(v_path, "not"), errs)
    for kw in ("allOf", "anyOf", "oneOf"):
        for i, x in enumerate(slist(v, kw)):
            if isinstance(x, dict):
                _nested_complete(x, s, s_path, index(child(v_path, kw), i), errs)


def _nested_complete(v: Schema, s: Schema | None, s_path: str, v_path: str, errs: list[FieldError]) -> None:
    if s is None:
        errs.append(e.required(s_path, f"because it is defined in {v_path}"))
        return
    _junctors_complete(v, s, s_path, v_path, errs)
    if isinstance(v.get("items"), dict):
        _nested_complete(v["items"], items_schema(s), child(s_path, "items"), child(v_path, "items"), errs)
    s_props = sdict(s, "properties")
    for name, v_prop in sdict(v, "properties").items():
        if not isinstance(v_prop, dict):
            continue
        s_prop = s_props.get(name)
        if not isinstance(s_prop, dict):
            errs.append(e.required(key(child(s_path, "properties"), name),
                                   f"because it is defined in {key(child(v_path, 'properties'), name)}"))  # fmt: skip
        else:
            _nested_complete(v_prop, s_prop, key(child(s_path, "properties"), name),
                             key(child(v_path, "properties"), name), errs)  # fmt: skip


# -- field paths into a schema ---------------------------------------------------------------------


class FieldPathError(ValueError):
    """A JSON path that does not lead anywhere in a schema, with upstream's reason."""


def _tokens(path: str) -> Iterator[str]:
    """Split on '.', '[' and ']' (each its own token); a token starting with a quote runs to the next unescaped
    quote, delimiters included."""
    i, n = 0, len(path)
    while i < n:
        if path[i] == "'":
            j = i + 1
            while j < n and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            yield path[i : j + 1]
            i = j + 1
        elif path[i] in ".[]":
            yield path[i]
            i += 1
        else:
            j = i
            while j < n and path[j] not in ".[]":
                j += 1
            yield path[i:j]
            i = j


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] != "\n":
            ch = _ESCAPES.get(s[i + 1])
            if ch is None:
                raise FieldPathError(f"invalid string literal: invalid escape char {s[i : i + 2]}")
            out.append(ch)
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def valid_field_path(json_path: str, schema: Schema | None, *, allow_array_notation: bool = True) -> tuple[list[tuple[str, bool]], Schema | None]:  # fmt: skip
    """Follow `json_path` (`.a.b`, `.a['b.c']`) through `schema`'s properties and additionalProperties
    (upstream: cel.ValidFieldPath). Returns the steps as (name, is_property) and the schema reached; raises
    FieldPathError with upstream's reason."""
    steps: list[tuple[str, bool]] = []
    node = schema
    tokens = _tokens(json_path)

    def descend(name: str) -> None:
        nonlocal node
        if node is None:
            raise FieldPathError("does not refer to a valid field")
        props = sdict(node, "properties")
        if props:
            prop = props.get(name)
            if not isinstance(prop, dict):
                raise FieldPathError("does not refer to a valid field")
            steps.append((name, True))
            node = prop
        elif additional(node)[0]:
            steps.append((name, False))
            node = additional(node)[2]
        else:
            raise FieldPathError("does not refer to a valid field")

    for tok in tokens:
        if tok == "[":
            if not allow_array_notation:
                raise FieldPathError("array notation is not allowed")
            quoted = next(tokens, None)
            if quoted is None:
                raise FieldPathError("unexpected end of JSON path")
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise FieldPathError(f"expected single quoted string but got {quoted}")
            descend(_unescape(quoted[1:-1]))
            close = next(tokens, None)
            if close is None:
                raise FieldPathError("unexpected end of JSON path")
            if close != "]":
                raise FieldPathError(f"expected ] but got {close}")
        elif tok == ".":
            name = next(tokens, None)
            if name is None:
                raise FieldPathError("unexpected end of JSON path")
            descend(name)
        else:
            raise FieldPathError(f"expected [ or . but got: {tok}")
    return steps, node


def render_field_path(steps: list[tuple[str, bool]]) -> str:
    """The field.Path upstream builds from a followed JSON path: properties as children, map keys as keys."""
    out = ""
    for name, is_property in steps:
        out = child(out, name) if is_property else key(out, name)
    return out


# -- the whole check of one openAPIV3Schema --------------------------------------------------------

# The root keywords a schema may use when the status subresource is on, so that properties[status] alone
# carries the status's validation; upstream names them by its Go field names.
_ROOT_ALLOWED_WITH_STATUS = ("Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                             "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                             "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs",
                             "Example", "XPreserveUnknownFields", "XValidations")  # fmt: skip
# The internal JSONSchemaProps fields in declaration order, with their v1 keys.
_GO_FIELDS = (("ID", "id"), ("Schema", "$schema"), ("Ref", "$ref"), ("Description", "description"),
              ("Type", "type"), ("Nullable", "nullable"), ("Format", "format"), ("Title", "title"),
              ("Default", "default"), ("Maximum", "maximum"), ("ExclusiveMaximum", "exclusiveMaximum"),
              ("Minimum", "minimum"), ("ExclusiveMinimum", "exclusiveMinimum"), ("MaxLength", "maxLength"),
              ("MinLength", "minLength"), ("Pattern", "pattern"), ("MaxItems", "maxItems"), ("MinItems", "minItems"),
              ("UniqueItems", "uniqueItems"), ("MultipleOf", "multipleOf"), ("Enum", "enum"),
              ("MaxProperties", "maxProperties"), ("MinProperties", "minProperties"), ("Required", "required"),
              ("Items", "items"), ("AllOf", "allOf"), ("OneOf", "oneOf"), ("AnyOf", "anyOf"), ("Not", "not"),
              ("Properties", "properties"), ("AdditionalProperties", "additionalProperties"),
              ("PatternProperties", "patternProperties"), ("Dependencies", "dependencies"),
              ("AdditionalItems", "additionalItems"), ("Definitions", "definitions"),
              ("ExternalDocs", "externalDocs"), ("Example", "example"),
              ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields"),
              ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
              ("XIntOrString", "x-kubernetes-int-or-string"), ("XListMapKeys", "x-kubernetes-list-map-keys"),
              ("XListType", "x-kubernetes-list-type"), ("XMapType", "x-kubernetes-map-type"),
              ("XValidations", "x-kubernetes-validations"))  # fmt: skip


def _root_with_status_errors(s: Schema, path: str) -> list[FieldError]:
    for go_name, json_key in _GO_FIELDS:
        v = s.get(json_key)
        if v is None or v is False or v == "":  # Go's zero values
            continue
        if go_name == "Type":
            if v != "object":
                return [e.invalid(child(path, "type"), v, 'only "object" is allowed as the type at the root of the schema if the status subresource is enabled')]  # fmt: skip
            continue
        if go_name not in _ROOT_ALLOWED_WITH_STATUS:
            allowed = "[" + " ".join(_ROOT_ALLOWED_WITH_STATUS) + "]"
            return [e.invalid(path, GoValue(go_schema(s)),
                              f"only {allowed} fields are allowed at the root of the schema if the status subresource is enabled")]  # fmt: skip
    return []


def structural_errors(
    schema: Schema,
    path: str,
    *,
    status_enabled: bool = False,
    options: SchemaOptions | None = None,
    defaults_validator: Callable[[Schema, str], list[FieldError]] | None = None,
    rules_checker: RulesChecker | None = None,
) -> list[FieldError]:
    """Everything upstream checks of one openAPIV3Schema at `path` (`spec.versions[0].schema.openAPIV3Schema`
    or `spec.validation.openAPIV3Schema`), in its order: the root's shape when the status subresource is on,
    a nullable root, the structural invariants (when required), the defaults (through `defaults_validator`,
    only for a structural schema), the keyword checks, and the CEL rules (through `rules_checker`, only when
    all before passed). A schema NewStructural refuses is reported as such only when nothing else is wrong,
    as the keyword checks usually say the same more precisely."""
    from .keywords import SchemaOptions, keyword_errors

    opts = options or SchemaOptions()
    errs = _root_with_status_errors(schema, path) if status_enabled else []
    if schema.get("nullable") is True:
        errs.append(e.forbidden(child(path, "nullable"), "nullable cannot be true at the root"))
    init_errs: list[FieldError] = []
    rules_ok = False
    if opts.require_structural:
        if (msg := new_structural_error(schema)) is not None:
            init_errs.append(e.invalid(path, "", msg))
        elif invariant_errs := validate_structural(schema, path):
            errs += invariant_errs
        elif defaults_validator is not None and (default_errs := defaults_validator(schema, path)):
            errs += default_errs
        else:
            rules_ok = True
    errs += keyword_errors(schema, path, opts, rules_checker if rules_ok else None)
    if not errs:
        errs += init_errs
    return errs
