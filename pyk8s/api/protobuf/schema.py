"""The protobuf schema of every built-in kind, compiled for the codec: upstream's messages (the field numbers and
types in `v1_32.json`, generated from `generated.proto`) joined with the Go type table (`api/types/v1_32.json`),
which says under which JSON key each field lives in the dicts pyk8s keeps objects as (the proto field name is
not always the JSON name: `Webhooks` is `webhooks`), which fields are inlined into their parent's JSON (`Volume`'s
`volumeSource`), and which messages stand for a JSON scalar or list (Time, Quantity, IntOrString, Verbs, …) or
for a value of one of several shapes (a CRD schema's `items`: a schema or a list of them).

A `Message` is a list of `Field`s in field-number order; each field knows its wire tag, JSON key and how its value
converts (`Kind`). The schema is built once per process, lazily, per message as it is first used.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..types.codec import (
    DURATION,
    FIELDS_V1,
    INT_OR_STRING,
    JSON,
    MICRO_TIME,
    QUANTITY,
    RAW_EXTENSION,
    SCHEMA_OR_ARRAY,
    SCHEMA_OR_BOOL,
    SCHEMA_OR_STRING_ARRAY,
    TIME,
)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
QUANTITY_VALUE = "io.k8s.apimachinery.pkg.api.resource.QuantityValue"

# Kinds every group version serves under its own apiVersion (metav1.AddToGroupVersion): a DeleteOptions body
# sent to apps/v1 says `apiVersion: apps/v1`, and its message is meta/v1's.
META_KINDS = {
    k: _META + k
    for k in (
        "Status", "DeleteOptions", "ListOptions", "GetOptions", "CreateOptions", "UpdateOptions", "PatchOptions",
        "WatchEvent", "PartialObjectMetadata", "PartialObjectMetadataList", "APIVersions", "APIGroupList",
        "APIGroup", "APIResourceList",
    )
}  # fmt: skip


class Kind(enum.IntEnum):
    """How a field's JSON value and its wire value convert."""

    STRING = 1  # string  <-> length-delimited UTF-8
    BYTES = 2  # base64 string <-> length-delimited bytes ([]byte)
    BOOL = 3  # bool <-> varint
    INT = 4  # int <-> varint (int32, int64)
    MESSAGE = 5  # object <-> nested message
    TIME = 6  # RFC 3339 string (seconds) <-> Timestamp{seconds}
    MICRO_TIME = 7  # RFC 3339 string with microseconds <-> Timestamp{seconds, nanos}
    DURATION = 8  # Go duration string <-> Duration{duration: nanoseconds}
    QUANTITY = 9  # quantity string <-> Quantity{string}
    INT_OR_STRING = 10  # int or string <-> IntOrString{type, intVal, strVal}
    RAW = 11  # any JSON value <-> {raw bytes: its JSON text} (RawExtension, FieldsV1, apiextensions JSON)
    STRING_LIST = 12  # list of strings <-> {repeated string items} (Verbs, ExtraValue)
    DOUBLE = 13  # number <-> 8 bytes, little-endian IEEE 754 (float64)
    # an object, a list or a bool <-> a message holding it in its field of that shape (see `union_parts`): the
    # JSONSchemaPropsOr* types of a CRD's schema
    UNION = 14


WIRE_VARINT, WIRE_FIXED64, WIRE_LEN = 0, 1, 2
_SCALAR_KINDS = {
    "string": Kind.STRING, "bytes": Kind.BYTES, "bool": Kind.BOOL, "int32": Kind.INT, "int64": Kind.INT,
    "double": Kind.DOUBLE,
}  # fmt: skip
_WIRE = {Kind.BOOL: WIRE_VARINT, Kind.INT: WIRE_VARINT, Kind.DOUBLE: WIRE_FIXED64}
_SPECIAL = {
    TIME: Kind.TIME,
    MICRO_TIME: Kind.MICRO_TIME,
    DURATION: Kind.DURATION,
    QUANTITY: Kind.QUANTITY,
    QUANTITY_VALUE: Kind.QUANTITY,
    INT_OR_STRING: Kind.INT_OR_STRING,
    RAW_EXTENSION: Kind.RAW,
    FIELDS_V1: Kind.RAW,
    JSON: Kind.RAW,
    SCHEMA_OR_ARRAY: Kind.UNION,
    SCHEMA_OR_BOOL: Kind.UNION,
    SCHEMA_OR_STRING_ARRAY: Kind.UNION,
}


@dataclass(eq=False)
class Field:
    number: int
    key: str  # the JSON key; "" for a field inlined into its parent's JSON object
    kind: Kind
    repeated: bool = False
    is_map: bool = False  # map<string, value>: a JSON object; `value` describes its values
    int32: bool = False  # an int32 varint (decoded as a signed 32-bit value)
    message: Message | None = None  # for Kind.MESSAGE, and for Kind.UNION the message that holds the value
    value: Field | None = None  # a map's value (field number 2 of the entry)
    tag: bytes = b""  # the field's key on the wire for its usual wire type

    @property
    def inline(self) -> bool:
        return self.key == ""


@dataclass(eq=False)
class Message:
    name: str
    index: int = -1  # its place in the table the C codec holds (`all_messages`)
    fields: list[Field] = field(default_factory=list)
    by_number: dict[int, Field] = field(default_factory=dict)


@functools.cache
def union_parts(msg: Message) -> tuple[Field | None, Field | None, Field | None]:
    """The fields of a Kind.UNION message that hold an object (its singular message field), a list (its repeated
    field) and a bool (its bool field), each None when it has none. JSONSchemaPropsOrArray is {schema, schemas},
    JSONSchemaPropsOrBool {allows, schema}, JSONSchemaPropsOrStringArray {schema, property}. Upstream's
    MarshalJSON of each gives a non-empty list first, else the object, else the bool (or null without one)."""
    obj = next((f for f in msg.fields if f.kind is Kind.MESSAGE and not f.repeated and not f.is_map), None)
    items = next((f for f in msg.fields if f.repeated), None)
    flag = next((f for f in msg.fields if f.kind is Kind.BOOL and not f.repeated), None)
    return obj, items, flag


def varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


@functools.cache
def _tables() -> tuple[dict[str, list[list[Any]]], dict[str, Any], dict[str, dict[str, str]]]:
    here = Path(__file__).parent
    messages = orjson.loads((here / "v1_32.json").read_bytes())["messages"]
    go = orjson.loads((here.parent / "types" / "v1_32.json").read_bytes())
    return messages, go["types"], go["kinds"]


def _go_fields_by_number(go_types: dict[str, Any], name: str) -> dict[int, dict[str, Any]]:
    """The Go struct's fields by protobuf field number (following type aliases such as core/v1 List)."""
    decl = go_types.get(name)
    seen = 0
    while decl is not None and "underlying" in decl and seen < 4:
        decl, seen = go_types.get(decl["underlying"]), seen + 1
    out: dict[int, dict[str, Any]] = {}
    for f in (decl or {}).get("fields", ()):
        tag_text = f.get("protobuf")
        if tag_text and tag_text != "-":
            out[int(tag_text.split(",")[1])] = f
    return out


def _is_string_list(go_types: dict[str, Any], name: str, fields: list[list[Any]]) -> bool:
    decl = go_types.get(name) or {}
    return str(decl.get("underlying", "")).startswith("[]") and [f[1:] for f in fields] == [
        ["items", "repeated", "string"]
    ]


class _Compiler:
    def __init__(self) -> None:
        self.messages, self.go_types, _ = _tables()
        self.compiled: dict[str, Message] = {}

    def message(self, name: str) -> Message:
        msg = self.compiled.get(name)
        if msg is not None:
            return msg
        if name not in self.messages:
            raise KeyError(f"no protobuf message {name}")
        msg = self.compiled[name] = Message(
            name, len(self.compiled)
        )  # registered first: messages refer to themselves (JSONSchemaProps)
        go_fields = _go_fields_by_number(self.go_types, name)
        for number, proto_name, label, typ in self.messages[name]:
            go_field = go_fields.get(number)
            if go_field is not None and go_field.get("inline"):
                key = ""
            elif go_field is not None:
                key = go_field["json"]
            else:
                key = proto_name
            if label == "map":
                key_type, value_type = typ
                if key_type != "string":
                    raise ValueError(f"{name}.{proto_name}: map keys of type {key_type} are not supported")
                f = Field(number, key, Kind.MESSAGE, is_map=True, value=self._value(2, "", value_type))
                f.tag = tag(number, WIRE_LEN)
            else:
                f = self._value(number, key, typ)
                f.repeated = label == "repeated"
            msg.fields.append(f)
            msg.by_number[number] = f
        return msg

    def _value(self, number: int, key: str, typ: str) -> Field:
        if typ in _SCALAR_KINDS:
            kind = _SCALAR_KINDS[typ]
            f = Field(number, key, kind, int32=typ == "int32")
            f.tag = tag(number, _WIRE.get(kind, WIRE_LEN))
            return f
        if typ not in self.messages:
            raise ValueError(f"field {key or number}: unsupported type {typ}")
        special = _SPECIAL.get(typ)
        if special is None and _is_string_list(self.go_types, typ, self.messages[typ]):
            special = Kind.STRING_LIST
        if special is Kind.UNION:
            return Field(number, key, special, message=self.message(typ), tag=tag(number, WIRE_LEN))
        if special is not None:
            return Field(number, key, special, tag=tag(number, WIRE_LEN))
        return Field(number, key, Kind.MESSAGE, message=self.message(typ), tag=tag(number, WIRE_LEN))


@functools.cache
def _compiler() -> _Compiler:
    return _Compiler()


def message(name: str) -> Message:
    """The compiled message of a type in the table's naming (`io.k8s.api.core.v1.Pod`)."""
    return _compiler().message(name)


@functools.cache
def all_messages() -> list[Message]:
    """Every message compiled, in index order (what the C codec is loaded with)."""
    c = _compiler()
    for name in c.messages:
        c.message(name)
    return sorted(c.compiled.values(), key=lambda m: m.index)


def _field_spec(f: Field) -> tuple[Any, ...]:
    return (
        f.number, f.key or None, int(f.kind), int(f.repeated), int(f.is_map), int(f.int32),
        f.message.index if f.message is not None else -1, f.tag, _field_spec(f.value) if f.value else None,
    )  # fmt: skip


def fast_spec() -> list[list[tuple[Any, ...]]]:
    """The compiled schema as plain tuples, for `_fastpb.load`."""
    return [[_field_spec(f) for f in m.fields] for m in all_messages()]


@functools.cache
def message_name_for(api_version: str, kind: str) -> str | None:
    """The message of an object of this apiVersion and kind, or None when it has no protobuf form."""
    _, _, kinds = _tables()
    name = kinds.get(api_version, {}).get(kind)
    if name is None:
        name = META_KINDS.get(kind)
    if name is None or name not in _tables()[0]:
        return None
    return name
