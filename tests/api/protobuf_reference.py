"""A protobuf reader independent of pyk8s's codec: the official protobuf runtime (upb) with descriptors built from
the same upstream facts (`pyk8s/api/protobuf/v1_32.json`, generated from upstream's generated.proto files).

Tests parse what the server writes with it (and write with it what the server must read), so a bug in our
encoder cannot hide behind the same bug in our decoder.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

import pyk8s.api.protobuf as package

_TYPES = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
}
_LABEL = descriptor_pb2.FieldDescriptorProto


def proto_name(name: str) -> str:
    """`io.k8s.api.core.v1.Pod` -> `k8s.io.api.core.v1.Pod` (the name in generated.proto, whose package names
    spell Go's `apiextensions-apiserver` as `apiextensions_apiserver`)."""
    return "k8s.io." + name[len("io.k8s.") :].replace("-", "_") if name.startswith("io.k8s.") else name


def _set_type(f: descriptor_pb2.FieldDescriptorProto, typ: str) -> str | None:
    if typ in _TYPES:
        f.type = _TYPES[typ]
        return None
    f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
    f.type_name = "." + proto_name(typ)
    return proto_name(typ).rsplit(".", 1)[0]


@functools.cache
def pool() -> descriptor_pool.DescriptorPool:
    messages = orjson.loads((Path(package.__file__).parent / "v1_32.json").read_bytes())["messages"]
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    deps: dict[str, set[str]] = {}
    for name, fields in messages.items():
        pkg, short = proto_name(name).rsplit(".", 1)
        fd = files.get(pkg)
        if fd is None:
            fd = files[pkg] = descriptor_pb2.FileDescriptorProto(name=f"{pkg}.proto", package=pkg, syntax="proto2")
            deps[pkg] = set()
        msg = fd.message_type.add(name=short)
        for number, fname, label, typ in fields:
            f = msg.field.add(name=fname, number=number)
            if label == "map":
                entry_name = fname[0].upper() + fname[1:] + "Entry"
                entry = msg.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                for n, (ename, etyp) in enumerate((("key", typ[0]), ("value", typ[1])), start=1):
                    ef = entry.field.add(name=ename, number=n, label=_LABEL.LABEL_OPTIONAL)
                    dep = _set_type(ef, etyp)
                    if dep and dep != pkg:
                        deps[pkg].add(dep)
                f.label = _LABEL.LABEL_REPEATED
                f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                f.type_name = f".{pkg}.{short}.{entry_name}"
                continue
            f.label = _LABEL.LABEL_REPEATED if label == "repeated" else _LABEL.LABEL_OPTIONAL
            dep = _set_type(f, typ)
            if dep and dep != pkg:
                deps[pkg].add(dep)
    p = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(pkg: str) -> None:
        if pkg in added:
            return
        added.add(pkg)
        for d in sorted(deps[pkg]):
            add(d)
        files[pkg].dependency.extend(f"{d}.proto" for d in sorted(deps[pkg]))
        p.Add(files[pkg])

    for pkg in sorted(files):
        add(pkg)
    return p


def message_class(name: str) -> type[Message]:
    return message_factory.GetMessageClass(pool().FindMessageTypeByName(proto_name(name)))


MAGIC = b"k8s\x00"


def parse_envelope(body: bytes) -> tuple[str, str, bytes]:
    """apiVersion, kind and raw message bytes of an enveloped body."""
    assert body[:4] == MAGIC, body[:16]
    unknown = message_class("io.k8s.apimachinery.pkg.runtime.Unknown")()
    unknown.ParseFromString(body[4:])
    return unknown.typeMeta.apiVersion, unknown.typeMeta.kind, unknown.raw


def parse(body: bytes, message_name: str) -> Any:
    """An enveloped body parsed as `message_name`, with its apiVersion and kind."""
    api_version, kind, raw = parse_envelope(body)
    msg = message_class(message_name)()
    msg.ParseFromString(raw)
    return api_version, kind, msg


def envelope(api_version: str, kind: str, msg: Message) -> bytes:
    unknown = message_class("io.k8s.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = msg.SerializeToString()
    return MAGIC + unknown.SerializeToString()


def watch_events(stream: bytes) -> list[tuple[str, bytes]]:
    """(type, enveloped object) of each length-prefixed WatchEvent frame of a protobuf watch stream."""
    out = []
    pos = 0
    event_class = message_class("io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent")
    while pos < len(stream):
        assert pos + 4 <= len(stream), "a frame cut short"
        (n,) = struct.unpack(">I", stream[pos : pos + 4])
        event = event_class()
        event.ParseFromString(stream[pos + 4 : pos + 4 + n])
        out.append((event.type, event.object.raw))
        pos += 4 + n
    return out
