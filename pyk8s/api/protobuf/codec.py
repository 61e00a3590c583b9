"""Objects to protobuf and back: a dict as pyk8s keeps it (upstream's JSON form) encoded as upstream's message,
and a message decoded into the dict its JSON form would be (upstream: apimachinery's protobuf serializer and the
gogo-generated Marshal/Unmarshal of every type).

Encoding writes what the dict holds, in field-number order: a field absent from the dict is absent from the wire,
which every protobuf reader takes as the zero value, as Go's does. Decoding gives every field present on the wire,
zero values included; `Codec.decode` (api/types) then shapes the dict as Go's JSON encoder would (a non-pointer
zero left out under omitempty, a pointer's zero kept). Times carry seconds only (metav1.Time drops nanoseconds
on the wire), MicroTimes microseconds.

The envelope (`k8s\\x00` + runtime.Unknown{typeMeta, raw}) and the watch frames (a 4-byte big-endian length,
then a WatchEvent whose object holds an enveloped object) are `encode_object`, `decode_object` and
`watch_frame`.
"""

from __future__ import annotations

import base64
import struct
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import orjson

from .. import gotime
from ..duration import format_go_duration, parse_go_duration
from ..quantity import QuantityError, parse_quantity
from ..types.codec import go_float
from .schema import (
    WIRE_FIXED64,
    WIRE_LEN,
    WIRE_VARINT,
    Field,
    Kind,
    Message,
    fast_spec,
    message,
    message_name_for,
    union_parts,
    varint,
)

MAGIC = b"k8s\x00"
_MASK64 = (1 << 64) - 1


class ProtobufError(ValueError):
    """A body that is not the protobuf it claims to be; `str()` is the message a client is shown."""


class UnknownKind(KeyError):
    """An enveloped object of a kind with no protobuf message here."""

    def __init__(self, version: str, kind: str) -> None:
        super().__init__(f'no kind "{kind}" is registered for version "{version}"')
        self.version, self.kind = version, kind

    def __str__(self) -> str:
        return str(self.args[0])


# -- encoding --------------------------------------------------------------------------------------------


def _len_field(out: bytearray, key: bytes, payload: bytes | bytearray) -> None:
    out += key
    out += varint(len(payload))
    out += payload


# metav1.Time's zero (0001-01-01T00:00:00Z) is written as an empty message; any other time as Go's Timestamp
# writes itself, seconds and nanos both (gogo writes a non-pointer scalar even when it is zero).
GO_ZERO_TIME = -62135596800


def _timestamp(seconds: int, nanos: int = 0) -> bytes:
    if seconds == GO_ZERO_TIME and nanos == 0:
        return b""
    return b"\x08" + varint(seconds) + b"\x10" + varint(nanos)


def _encode_value(out: bytearray, f: Field, v: Any) -> None:
    kind = f.kind
    if kind is Kind.STRING:
        _len_field(out, f.tag, v.encode("utf-8", "surrogatepass") if isinstance(v, str) else str(v).encode())
    elif kind is Kind.INT:
        out += f.tag
        out += varint(int(v))
    elif kind is Kind.BOOL:
        out += f.tag
        out += b"\x01" if v else b"\x00"
    elif kind is Kind.MESSAGE:
        assert f.message is not None
        _len_field(out, f.tag, py_encode_message(f.message, v))
    elif kind is Kind.BYTES:
        _len_field(out, f.tag, base64.b64decode(v) if isinstance(v, str) else bytes(v))
    elif kind is Kind.TIME:
        seconds, _ = gotime.parse(v)
        _len_field(out, f.tag, _timestamp(seconds))
    elif kind is Kind.MICRO_TIME:
        seconds, nanos = gotime.parse(v)
        _len_field(out, f.tag, _timestamp(seconds, nanos // 1000 * 1000))
    elif kind is Kind.DURATION:
        ns = parse_go_duration(v) if isinstance(v, str) else int(v)
        _len_field(out, f.tag, b"\x08" + varint(ns))
    elif kind is Kind.QUANTITY:
        text = v if isinstance(v, str) else str(parse_quantity(v))
        _len_field(out, f.tag, b"\x0a" + varint(len(text.encode())) + text.encode())
    elif kind is Kind.INT_OR_STRING:
        if isinstance(v, str):
            raw = v.encode()
            _len_field(out, f.tag, b"\x08\x01\x10\x00\x1a" + varint(len(raw)) + raw)
        else:
            _len_field(out, f.tag, b"\x08\x00\x10" + varint(int(v)) + b"\x1a\x00")
    elif kind is Kind.RAW:
        raw = orjson.dumps(v)
        _len_field(out, f.tag, b"\x0a" + varint(len(raw)) + raw)
    elif kind is Kind.STRING_LIST:
        inner = bytearray()
        for item in v:
            _len_field(inner, b"\x0a", item.encode())
        _len_field(out, f.tag, inner)
    elif kind is Kind.DOUBLE:
        out += f.tag
        out += struct.pack("<d", v)
    elif kind is Kind.UNION:
        _len_field(out, f.tag, _encode_union(f, v))
    else:  # pragma: no cover - every Kind is handled above
        raise AssertionError(kind)


def _encode_union(f: Field, v: Any) -> bytearray:
    """A JSONSchemaPropsOr* value in the field of its shape, as Go writes what its UnmarshalJSON made of it (a
    schema allows what it describes: JSONSchemaPropsOrBool writes `allows` true beside it)."""
    assert f.message is not None
    obj, items, flag = union_parts(f.message)
    out = bytearray()
    if isinstance(v, dict) and obj is not None:
        if flag is not None:
            out += flag.tag + b"\x01"
        _encode_value(out, obj, v)
    elif isinstance(v, list) and items is not None:
        for item in v:
            if item is not None:
                _encode_value(out, items, item)
    elif isinstance(v, bool) and flag is not None:
        out += flag.tag + (b"\x01" if v else b"\x00")
    else:
        raise ProtobufError(f"field {f.key}: a value of a shape the field does not take")
    return out


def py_encode_message(msg: Message, obj: dict[str, Any]) -> bytearray:
    """The message's bytes for a dict (fields the message lacks, such as apiVersion and kind, are not written)."""
    out = bytearray()
    for f in msg.fields:
        if not f.key:  # inlined: the nested message's fields are this object's
            assert f.message is not None
            _len_field(out, f.tag, py_encode_message(f.message, obj))
            continue
        v = obj.get(f.key)
        if v is None:
            continue
        if f.is_map:
            value = f.value
            assert value is not None
            for k in sorted(v):
                entry = bytearray()
                _len_field(entry, b"\x0a", k.encode())
                if v[k] is not None:
                    _encode_value(entry, value, v[k])
                _len_field(out, f.tag, entry)
        elif f.repeated:
            for item in v:
                if item is not None:
                    _encode_value(out, f, item)
                elif f.kind is Kind.RAW:  # a null among JSON values (a schema's enum): a message with no raw
                    out += f.tag + b"\x00"
        else:
            _encode_value(out, f, v)
    return out


def py_envelope(api_version: str, kind: str, raw: bytes | bytearray) -> bytes:
    """`k8s\\x00` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}."""
    av, k = api_version.encode(), kind.encode()
    type_meta = b"\x0a" + varint(len(av)) + av + b"\x12" + varint(len(k)) + k
    return MAGIC + b"\x0a" + varint(len(type_meta)) + type_meta + b"\x12" + varint(len(raw)) + bytes(raw)


class EncodingCache:
    """Encodings of stored object versions, least recently used first out past a byte budget. An object's
    version (its uid and resourceVersion) never changes content, so a GET or a LIST that meets it again sends
    the bytes it already has (upstream's watch cache keeps serializations per format the same way)."""

    def __init__(self, budget: int = 64 << 20) -> None:
        self.budget = budget
        self.size = 0
        self.entries: OrderedDict[tuple[str, ...], bytes] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: tuple[str, ...]) -> bytes | None:
        found = self.entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self.entries.move_to_end(key)
        return found

    def put(self, key: tuple[str, ...], value: bytes) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.size -= len(old)
        self.entries[key] = value
        self.size += len(value)
        while self.size > self.budget and self.entries:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped)


CACHE = EncodingCache()


def _version_key(form: str, api_version: str, obj: dict[str, Any]) -> tuple[str, ...] | None:
    md = obj.get("metadata")
    if not isinstance(md, dict) or not md.get("resourceVersion") or not md.get("uid"):
        return None
    return (form, api_version, str(md.get("namespace") or ""), str(md.get("name") or ""), str(md["uid"]),
            str(md["resourceVersion"]))  # fmt: skip


def encode_object(obj: dict[str, Any], api_version: str = "", kind: str = "", *, stored: bool = False) -> bytes:
    """An object (or list, or Status) in its enveloped protobuf form; apiVersion and kind default to the
    object's own. `stored`: the object (or every item of the list) is a version as storage holds it, whose
    encoding may be kept and reused (never a write's answer: a dry run answers with a stored version's
    resourceVersion and new content). KeyError when the kind has no protobuf message."""
    api_version = api_version or obj.get("apiVersion", "")
    kind = kind or obj.get("kind", "")
    name = message_name_for(api_version, kind)
    if name is None:
        raise KeyError(f"{api_version}, Kind={kind} has no protobuf form")
    msg = message(name)
    items_field = msg.by_number.get(2)
    if stored and "items" in obj and items_field is not None and items_field.key == "items" and items_field.message:
        return _encode_list(obj, api_version, kind, msg, items_field.message)
    key = _version_key("object", api_version, obj) if stored else None
    if key is not None:
        found = CACHE.get(key)
        if found is not None:
            return found
    out = envelope(api_version, kind, encode_message(msg, obj))
    if key is not None:
        CACHE.put(key, out)
    return out


def _encode_list(doc: dict[str, Any], api_version: str, kind: str, msg: Message, item: Message) -> bytes:
    """A list whose items' encodings (field 2, with their tags and lengths) come from the cache when it has them."""
    parts = [bytes(encode_message(msg, {"metadata": doc.get("metadata") or {}}))]
    for obj in doc.get("items") or ():
        key = _version_key("item", api_version, obj)
        found = CACHE.get(key) if key is not None else None
        if found is None:
            body = encode_message(item, obj)
            found = b"\x12" + varint(len(body)) + body
            if key is not None:
                CACHE.put(key, found)
        parts.append(found)
    return envelope(api_version, kind, b"".join(parts))


def watch_frame(event_type: str, enveloped: bytes) -> bytes:
    """One watch event on a protobuf stream: a big-endian length, then WatchEvent{type, object{raw}}."""
    t = event_type.encode()
    obj = b"\x0a" + varint(len(enveloped)) + enveloped
    event = b"\x0a" + varint(len(t)) + t + b"\x12" + varint(len(obj)) + obj
    return struct.pack(">I", len(event)) + event


# -- decoding --------------------------------------------------------------------------------------------


def _read_varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ProtobufError("unexpected EOF")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("proto: integer overflow")


def _skip(data: bytes | memoryview, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _read_varint(data, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        n, pos = _read_varint(data, pos, end)
        pos += n
    elif wire == 5:
        pos += 4
    else:
        raise ProtobufError(f"proto: illegal wireType {wire}")
    if pos > end:
        raise ProtobufError("unexpected EOF")
    return pos


def _signed(n: int, int32: bool) -> int:
    if int32:
        n &= 0xFFFFFFFF
        return n - (1 << 32) if n >= 1 << 31 else n
    return n - (1 << 64) if n >= 1 << 63 else n


def _fields(data: bytes | memoryview, pos: int = 0, end: int | None = None) -> Iterator[tuple[int, int, Any]]:
    """(number, wire type, value) for each field: an int for varints and for 64-bit ones (their bytes read
    little-endian), a memoryview for length-delimited ones, None for the rest."""
    end = len(data) if end is None else end
    while pos < end:
        key, pos = _read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if wire == WIRE_VARINT:
            v, pos = _read_varint(data, pos, end)
            yield number, wire, v
        elif wire == WIRE_LEN:
            n, pos = _read_varint(data, pos, end)
            if pos + n > end:
                raise ProtobufError("unexpected EOF")
            yield number, wire, memoryview(data)[pos : pos + n]
            pos += n
        elif wire == WIRE_FIXED64:
            if pos + 8 > end:
                raise ProtobufError("unexpected EOF")
            yield number, wire, int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        else:
            pos = _skip(data, pos, end, wire)
            yield number, wire, None


def _text(raw: memoryview) -> str:
    return bytes(raw).decode("utf-8", "replace")


def _decode_timestamp(raw: memoryview) -> tuple[int, int]:
    seconds = nanos = 0
    for number, wire, v in _fields(raw):
        if number == 1 and wire == WIRE_VARINT:
            seconds = _signed(v, False)
        elif number == 2 and wire == WIRE_VARINT:
            nanos = _signed(v, True)
    return seconds, nanos


def _skipped(f: Field, wire: int) -> bool:
    """A 64-bit value where the field is not a double: skipped, as a wire type the codec never reads is."""
    return wire == WIRE_FIXED64 and f.kind is not Kind.DOUBLE


def _decode_value(f: Field, wire: int, v: Any) -> Any:
    kind = f.kind
    if kind is Kind.INT or kind is Kind.BOOL:
        if wire != WIRE_VARINT:
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {f.key}")
        return bool(v) if kind is Kind.BOOL else _signed(v, f.int32)
    if kind is Kind.DOUBLE:
        if wire != WIRE_FIXED64:
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {f.key}")
        return go_float(struct.unpack("<d", v.to_bytes(8, "little"))[0])
    if wire != WIRE_LEN:
        raise ProtobufError(f"proto: wrong wireType = {wire} for field {f.key}")
    if kind is Kind.STRING:
        return _text(v)
    if kind is Kind.MESSAGE:
        assert f.message is not None
        return py_decode_message(f.message, v)
    if kind is Kind.BYTES:
        return base64.b64encode(bytes(v)).decode()
    if kind is Kind.TIME:
        if len(v) == 0:
            return None  # Go's zero time: null in JSON
        seconds, _ = _decode_timestamp(v)
        return gotime.format_utc(seconds)
    if kind is Kind.MICRO_TIME:
        if len(v) == 0:
            return None
        seconds, nanos = _decode_timestamp(v)
        return gotime.format_utc(seconds, nanos, micro=True)
    if kind is Kind.DURATION:
        ns = 0
        for number, w, x in _fields(v):
            if number == 1 and w == WIRE_VARINT:
                ns = _signed(x, False)
        return format_go_duration(ns)
    if kind is Kind.QUANTITY:
        text = ""
        for number, w, x in _fields(v):
            if number == 1 and w == WIRE_LEN:
                text = _text(x)
        if not text:
            return "0"
        try:
            parse_quantity(text)
        except QuantityError as e:
            raise ProtobufError(f"quantities must match the regular expression: {e}") from None
        return text
    if kind is Kind.INT_OR_STRING:
        typ, ival, sval = 0, 0, ""
        for number, w, x in _fields(v):
            if number == 1 and w == WIRE_VARINT:
                typ = _signed(x, False)
            elif number == 2 and w == WIRE_VARINT:
                ival = _signed(x, True)
            elif number == 3 and w == WIRE_LEN:
                sval = _text(x)
        return sval if typ == 1 else ival
    if kind is Kind.RAW:
        raw = b""
        for number, w, x in _fields(v):
            if number == 1 and w == WIRE_LEN:
                raw = bytes(x)
        return _raw_value(raw)
    if kind is Kind.STRING_LIST:
        return [_text(x) for number, w, x in _fields(v) if number == 1 and w == WIRE_LEN]
    if kind is Kind.UNION:
        return _decode_union(f, v)
    raise AssertionError(kind)  # pragma: no cover


def _decode_union(f: Field, data: memoryview) -> Any:
    """A JSONSchemaPropsOr* message as its MarshalJSON writes it: a non-empty list, else the object, else the bool
    (or null, for the types without one)."""
    assert f.message is not None
    obj_field, items_field, flag_field = union_parts(f.message)
    by_number = f.message.by_number
    obj: Any = None
    items: list[Any] = []
    flag = False
    for number, wire, x in _fields(data):
        sub = by_number.get(number)
        if sub is None or x is None or _skipped(sub, wire):
            continue
        if sub is items_field:
            items.append(_decode_value(sub, wire, x))
        elif sub is obj_field:
            obj = _decode_value(sub, wire, x)
        elif sub is flag_field:
            flag = _decode_value(sub, wire, x)
    if items:
        return items
    if obj is not None:
        return obj
    return flag if flag_field is not None else None


def _raw_value(raw: bytes) -> Any:
    """A RawExtension's bytes as JSON: JSON text as it is, an enveloped protobuf object decoded."""
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return decode_object(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ProtobufError(f"error decoding an embedded object: {e}") from None


def py_decode_message(msg: Message, data: bytes | memoryview, into: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {} if into is None else into
    by_number = msg.by_number
    for number, wire, v in _fields(data):
        f = by_number.get(number)
        if f is None or v is None or _skipped(f, wire):
            continue  # a field this version does not know: skipped, as Go's Unmarshal does
        if not f.key:
            assert f.message is not None
            if wire != WIRE_LEN:
                raise ProtobufError(f"proto: wrong wireType = {wire} for an inlined field")
            py_decode_message(f.message, v, out)
        elif f.is_map:
            value_field = f.value
            assert value_field is not None
            if wire != WIRE_LEN:
                raise ProtobufError(f"proto: wrong wireType = {wire} for field {f.key}")
            key, value = "", None
            for n, w, x in _fields(v):
                if n == 1 and w == WIRE_LEN:
                    key = _text(x)
                elif n == 2:
                    value = _decode_value(value_field, w, x)
            if value is None:
                value = _zero(value_field)
            out.setdefault(f.key, {})[key] = value
        elif f.repeated:
            if wire == WIRE_LEN and f.kind in (Kind.INT, Kind.BOOL):  # packed
                items = out.setdefault(f.key, [])
                pos, end = 0, len(v)
                while pos < end:
                    n, pos = _read_varint(v, pos, end)
                    items.append(bool(n) if f.kind is Kind.BOOL else _signed(n, f.int32))
            else:
                out.setdefault(f.key, []).append(_decode_value(f, wire, v))
        else:
            out[f.key] = _decode_value(f, wire, v)
    return out


def _zero(f: Field) -> Any:
    return {Kind.STRING: "", Kind.BYTES: "", Kind.BOOL: False, Kind.INT: 0, Kind.MESSAGE: {}, Kind.QUANTITY: "0",
            Kind.STRING_LIST: []}.get(f.kind)  # fmt: skip


# -- the C codec -------------------------------------------------------------------------------------------

try:
    from . import _fastpb  # type: ignore[attr-defined]
except ImportError:  # not built (no compiler where pyk8s was installed): the Python codec does the work
    _fastpb = None

_fast_loaded = False


def _load_fast() -> bool:
    global _fast_loaded
    if _fastpb is None:
        return False
    if not _fast_loaded:
        helpers = {
            "json_loads": orjson.loads,
            "error": ProtobufError,
            "time_parse": gotime.parse,
            "time_format": lambda s, n, micro: gotime.format_utc(s, n, micro=bool(micro)),
            "duration_parse": parse_go_duration,
            "duration_format": format_go_duration,
            "quantity_text": lambda v: str(parse_quantity(v)),
            "b64decode": base64.b64decode,
            "b64encode": lambda raw: base64.b64encode(raw).decode(),
            "raw_dumps": orjson.dumps,
            "raw_value": _raw_value,
        }
        _fastpb.load(fast_spec(), helpers)
        _fast_loaded = True
    return True


def encode_message(msg: Message, obj: dict[str, Any]) -> bytes | bytearray:
    """The message's bytes for a dict (fields the message lacks, such as apiVersion and kind, are not written)."""
    if _fast_loaded or _load_fast():
        return _fastpb.encode(msg.index, obj)  # type: ignore[no-any-return, union-attr]
    return py_encode_message(msg, obj)


def decode_message(msg: Message, data: bytes | memoryview, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """A message's bytes as the dict its JSON form would be (before the Go types shape it), into `into` if given."""
    if _fast_loaded or _load_fast():
        if into is None:
            return _fastpb.decode(msg.index, data)  # type: ignore[no-any-return, union-attr]
        return _fastpb.decode(msg.index, data, into)  # type: ignore[no-any-return, union-attr]
    return py_decode_message(msg, data, into)


def envelope(api_version: str, kind: str, raw: bytes | bytearray) -> bytes:
    """`k8s\\x00` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}."""
    if _fast_loaded or _load_fast():
        return _fastpb.envelope(api_version, kind, raw)  # type: ignore[no-any-return, union-attr]
    return py_envelope(api_version, kind, raw)


def unwrap(data: bytes) -> tuple[str, str, memoryview]:
    """apiVersion, kind and the raw message of an enveloped body; ProtobufError with upstream's messages."""
    if _fast_loaded or _load_fast():
        api_version, kind, raw = _fastpb.unwrap(data)  # type: ignore[union-attr]
        if not kind or not api_version:
            return py_unwrap(data)  # the reference words the missing-field errors
        return api_version, kind, raw
    return py_unwrap(data)


def fast() -> bool:
    """Whether the C codec is in use."""
    return _load_fast()


def py_unwrap(data: bytes) -> tuple[str, str, memoryview]:
    """apiVersion, kind and the raw message of an enveloped body; ProtobufError with upstream's messages."""
    if len(data) == 0:
        raise ProtobufError("empty data")
    if not data.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")
    if len(data) == len(MAGIC):
        raise ProtobufError("empty body")
    api_version = kind = ""
    raw: memoryview = memoryview(b"")
    for number, wire, v in _fields(data, len(MAGIC)):
        if number == 1 and wire == WIRE_LEN:
            for n, w, x in _fields(v):
                if n == 1 and w == WIRE_LEN:
                    api_version = _text(x)
                elif n == 2 and w == WIRE_LEN:
                    kind = _text(x)
        elif number == 2 and wire == WIRE_LEN:
            raw = v
    if not kind or not api_version:
        missing = "Kind" if not kind else "apiVersion"
        raise ProtobufError(
            f"Object '{missing}' is missing in 'runtime.TypeMeta{{APIVersion:\"{api_version}\", Kind:\"{kind}\"}}'"
        )
    return api_version, kind, raw


def decode_object(data: bytes) -> dict[str, Any]:
    """An enveloped body as the dict its JSON form would be, apiVersion and kind included (from the envelope).
    ProtobufError for a body that is not protobuf; KeyError for a kind with no protobuf form here."""
    api_version, kind, raw = unwrap(data)
    name = message_name_for(api_version, kind)
    if name is None:
        raise UnknownKind(api_version, kind)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    return decode_message(message(name), raw, obj)


__all__ = [
    "CACHE", "MAGIC", "ProtobufError", "UnknownKind", "decode_message", "decode_object", "encode_message", "encode_object", "envelope",
    "py_decode_message", "py_encode_message", "unwrap", "watch_frame",
]  # fmt: skip
