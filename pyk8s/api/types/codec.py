"""The typed round trip: a JSON value read into upstream's Go types and written back, as kube-apiserver does
with every built-in object it decodes (json.Unmarshal into the Go struct, later json.Marshal).

`Codec.decode` takes a body as a client sent it and returns what upstream would store and answer with:

- values are checked against their Go types; a mismatch is upstream's decode error (`json: cannot unmarshal
  string into Go struct field Pod.spec of type v1.PodSpec`), raised as `DecodeError`;
- fields the types do not have are dropped at every depth (and reported, for `fieldValidation`);
- `null` means what it means to Go: a nil pointer, slice or map, otherwise no value at all;
- fields Go always writes (no `omitempty`, or a struct) are present with their zero value, and empty values in
  `omitempty` fields are left out, while a pointer keeps an explicit zero (`spec.replicas: 0` stays);
- `metav1.Time`/`MicroTime` are written in UTC (`…Z`, seconds or microseconds), quantities in upstream's
  form, IntOrString as the int or string it is, `[]byte` as canonical base64, a float64 that holds an integer
  as that integer (`1.0` -> `1`, as Go writes it);
- the types of a CustomResourceDefinition's schema that read and write themselves (apiextensions/v1 `JSON`,
  `JSONSchemaPropsOrArray`, `JSONSchemaPropsOrBool`, `JSONSchemaPropsOrStringArray`) take the shapes their
  UnmarshalJSON takes, with its errors, and are written as their MarshalJSON writes them.

Objects stay plain dicts (DESIGN rule 2); the types are compiled once per Go type from the generated table
(`v1_32.json`) into small decoder objects, so a decode is one walk over the value.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .. import gotime
from ..content_memo import ContentMemo
from ..quantity import QuantityError, parse_quantity
from . import type_decl

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "int": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "uint": (0, 2**64 - 1),
}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
TIME, MICRO_TIME, DURATION, FIELDS_V1 = _META + "Time", _META + "MicroTime", _META + "Duration", _META + "FieldsV1"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"
_APIEXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
JSON = _APIEXTENSIONS + "JSON"
JSON_SCHEMA_PROPS = _APIEXTENSIONS + "JSONSchemaProps"
SCHEMA_OR_ARRAY = _APIEXTENSIONS + "JSONSchemaPropsOrArray"
SCHEMA_OR_BOOL = _APIEXTENSIONS + "JSONSchemaPropsOrBool"
SCHEMA_OR_STRING_ARRAY = _APIEXTENSIONS + "JSONSchemaPropsOrStringArray"


class DecodeError(ValueError):
    """A value Go's decoder rejects. `str()` is upstream's message; type mismatches carry Go's context (the
    innermost struct and the path of field names), filled in as the error travels up."""

    def __init__(self, value: str = "", go_type: str = "", message: str = "") -> None:
        super().__init__(message or value)
        self.value = value  # "string", "number", "number 1.5", "object", "array", "bool"
        self.go_type = go_type
        self.message = message  # set for errors that are not type mismatches (an Unmarshaler's own)
        self.struct = ""
        self.fields: list[str] = []

    def __str__(self) -> str:
        if self.message:
            return self.message
        if self.struct or self.fields:
            return (
                f"json: cannot unmarshal {self.value} into Go struct field "
                f"{self.struct}.{'.'.join(self.fields)} of type {self.go_type}"
            )
        return f"json: cannot unmarshal {self.value} into Go value of type {self.go_type}"


def json_kind(v: Any) -> str:
    """How Go's decoder names a JSON value in its errors."""
    if isinstance(v, str):
        return "string"
    if v is True or v is False:
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null" if v is None else type(v).__name__


def number_literal(v: int | float) -> str:
    """A number as the JSON text that carried it (Go quotes the literal in `number 1.5`)."""
    return str(v) if isinstance(v, int) else repr(v)


def go_type_name(expr: str) -> str:
    """A type as Go's reflect prints it: `[]io.k8s.api.core.v1.Container` -> `[]v1.Container`."""
    return re.sub(
        r"[\w.-]+", lambda m: ".".join(m.group(0).rsplit(".", 2)[-2:]) if "." in m.group(0) else m.group(0), expr
    )


Unknown = list[list[str]]  # unknown field paths, each a list of segments built from the leaf up


class Decoder:
    """One Go type. `decode(v, unknown)` reads a non-null JSON value; `zero()` is what Go writes for the type's
    zero value; `nilable` types (pointers, slices, maps, interfaces) take JSON null as nil."""

    go_name = ""
    nilable = False
    struct_like = False  # never left out by omitempty (Go treats no struct as empty)
    fast: type | None = None  # a Python type whose values this decoder returns unchanged

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        raise NotImplementedError

    def zero(self) -> Any:
        return None

    def mismatch(self, v: Any) -> DecodeError:
        return DecodeError(json_kind(v), self.go_name)


class String(Decoder):
    fast = str

    def __init__(self, go_name: str) -> None:
        self.go_name = go_name

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is str:
            return v
        raise self.mismatch(v)

    def zero(self) -> Any:
        return ""


class Bool(Decoder):
    fast = bool

    def __init__(self, go_name: str) -> None:
        self.go_name = go_name

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if v is True or v is False:
            return v
        raise self.mismatch(v)

    def zero(self) -> Any:
        return False


class Int(Decoder):
    def __init__(self, go_name: str, lo: int, hi: int) -> None:
        self.go_name, self.lo, self.hi = go_name, lo, hi

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is int:
            if self.lo <= v <= self.hi:
                return v
            raise DecodeError(f"number {v}", self.go_name)
        if type(v) is float:
            # Go parses the literal as an integer: `1.0` and `1e3` are not integers to it.
            raise DecodeError(f"number {number_literal(v)}", self.go_name)
        raise self.mismatch(v)

    def zero(self) -> Any:
        return 0


_EXACT = 2**53  # float64 holds every integer up to this exactly


def go_float(v: int | float) -> int | float:
    """A JSON number as a Go float64 holds it and writes it back: an integer beyond float64's precision rounded, and
    a float that holds an integer as that integer (Go writes float64(1) as `1`, where Python writes `1.0`)."""
    if type(v) is int:
        return v if -_EXACT <= v <= _EXACT else float(v)
    if v.is_integer() and -_EXACT <= v <= _EXACT:  # (never true of inf or nan)
        return int(v)
    return v


class Float(Decoder):
    def __init__(self, go_name: str) -> None:
        self.go_name = go_name

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is int or type(v) is float:
            try:
                return go_float(v)
            except OverflowError:  # past float64's range
                raise DecodeError(f"number {v}", self.go_name) from None
        raise self.mismatch(v)

    def zero(self) -> Any:
        return 0


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _go_base64_error(text: str) -> str:
    """Go's base64.CorruptInputError for `text` (line breaks removed): the offset of the first byte it could not
    use, a character outside the alphabet first, then an incomplete or wrongly padded quantum."""
    for i, c in enumerate(text):
        if c not in _BASE64 and c != "=":
            return f"illegal base64 data at input byte {i}"
    if len(text) % 4:
        return f"illegal base64 data at input byte {len(text) - len(text) % 4}"
    pad = text.find("=")
    return f"illegal base64 data at input byte {pad if pad >= 0 else 0}"


class Bytes(Decoder):
    """`[]byte`: base64 text on the wire (Go's StdEncoding, which skips line breaks)."""

    nilable = True
    go_name = "[]uint8"

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is not str:
            raise self.mismatch(v)
        text = v.replace("\r", "").replace("\n", "") if ("\n" in v or "\r" in v) else v
        try:
            if len(text) % 4:  # Go's StdEncoding wants whole, padded quanta
                raise ValueError
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise DecodeError(message=_go_base64_error(text)) from None
        return base64.b64encode(raw).decode()


class Interface(Decoder):
    """`interface{}` and raw JSON (`runtime.RawExtension`, `FieldsV1`, apiextensions `JSON`): any JSON value, kept
    as it is."""

    nilable = True

    def __init__(self, go_name: str = "interface {}", struct_like: bool = False) -> None:
        self.go_name = go_name
        self.struct_like = struct_like

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        return v


class Time(Decoder):
    struct_like = True

    def __init__(self, micro: bool) -> None:
        self.micro = micro
        self.go_name = "v1.MicroTime" if micro else "v1.Time"

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is not str:
            # The Unmarshaler reads a string first; Go's decoder puts the field's context on that error too.
            raise DecodeError(json_kind(v), "string")
        try:
            return gotime.normalize_micro_time(v) if self.micro else _normal_time(v)
        except gotime.GoTimeError as e:
            raise DecodeError(message=str(e)) from None


@functools.lru_cache(maxsize=4096)
def _normal_time(v: str) -> str:
    # The same few timestamps come back in every write of an object: cheaper than even the parser's fast path.
    return gotime.normalize_time(v)


class Duration(Decoder):
    struct_like = True
    go_name = "v1.Duration"

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        from ..duration import format_go_duration, parse_go_duration

        if type(v) is not str:
            raise DecodeError(json_kind(v), "string")
        try:
            return format_go_duration(parse_go_duration(v))
        except ValueError as e:
            raise DecodeError(message=str(e)) from None

    def zero(self) -> Any:
        return "0s"


class Quantity(Decoder):
    """`resource.Quantity`: a string, or a JSON number read from its literal. (A number in exponent form, `1e9`,
    reaches Python as a float and is read from Python's spelling of it: `1G` where upstream keeps `1e9`.)"""

    struct_like = True
    go_name = "resource.Quantity"

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is str:
            text = v.strip()
        elif type(v) is int or type(v) is float:
            text = number_literal(v)
        elif v is True or v is False:
            text = "true" if v else "false"
        else:
            text = "{" if isinstance(v, dict) else "["  # the raw JSON text: never a quantity
        return _quantity_text(text)

    def zero(self) -> Any:
        return "0"


@functools.lru_cache(maxsize=4096)
def _quantity_text(text: str) -> str:
    try:
        return str(parse_quantity(text))
    except QuantityError as e:
        raise DecodeError(message=str(e)) from None


class IntOrString(Decoder):
    struct_like = True
    go_name = "intstr.IntOrString"

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is str:
            return v
        if type(v) is int and -(2**31) <= v < 2**31:
            return v
        # The Unmarshaler reads an int32; Go's decoder puts the field's context on that error too.
        what = f"number {number_literal(v)}" if type(v) in (int, float) else json_kind(v)
        raise DecodeError(what, "int32")

    def zero(self) -> Any:
        return 0


class Pointer(Decoder):
    nilable = True

    def __init__(self, elem: Decoder) -> None:
        self.elem = elem
        self.go_name = elem.go_name  # Go reports the pointed-to type
        self.fast = elem.fast

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        return self.elem.decode(v, unknown)


def _note_unknown(unknown: Unknown, n: int, segment: str) -> None:
    for path in unknown[n:]:
        path.append(segment)


class _Container(Decoder):
    """A slice or a map: every element read with `elem`, in place; a null element is the element's zero."""

    nilable = True
    container: type = list

    def __init__(self, go_name: str) -> None:
        self.go_name = go_name
        self.elem: Decoder = Decoder()

    def segment(self, key: Any) -> str:
        raise NotImplementedError

    def pairs(self, v: Any) -> Iterable[tuple[Any, Any]]:
        raise NotImplementedError

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is not self.container:  # exactly a list or a dict, as decoded JSON holds
            raise self.mismatch(v)
        target: Any = v  # (the check above narrows `v` to object for mypy)
        elem = self.elem
        fast = elem.fast
        decode = elem.decode
        # (Replacing the value at an existing index or key leaves the container's size as it is while iterated.)
        for k, x in self.pairs(v):
            if type(x) is fast:
                continue
            if x is None:
                target[k] = elem.zero()
                continue
            if unknown is None:
                y = decode(x, None)
            else:
                n = len(unknown)
                y = decode(x, unknown)
                if len(unknown) > n:
                    _note_unknown(unknown, n, self.segment(k))
            if y is not x:
                target[k] = y
        return v


class Slice(_Container):
    def segment(self, key: Any) -> str:
        return f"[{key}]"

    def pairs(self, v: Any) -> Iterable[tuple[Any, Any]]:
        return enumerate(v)


class Map(_Container):
    container = dict

    def segment(self, key: Any) -> str:
        return "." + key

    def pairs(self, v: Any) -> Iterable[tuple[Any, Any]]:
        return v.items()  # type: ignore[no-any-return]


class Field:
    __slots__ = ("decoder", "fast", "nil_on_null", "omit", "omitempty")

    def __init__(self, decoder: Decoder, omitempty: bool) -> None:
        self.decoder = decoder
        self.omitempty = omitempty
        self.fast = decoder.fast
        # What omitempty leaves out: nothing for structs, nil for pointers, zero or empty for the rest.
        self.omit = (
            0 if not omitempty or decoder.struct_like else (2 if isinstance(decoder, Pointer | Interface) else 1)
        )
        self.nil_on_null = decoder.nilable and not omitempty

    def drops(self, value: Any) -> bool:
        """Whether omitempty leaves `value` out."""
        return bool(self.omit) and (not value if self.omit == 1 else value is None)


def _in_field(err: DecodeError, name: str, struct: str) -> DecodeError:
    """A type mismatch from below, with Go's context: the field names from the top, the innermost struct."""
    if not err.message:
        err.fields.insert(0, name)
        err.struct = err.struct or struct
    return err


class Struct(Decoder):
    struct_like = True

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name
        self.go_name = go_type_name(type_name)
        self.struct_name = type_name.rsplit(".", 1)[-1]
        self.fields: dict[str, Field] = {}
        self.always: list[tuple[str, Decoder]] = []  # fields Go writes even when they hold the zero value

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is not dict:
            raise self.mismatch(v)
        fields = self.fields
        drop: list[str] = []
        for k, x in v.items():
            f = fields.get(k)
            if f is None:
                if unknown is not None:
                    unknown.append(["." + k])
                drop.append(k)
                continue
            if type(x) is f.fast:  # a string or bool where one belongs: nothing to convert
                if f.omit == 1 and not x:
                    drop.append(k)
                continue
            if x is None:
                if not f.nil_on_null:
                    drop.append(k)
                continue
            n = len(unknown) if unknown is not None else 0
            try:
                y = f.decoder.decode(x, unknown)
            except DecodeError as e:
                raise _in_field(e, k, self.struct_name) from None
            if unknown is not None and len(unknown) > n:
                _note_unknown(unknown, n, "." + k)
            if f.omit and (not y if f.omit == 1 else y is None):  # f.drops(y), inline: the hottest loop here
                drop.append(k)
            elif y is not x:
                v[k] = y  # same key: the dict does not change size while it is iterated
        return self._finish(v, drop)

    def _finish(self, v: dict[str, Any], drop: list[str]) -> dict[str, Any]:
        for k in drop:
            del v[k]
        for name, dec in self.always:
            if name not in v:
                v[name] = dec.zero()
        return v

    def zero(self) -> Any:
        return {name: dec.zero() for name, dec in self.always}


def _from_unmarshaler(err: DecodeError) -> DecodeError:
    """An error of the json.Unmarshal that an UnmarshalJSON method runs on its part of the input: Go's decoder
    gives a type mismatch the context of the field the method was called for, in place of the one it had
    inside (`JSONSchemaProps.spec.versions.schema.openAPIV3Schema.items of type string`)."""
    if not err.message:
        err.struct, err.fields = "", []
    return err


class _SchemaOr(Decoder):
    """One of apiextensions/v1's JSONSchemaPropsOr* types: a schema object, or a value of another shape. Each is
    read as the type's UnmarshalJSON reads it, with a json.Unmarshal of its own that reports no unknown field
    (they are dropped all the same), and written back as its MarshalJSON writes it."""

    struct_like = True

    def __init__(self, compiler: _Compiler, name: str) -> None:
        self.go_name = go_type_name(name)
        self.schema = compiler.compile(JSON_SCHEMA_PROPS)

    def _schema(self, v: dict[str, Any]) -> Any:
        try:
            return self.schema.decode(v, None)
        except DecodeError as e:
            raise _from_unmarshaler(e) from None

    def _list(self, dec: Decoder, v: list[Any]) -> Any:
        try:
            items = dec.decode(v, None)
        except DecodeError as e:
            raise _from_unmarshaler(e) from None
        return items or None  # an empty list is written as no value at all: null


class SchemaOrArray(_SchemaOr):
    """`JSONSchemaPropsOrArray` (`items`): a schema, or a list of schemas; any other value reads as neither."""

    def __init__(self, compiler: _Compiler) -> None:
        super().__init__(compiler, SCHEMA_OR_ARRAY)
        self.schemas = compiler.compile("[]" + JSON_SCHEMA_PROPS)

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is dict:
            return self._schema(v)
        if type(v) is list:
            return self._list(self.schemas, v)
        return None


class SchemaOrBool(_SchemaOr):
    """`JSONSchemaPropsOrBool` (`additionalProperties`, `additionalItems`): true, false, or a schema."""

    def __init__(self, compiler: _Compiler) -> None:
        super().__init__(compiler, SCHEMA_OR_BOOL)

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if v is True or v is False:
            return v
        if type(v) is dict:
            return self._schema(v)
        raise DecodeError(message="boolean or JSON schema expected")

    def zero(self) -> Any:
        return False  # neither a schema nor allowed


class SchemaOrStringArray(_SchemaOr):
    """`JSONSchemaPropsOrStringArray` (the values of `dependencies`): a schema, or a list of property names; any
    other value reads as neither."""

    def __init__(self, compiler: _Compiler) -> None:
        super().__init__(compiler, SCHEMA_OR_STRING_ARRAY)
        self.strings = compiler.compile("[]string")

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is dict:
            return self._schema(v)
        if type(v) is list:
            return self._list(self.strings, v)
        return None


# Go types whose values are not read field by field, by their table name: a decoder made for the compiler.
_SPECIAL: dict[str, Callable[[_Compiler], Decoder]] = {
    TIME: lambda c: Time(micro=False),
    MICRO_TIME: lambda c: Time(micro=True),
    DURATION: lambda c: Duration(),
    QUANTITY: lambda c: Quantity(),
    INT_OR_STRING: lambda c: IntOrString(),
    RAW_EXTENSION: lambda c: Interface("runtime.RawExtension", struct_like=True),
    FIELDS_V1: lambda c: Interface("v1.FieldsV1", struct_like=True),
    JSON: lambda c: Interface("v1.JSON", struct_like=True),  # any JSON value, kept as it is
    SCHEMA_OR_ARRAY: SchemaOrArray,
    SCHEMA_OR_BOOL: SchemaOrBool,
    SCHEMA_OR_STRING_ARRAY: SchemaOrStringArray,
}


class _Compiler:
    """Builds decoders from the type table, one per Go type (structs are shared, and may refer to themselves)."""

    def __init__(self, types: dict[str, Any]) -> None:
        self.types = types
        self.structs: dict[str, Struct] = {}

    def compile(self, expr: str, name: str = "") -> Decoder:
        """The decoder of a type expression; `name` is the named type it underlies, for messages."""
        go_name = go_type_name(name or expr)
        if expr.startswith("*"):
            return Pointer(self.compile(expr[1:]))
        if expr == "[]uint8":
            return Bytes()
        if expr.startswith("[]"):
            s = Slice(go_name)
            s.elem = self.compile(expr[2:])
            return s
        if expr.startswith("map["):
            m = Map(go_name)
            m.elem = self.compile(type_decl.split_map(expr)[1])
            return m
        if expr in _SPECIAL:
            return _SPECIAL[expr](self)
        if expr == "string":
            return String(go_name)
        if expr == "bool":
            return Bool(go_name)
        if expr in _INT_RANGES:
            return Int(go_name, *_INT_RANGES[expr])
        if expr in ("float32", "float64"):
            return Float(go_name)
        if expr == "interface{}":
            return Interface()
        decl = self.types.get(expr)
        if decl is None:
            raise KeyError(f"no Go type {expr} in the type table")
        if "underlying" in decl:
            return self.compile(decl["underlying"], expr)
        return self._struct(expr)

    def _struct(self, name: str) -> Struct:
        s = self.structs.get(name)
        if s is not None:
            return s
        s = Struct(name)
        self.structs[name] = s  # before its fields: a type may refer to itself
        for fname, field in self._fields(name):
            s.fields[fname] = field
            if field.decoder.struct_like or not field.omitempty:
                s.always.append((fname, field.decoder))
        return s

    def _fields(self, name: str) -> list[tuple[str, Field]]:
        out: list[tuple[str, Field]] = []
        for f in self.types[name].get("fields", []):
            if f.get("inline"):
                # An embedded struct's fields are the outer struct's fields on the wire.
                out += self._fields(f["type"].lstrip("*"))
                continue
            out.append((f["json"], Field(self.compile(f["type"]), bool(f.get("omitempty")))))
        return out


@functools.cache
def _compiler() -> _Compiler:
    return _Compiler(type_decl.table()["types"])


def decoder_for(type_name: str) -> Decoder:
    """The compiled decoder of a Go type by its table name (`io.k8s.api.core.v1.Pod`)."""
    return _compiler().compile(type_name)


class Codec:
    """The typed round trip of one kind."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name
        self.decoder = _with_memoized_spec(decoder_for(type_name))

    def decode(self, obj: Any, unknown: Unknown | None = None) -> Any:
        """`obj` as upstream would store it, made so in place; DecodeError if Go would not read it. Unknown
        field paths are appended to `unknown` (segment lists, leaf first) when one is given."""
        return self.decoder.decode(obj, unknown)

    def decode_top(
        self, obj: dict[str, Any], parts: tuple[str, ...] | frozenset[str] = (), unknown: Unknown | None = None
    ) -> dict[str, Any]:
        """`obj`'s top level in stored form, in place: fields the type does not have and empty omitempty ones
        are left out, the always-written ones added; of the values, only those named in `parts` are walked.
        For an object assembled from values already in stored form (a conversion's output, a decoded request
        the server has added to, a stored object a patch changed only `parts` of). Fields it does not know, at
        the top level or in `parts`, go to `unknown` as `decode` puts them."""
        struct = self.decoder
        assert isinstance(struct, Struct)
        drop: list[str] = []
        for k, x in obj.items():
            f = struct.fields.get(k)
            if f is None or (x is None and not f.nil_on_null):
                if f is None and unknown is not None:
                    unknown.append(["." + k])
                drop.append(k)
                continue
            if x is not None and k in parts:
                n = len(unknown) if unknown is not None else 0
                try:
                    x = obj[k] = f.decoder.decode(x, unknown)  # same key: no change of size while iterated
                except DecodeError as e:
                    raise _in_field(e, k, struct.struct_name) from None
                if unknown is not None and len(unknown) > n:
                    _note_unknown(unknown, n, "." + k)
            if f.drops(x):
                drop.append(k)
        return struct._finish(obj, drop)


class Memoized(Decoder):
    """A struct decoded once per distinct content and copied from then on. A kind's spec is decoded so: the
    replicas of a workload send the same one over and over, and a copy costs a fraction of a walk."""

    struct_like = True

    def __init__(self, inner: Struct) -> None:
        self.inner = inner
        self.go_name = inner.go_name

    def decode(self, v: Any, unknown: Unknown | None) -> Any:
        if type(v) is not dict:
            raise self.mismatch(v)
        data, paths = _MEMO.get(v, lambda: self._decode(v), extra=self.inner.type_name)
        if unknown is not None:
            unknown += [list(p) for p in paths]
        return orjson.loads(data)

    def _decode(self, v: dict[str, Any]) -> tuple[bytes, tuple[tuple[str, ...], ...]]:
        found: Unknown = []
        typed = self.inner.decode(v, found)
        return orjson.dumps(typed), tuple(tuple(p) for p in found)

    def zero(self) -> Any:
        return self.inner.zero()


_MEMO = ContentMemo()  # specs in stored form with their unknown field paths, by type and content


# Kinds whose spec is new at every write, so a memo of it would never be hit: a Lease's renewTime moves at each
# renewal (5,000 nodes renew 500 times a second).
_UNMEMOISED = frozenset({"Lease"})


def _with_memoized_spec(decoder: Decoder) -> Decoder:
    """A kind's struct whose `spec` (when it has one) is decoded through `Memoized`; the struct itself is a
    copy, so the same types met elsewhere are walked as usual."""
    if not isinstance(decoder, Struct) or "spec" not in decoder.fields:
        return decoder
    if decoder.type_name.rpartition(".")[2] in _UNMEMOISED:
        return decoder
    spec = decoder.fields["spec"]
    if not isinstance(spec.decoder, Struct):
        return decoder
    top = Struct(decoder.type_name)
    top.fields = {**decoder.fields, "spec": Field(Memoized(spec.decoder), spec.omitempty)}
    top.always = [(name, top.fields[name].decoder) for name, _ in decoder.always]
    return top


def unknown_paths(unknown: Unknown) -> list[str]:
    """Unknown field paths as upstream prints them (`spec.containers[0].foo`)."""
    return ["".join(reversed(p)).lstrip(".") for p in unknown]


@functools.cache
def codec_for(group: str, version: str, kind: str) -> Codec | None:
    """The codec of a served kind, or None for kinds the table does not have."""
    name = type_decl.kind_type(group, version, kind)
    return Codec(name) if name else None
