"""Validation of custom resources against their CRD's openAPIV3Schema, with upstream's field paths and
messages: the OpenAPI value checks (kube-openapi pkg/validation/validate and its error texts), list-type and
embedded-resource checks, and v1.32's ratcheting of unchanged values on update (upstream:
apiextensions-apiserver pkg/apiserver/validation/{validation.go,ratcheting.go} and
pkg/registry/customresource/strategy.go).

A SchemaValidator compiles its schema once into `_Node`s (types resolved, regexes compiled, formats looked
up); the per-object walk then touches only the checks a node has.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

from ...api import errors as e
from ...api.errors import FieldError, go_quote
from . import formats
from .fastcheck import compile_predicate
from .goregexp import go_regexp_error
from .listtype import validate_lists
from .objectmeta import validate_embedded
from .pruning import Structural
from .ratcheting import Correlation
from .values import deep_equal, go_float, go_int64, go_json, shown

# kube-openapi's error codes, each mapped to a different kind of field error.
_COMPOSITE = 422
_INVALID_TYPE, _REQUIRED, _TOO_LONG, _TOO_SHORT, _PATTERN, _ENUM, _MULTIPLE_OF, _MAX, _MIN, _UNIQUE = range(600, 610)
_MAX_ITEMS, _MIN_ITEMS = 610, 611
_TOO_FEW_PROPS, _TOO_MANY_PROPS, _UNALLOWED_PROP, _MULTIPLE_OF_MUST_BE_POSITIVE = 613, 614, 615, 617

# One raw error: (code, kube-openapi path, message, value, limit).
_Err = tuple[int, str, str, Any, Any]

_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}
_GO_FORMAT = {int: "int64", float: "float64"}
_MAX_JSON_INT = float((1 << 53) - 1)
_SAMPLES = ("", True, 0, [], {})


def is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger: a float that is an integer, within a relative 1e-9 when positive."""
    if f != f or not -_MAX_JSON_INT <= f <= _MAX_JSON_INT:
        return False
    g = float(int(f))
    if f == g:
        return True
    if f < 0 or g == 0:
        return False
    return (f - g) / (f + g) < 1e-9


def _as_int(x: Any) -> int | None:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) and x == x and abs(x) < 2**63 else None


def _as_float(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
                  "space": r"\t\n\v\f\r ", "xdigit": "0-9A-Fa-f", "word": "0-9A-Za-z_", "blank": r"\t ",
                  "punct": r"!-/:-@\[-`{-~", "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~"}  # fmt: skip


def _go_regexp(pattern: str) -> str:
    """A Go (RE2) pattern in Python's syntax: `$` and `\\z` end the text, POSIX classes are spelt out."""
    out: list[str] = []
    i, in_class, multiline = 0, False, "(?m" in pattern or "(?sm" in pattern or "(?im" in pattern
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append("\\Z" if pattern[i + 1] == "z" else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i) and (end := pattern.find(":]", i)) > 0:
                name = pattern[i + 2 : end]
                if name in _POSIX_CLASSES:
                    out.append(_POSIX_CLASSES[name])
                    i = end + 2
                    continue
            in_class = c != "]" or out[-1] == "[" or out[-2:] == ["[", "^"]
        elif c == "[":
            in_class = True
        elif c == "$" and not multiline:
            c = r"\Z"
        elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            c, i = "(?P<", i + 2  # Go's (?<name>...) is Python's (?P<name>...)
        out.append(c)
        i += 1
    return "".join(out)


def _compile_pattern(pattern: str) -> tuple[re.Pattern[str] | None, str]:
    """The compiled pattern, or None and Go's `error parsing regexp: ...` text. A pattern RE2 accepts but
    Python's re cannot express is not checked (None and no error)."""
    error = go_regexp_error(pattern)
    if error is not None:
        return None, error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return re.compile(_go_regexp(pattern), re.ASCII), ""
        except (re.error, OverflowError, RecursionError):
            return None, ""


class _Node:
    """One schema node compiled for value validation, in the order kube-openapi applies its validators:
    type, allOf/anyOf/oneOf/not, string, format, number, array, enum, object."""

    __slots__ = (
        "additional", "additional_false", "all_of", "any_of", "enum", "enum_strs", "excl_max", "excl_min",
        "fast_types", "fmt", "fmt_check", "has_comb", "has_num", "has_str", "items", "list_map_keys",
        "list_type", "max_items", "max_len", "max_props", "maximum", "min_items", "min_len", "min_props",
        "minimum", "multiple_of", "not_", "null_type_error", "nullable", "one_of", "pattern", "pattern_error",
        "pattern_src", "props", "required", "trivial", "type_str", "types", "unique",
    )  # fmt: skip

    def __init__(self, schema: Any, strip_formats: bool, int_or_string_type: bool) -> None:
        sch: dict[str, Any] = schema if isinstance(schema, dict) else {}

        def sub(x: Any) -> _Node:
            return _Node(x, strip_formats, int_or_string_type)

        t = sch.get("type")
        self.type_str = t if isinstance(t, str) else ""
        types: tuple[str, ...] = (t,) if isinstance(t, str) and t else ()
        if isinstance(t, list):
            types = tuple(x for x in t if isinstance(x, str))
        if int_or_string_type and sch.get("x-kubernetes-int-or-string") is True:
            types = ("integer", "string")
        self.types = types
        self.nullable = sch.get("nullable") is True
        fmt = sch.get("format")
        fmt = fmt if isinstance(fmt, str) else ""
        if strip_formats and formats.normalize(fmt) not in formats.SUPPORTED:
            fmt = ""
        self.fmt, self.fmt_check = fmt, formats.checker(fmt)
        self.null_type_error = bool(types) and "null" not in types and not self.nullable
        enum = sch.get("enum")
        self.enum = enum if isinstance(enum, list) else None
        self.enum_strs = [x if isinstance(x, str) else go_json(x) for x in self.enum or ()]
        self.maximum, self.minimum = _as_float(sch.get("maximum")), _as_float(sch.get("minimum"))
        self.excl_max, self.excl_min = sch.get("exclusiveMaximum") is True, sch.get("exclusiveMinimum") is True
        self.multiple_of = _as_float(sch.get("multipleOf"))
        self.has_num = self.maximum is not None or self.minimum is not None or self.multiple_of is not None
        self.max_len, self.min_len = _as_int(sch.get("maxLength")), _as_int(sch.get("minLength"))
        pattern = sch.get("pattern")
        self.pattern_src = pattern if isinstance(pattern, str) else ""
        self.pattern, self.pattern_error = _compile_pattern(self.pattern_src) if self.pattern_src else (None, "")
        self.has_str = self.max_len is not None or self.min_len is not None or bool(self.pattern_src)
        items = sch.get("items")
        self.items = sub(items) if isinstance(items, dict) else None
        self.max_items, self.min_items = _as_int(sch.get("maxItems")), _as_int(sch.get("minItems"))
        self.unique = sch.get("uniqueItems") is True
        props = sch.get("properties")
        self.props = {k: sub(x) for k, x in props.items() if isinstance(x, dict)} if isinstance(props, dict) else {}
        required = sch.get("required")
        self.required = tuple(k for k in required if isinstance(k, str)) if isinstance(required, list) else ()
        self.max_props, self.min_props = _as_int(sch.get("maxProperties")), _as_int(sch.get("minProperties"))
        additional = sch.get("additionalProperties")
        self.additional = sub(additional) if isinstance(additional, dict) else None
        self.additional_false = additional is False
        self.all_of, self.any_of, self.one_of = (
            tuple(sub(x) for x in sch.get(k) or () if isinstance(x, dict)) if isinstance(sch.get(k), list) else ()
            for k in ("allOf", "anyOf", "oneOf")
        )
        not_ = sch.get("not")
        self.not_ = sub(not_) if isinstance(not_, dict) else None
        self.has_comb = bool(self.all_of or self.any_of or self.one_of or self.not_)
        list_type = sch.get("x-kubernetes-list-type")
        self.list_type = list_type if isinstance(list_type, str) else ""
        keys = sch.get("x-kubernetes-list-map-keys")
        self.list_map_keys = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        self._derive_fast_paths()

    def _derive_fast_paths(self) -> None:
        # fast_types: value types whose type check passes whatever the value (a float passes "integer" only
        # when it is integral, so it needs the full check); trivial: value types this node has nothing to
        # check on at all, which the walk then skips without a call.
        checks_type = bool(self.types or self.fmt)
        fast = {type(x) for x in _SAMPLES if not checks_type or self._type_error(x, type(x), "") is None}
        if not checks_type or "number" in self.types:
            fast.add(float)
        self.fast_types = frozenset(fast)
        trivial = set()
        if self.enum is None and not self.has_comb:
            for t in fast:
                if t is str and (self.has_str or self.fmt_check is not None):
                    continue
                if t in (int, float) and self.has_num:
                    continue
                if t is list and (
                    self.items or self.max_items is not None or self.min_items is not None or self.unique
                ):
                    continue
                if t is dict and (
                    self.props or self.required or self.additional or self.additional_false
                    or self.max_props is not None or self.min_props is not None
                ):  # fmt: skip
                    continue
                trivial.add(t)
            if not self.null_type_error:
                trivial.add(type(None))
        self.trivial = frozenset(trivial)

    # --- the checks, each appending kube-openapi errors ------------------------------------------------

    def _type_error(self, data: Any, t: type, path: str) -> _Err | None:
        types, fmt = self.types, self.fmt
        sch = _JSON_TYPE.get(t, "")
        data_fmt = _GO_FORMAT.get(t, "")
        float_int = sch == "number" and "integer" in types and is_json_integer(data)
        int_float = sch == "integer" and "number" in types
        if t is not str and t is not list and fmt and not (sch in types or data_fmt == fmt or float_int or int_float):
            return (_INVALID_TYPE, path, f"{path} in body must be of type {fmt}: {go_quote(data_fmt)}", data_fmt, None)
        if fmt and (t is str or t is list) and not ("number" in types or "integer" in types):
            return None
        if not (sch in types or float_int or int_float):
            joined = ",".join(types)
            return (_INVALID_TYPE, path, f"{path} in body must be of type {joined}: {go_quote(sch)}", sch, None)
        return None

    def check(self, data: Any, path: str, errs: list[_Err], corr: Correlation | None) -> None:
        """Validate data at kube-openapi path `path`; with corr, errors of a value unchanged from its
        correlated old value are dropped (ratcheting)."""
        start = len(errs)
        if data is None:
            if self.null_type_error:
                joined = ",".join(self.types)
                errs.append((_INVALID_TYPE, path, f'{path} in body must be of type {joined}: "null"', "null", None))
            if self.enum is not None:
                errs.append(self._enum_error(None, path))
        else:
            t = type(data)
            if t not in self.fast_types:
                err = self._type_error(data, t, path)
                if err is not None:
                    errs.append(err)
            if self.has_comb:
                self._check_comb(data, path, errs)
            if t is str:
                if self.has_str:
                    self._check_str(data, path, errs)
                if self.fmt_check is not None and not self.fmt_check(data):
                    errs.append((_INVALID_TYPE, path, f"{path} in body must be of type {self.fmt}: {go_quote(data)}", data, None))  # fmt: skip
            elif t is int or t is float:
                if self.has_num:
                    self._check_num(data, path, errs)
            elif t is list:
                self._check_list(data, path, errs, corr)
            if self.enum is not None and not self._in_enum(data):
                errs.append(self._enum_error(data, path))
            if t is dict:
                self._check_object(data, path, errs, corr)
        if corr is not None and len(errs) > start and corr.unchanged():
            del errs[start:]

    def _check_str(self, data: str, path: str, errs: list[_Err]) -> None:
        # like kube-openapi, only the first failing string check is reported
        n = len(data)
        if self.max_len is not None and n > self.max_len:
            errs.append((_TOO_LONG, path, f"{path} in body should be at most {self.max_len} chars long", data, self.max_len))  # fmt: skip
        elif self.min_len is not None and n < self.min_len:
            errs.append((_TOO_SHORT, path, f"{path} in body should be at least {self.min_len} chars long", data, None))  # fmt: skip
        elif self.pattern_src:
            if self.pattern_error:
                detail = f"{self.pattern_src}, but pattern is invalid: {self.pattern_error}"
                errs.append((_PATTERN, path, f"{path} in body should match '{detail}'", data, None))
            elif self.pattern is not None and self.pattern.search(data) is None:
                errs.append((_PATTERN, path, f"{path} in body should match '{self.pattern_src}'", data, None))

    def _check_num(self, data: int | float, path: str, errs: list[_Err]) -> None:
        if type(data) is int and go_int64(data) is None:
            data = float(data) if abs(data) < 1e308 else float("inf") * (1 if data > 0 else -1)  # a JSON float64
        native_int = type(data) is int
        m = self.multiple_of
        if m is not None:
            if native_int:
                factor: int | float | None = go_int64(m)
                if factor is None or factor <= 0:
                    msg = (
                        f"factor MultipleOf declared for {path} must be positive: {factor if factor is not None else 0}"
                    )
                    errs.append((_MULTIPLE_OF_MUST_BE_POSITIVE, path, msg, factor or 0, None))
                elif data % factor:
                    errs.append((_MULTIPLE_OF, path, f"{path} in body should be a multiple of {factor}", data, None))
            elif m <= 0:
                errs.append((_MULTIPLE_OF_MUST_BE_POSITIVE, path, f"factor MultipleOf declared for {path} must be positive: {go_float(m)}", m, None))  # fmt: skip
            else:
                mult = 1 / m * data if m < 1 else data / m
                if not is_json_integer(mult):
                    errs.append((_MULTIPLE_OF, path, f"{path} in body should be a multiple of {go_float(m)}", data, None))  # fmt: skip
        for bound, exclusive, code, word in (
            (self.minimum, self.excl_min, _MIN, "greater"),
            (self.maximum, self.excl_max, _MAX, "less"),
        ):
            if bound is None:
                continue
            limit: int | float | None = go_int64(bound) if native_int else bound
            if limit is None:
                limit = bound
            over = data > limit if code == _MAX else data < limit
            if over or (exclusive and data == limit):
                shown_limit = str(limit) if type(limit) is int else go_float(limit)
                op = f"{word} than" if exclusive else f"{word} than or equal to"
                errs.append((code, path, f"{path} in body should be {op} {shown_limit}", data, None))

    def _check_list(self, data: list[Any], path: str, errs: list[_Err], corr: Correlation | None) -> None:
        items = self.items
        if items is not None:
            trivial = items.trivial
            for i, v in enumerate(data):
                if type(v) not in trivial:
                    items.check(v, f"{path}[{i}]", errs, corr.index(i) if corr is not None else None)
        n = len(data)
        if self.min_items is not None and n < self.min_items:
            errs.append((_MIN_ITEMS, path, f"{path} in body should have at least {self.min_items} items", n, None))
        if self.max_items is not None and n > self.max_items:
            errs.append((_MAX_ITEMS, path, f"{path} in body should have at most {self.max_items} items", n, self.max_items))  # fmt: skip
        if self.unique and any(deep_equal(data[i], data[j]) for j in range(n) for i in range(j)):
            errs.append((_UNIQUE, path, f"{path} in body shouldn't contain duplicates", None, None))

    def _enum_error(self, data: Any, path: str) -> _Err:
        # the message is kube-openapi's; only its identity matters (field errors list the values instead)
        return (_ENUM, path, f"{path} in body should be one of {self.enum_strs}", data, self.enum_strs)

    def _in_enum(self, data: Any) -> bool:
        # kube-openapi converts the value to each enum member's Go type before comparing (so 1.5 matches 1)
        t = type(data)
        for x in self.enum or ():
            tx = type(x)
            if x is None:
                continue
            if tx is t:
                if deep_equal(data, x):
                    return True
            elif tx is int and t is float:
                if go_int64(data) == x:
                    return True
            elif tx is float and t is int:
                if float(data) == x:
                    return True
            elif tx is str and t is int:
                if (chr(data) if 0 <= data <= 0x10FFFF and not 0xD800 <= data <= 0xDFFF else "\ufffd") == x:
                    return True
        return False

    def _check_object(self, data: dict[str, Any], path: str, errs: list[_Err], corr: Correlation | None) -> None:
        n = len(data)
        if self.min_props is not None and n < self.min_props:
            errs.append((_TOO_FEW_PROPS, path, f"{path} in body should have at least {self.min_props} properties", n, None))  # fmt: skip
        if self.max_props is not None and n > self.max_props:
            errs.append((_TOO_MANY_PROPS, path, f"{path} in body should have at most {self.max_props} properties", n, self.max_props))  # fmt: skip
        props, additional = self.props, self.additional
        for k, v in data.items():
            p = props.get(k)
            if p is None:
                if additional is not None:
                    if type(v) not in additional.trivial:
                        additional.check(v, f"{path}.{k}", errs, _child(corr, k, path))
                elif self.additional_false:
                    errs.append((_UNALLOWED_PROP, path, f"{path}.{k} in body is a forbidden property", k, None))
            elif type(v) not in p.trivial:
                p.check(v, f"{path}.{k}" if path else k, errs, _child(corr, k, path))
        for k in self.required:
            if k not in data:
                errs.append((_REQUIRED, f"{path}.{k}", f"{path}.{k} in body is required", None, None))

    def _check_comb(self, data: Any, path: str, errs: list[_Err]) -> None:
        # The branches validate the same value without ratcheting, as in upstream.
        if self.any_of:
            failed: list[tuple[_Node, list[_Err]]] = []
            for branch in self.any_of:
                found: list[_Err] = []
                branch.check(data, path, found, None)
                if not found:
                    break
                failed.append((branch, found))
            else:
                errs.append((_COMPOSITE, path, f"{go_quote(path)} must validate at least one schema (anyOf)", None, None))  # fmt: skip
                errs += _best(failed, data)
        if self.one_of:
            valid, failed = 0, []
            for branch in self.one_of:
                found = []
                branch.check(data, path, found, None)
                if not found:
                    valid += 1
                elif not valid:
                    failed.append((branch, found))
            if valid != 1:
                detail = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                errs.append((_COMPOSITE, path, f"{go_quote(path)} must validate one and only one schema (oneOf). {detail}", None, None))  # fmt: skip
                if valid == 0:
                    errs += _best(failed, data)
        if self.all_of:
            valid = 0
            for branch in self.all_of:
                found = []
                branch.check(data, path, found, None)
                valid += not found
                errs += found
            if valid != len(self.all_of):
                detail = ". None validated" if valid == 0 else ""
                errs.append((_COMPOSITE, path, f"{go_quote(path)} must validate all the schemas (allOf){detail}", None, None))  # fmt: skip
        if self.not_ is not None:
            found = []
            self.not_.check(data, path, found, None)
            if not found:
                errs.append((_COMPOSITE, path, f"{go_quote(path)} must not validate the schema (not)", None, None))

    def matches(self, data: Any) -> int:
        """kube-openapi's MatchCount for data: how many checks ran and passed, which picks the branch whose
        errors an anyOf or oneOf reports."""
        if data is None:
            return 0 if self.null_type_error else 1
        t = type(data)
        n = 3  # the allOf/anyOf/oneOf/not validator (twice), and the whole node
        if self.types or self.fmt:
            n += 2 if t in self.fast_types or self._type_error(data, t, "") is None else 1
        for branches, is_any in ((self.any_of, True), (self.one_of, False)):
            passing = [b for b in branches if _passes(b, data)]
            if (is_any and passing) or (not is_any and len(passing) == 1):
                n += passing[0].matches(data)
            elif not passing and branches:
                n += max(b.matches(data) for b in branches)
        n += sum(b.matches(data) for b in self.all_of)
        if t is str:
            n += 1 + (self.fmt_check is not None)
        elif t is int or t is float:
            n += 2
        elif t is list:
            n += 2 + (sum(self.items.matches(v) for v in data) if self.items is not None else 0)
        n += 1  # enum
        if t is dict:
            n += 1
            for k, v in data.items():
                p = self.props.get(k, self.additional)
                if p is not None:
                    n += p.matches(v)
        return n


def _child(corr: Correlation | None, k: str, path: str) -> Correlation | None:
    if corr is None or (not path and k in ("kind", "apiVersion")):
        return None  # upstream does not ratchet these at the root: both sides are converted alike
    return corr.key(k)


def _passes(node: _Node, data: Any) -> bool:
    found: list[_Err] = []
    node.check(data, "", found, None)
    return not found


def _best(failed: list[tuple[_Node, list[_Err]]], data: Any) -> list[_Err]:
    """The errors of the failed branch with the most passing checks (the first such)."""
    if len(failed) == 1:
        return failed[0][1]
    best, best_count = failed[0][1], -1
    for branch, found in failed:
        count = branch.matches(data)
        if count > best_count:
            best, best_count = found, count
    return best


def _field(base: str, name: str) -> str:
    name = name[1:] if name.startswith(".") else name
    if not name:
        return base or "<nil>"  # upstream's nil *field.Path prints as <nil>
    return f"{base}.{name}" if base else name


def _field_errors(raw: list[_Err], base: str) -> list[FieldError]:
    """kube-openapi errors as upstream's kubeOpenAPIResultToFieldErrors turns them into field errors."""
    out: list[FieldError] = []
    seen: set[str] = set()
    for code, name, msg, value, limit in raw:
        if msg in seen:
            continue
        seen.add(msg)
        if code == _COMPOSITE:
            out.append(e.invalid(base or "<nil>", "", msg))
            continue
        path = _field(base, name)
        if code == _REQUIRED:
            out.append(e.required(path))
        elif code == _ENUM:
            out.append(e.not_supported(path, shown(value), limit))
        elif code == _TOO_LONG:
            out.append(e.too_long(path, limit))
        elif code in (_MAX_ITEMS, _TOO_MANY_PROPS):
            out.append(e.too_many(path, value, limit))
        elif code == _INVALID_TYPE:
            out.append(e.type_invalid(path, shown(value if value is not None else ""), msg))
        else:
            out.append(e.invalid(path, shown(value if value is not None else ""), msg))
    return out


class SchemaValidator:
    """Validates custom resources against one CRD version's openAPIV3Schema; build it once per schema."""

    def __init__(self, schema: dict[str, Any], *, _for_defaults: bool = False) -> None:
        # Upstream validates requests with unsupported formats stripped and int-or-string typed, but checks
        # a schema's defaults against the structural schema as it is.
        self.schema = schema
        self._root = _Node(schema, not _for_defaults, not _for_defaults)
        self._structural = Structural.of(schema)
        self._passes: Callable[[Any], bool] | None = None  # fastcheck's predicate, generated on first use

    def _valid(self, obj: Any) -> bool:
        """Whether obj certainly has no schema or list-type errors (fastcheck); False: the full walk decides."""
        passes = self._passes
        if passes is None:
            passes = self._passes = compile_predicate(self._root)
        try:
            return passes(obj)
        except (ValueError, TypeError, RecursionError):  # (a value JSON cannot write, in a set): the walk's
            return False

    def value_errors(self, value: Any, base: str = "", old: Any = None, *, ratchet: bool = False) -> list[FieldError]:
        """Only the OpenAPI checks of value, errors rendered under the field path `base`."""
        raw: list[_Err] = []
        self._root.check(value, "", raw, Correlation(old, value, self._root) if ratchet else None)
        return _field_errors(raw, base) if raw else []

    def validate(self, obj: Any) -> list[FieldError]:
        """The errors of a new custom resource: schema, embedded resources, set/map list uniqueness."""
        if self._valid(obj):
            return validate_embedded("", obj, self._structural, False) if self._structural.embedded_below else []
        errs = self.value_errors(obj)
        errs += validate_embedded("", obj, self._structural, False)
        errs += validate_lists(obj, self._structural)
        return errs

    def validate_update(self, new: Any, old: Any) -> list[FieldError]:
        """As validate, but schema errors of values unchanged from the old object are dropped, and list
        uniqueness is only enforced when the old object met it."""
        if self._valid(new):  # nothing to ratchet, and its lists are sound whatever the old ones were
            return validate_embedded("", new, self._structural, False) if self._structural.embedded_below else []
        errs = self.value_errors(new, old=old, ratchet=True)
        errs += validate_embedded("", new, self._structural, False)
        if not validate_lists(old, self._structural):
            errs += validate_lists(new, self._structural)
        return errs
