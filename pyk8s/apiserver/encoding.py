"""Request bodies in, responses out: JSON, YAML or protobuf decoding with the body size limit and field
validation, and encoding of objects, lists, Tables and Status errors in the negotiated format (upstream:
endpoints/handlers/rest.go and the serializers; protobuf is api/protobuf)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import yaml
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from ..api import errors, goyaml
from ..api.meta import Object
from ..api.protobuf import codec as protobuf
from ..api.resources import Resource
from ..api.types.codec import (
    DecodeError,
    Unknown,
    codec_for,
    decoder_for,
    go_type_name,
    json_kind,
    unknown_paths,
)
from .negotiation import JSON, PROTOBUF, YAML, Output, body_format, choose_output
from .warning import take_warnings

MAX_BODY_BYTES = 3 * 1024 * 1024
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


async def read_body(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, or 413 when it is larger than `limit`."""
    if request.content_length is not None and request.content_length > limit:
        raise errors.request_entity_too_large(f"limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    while True:
        # read(n) returns what has arrived, up to n bytes: keep reading until the end of the body.
        try:
            chunk = await request.content.read(limit + 1 - size)
        except RequestPayloadError as e:
            # A body that is not what its Content-Encoding says, or one cut short.
            raise errors.bad_request(f"error reading the request body: {e.__cause__ or e}") from None
        if not chunk:
            body = b"".join(chunks)
            audit = request.get("audit")  # an audited request at level Request or above logs its body
            if audit is not None:
                audit.record_body(body, request.headers.get("Content-Type"))
            return body
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise errors.request_entity_too_large(f"limit is {limit}")


class _DuplicateKeys(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeys(k)
        out[k] = v
    return out


class _UniqueKeyLoader(goyaml.GoYAMLLoader):
    """go-yaml's resolution, with a repeated key an error (the strict decoder's duplicate field)."""


def _construct_unique(loader: Any, node: Any, deep: bool = False) -> dict[str, Any]:
    loader.flatten_mapping(node)
    seen: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = goyaml.json_key(loader.construct_object(key_node, deep=deep))
        if key in seen:
            raise _DuplicateKeys(key)
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique)


def _summary(data: bytes, most: int = 30) -> str:
    """The start of a body as upstream's decode errors quote it: JSON as text, anything else in hex."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        return data[:most].decode("utf-8", "replace") + (" ..." if len(data) > most else "")
    return data[:most].hex() + (" ..." if len(data) > most else "")


def decode(
    data: bytes, content_type: str | None, *, check_duplicates: bool = False, kind: str = ""
) -> tuple[Any, list[str]]:
    """The decoded body and the duplicate fields found (only looked for when asked: it costs a slower parser).
    YAML is read as upstream reads it (api/goyaml); nesting beyond goyaml.MAX_DEPTH is refused either way.
    `kind`: what the endpoint takes, named in the error for a protobuf body that is not one."""
    fmt = body_format(content_type)
    duplicates: list[str] = []
    if fmt == PROTOBUF:
        # Protobuf has no strict mode upstream: unknown fields are dropped, duplicates are not an error.
        try:
            return protobuf.decode_object(data), duplicates
        except protobuf.UnknownKind as e:
            raise errors.bad_request(
                f"{e.kind} in version {errors.go_quote(e.version)} cannot be handled as a {kind or e.kind}: {e}"
            ) from None
        except ValueError as e:  # ProtobufError, or an embedded object's JSON that does not parse
            detail = f"{e} ({_summary(data)})"
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {detail}" if kind else detail
            ) from None
    if fmt == JSON:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"error decoding JSON body: {e}") from None
        if goyaml.bytes_may_nest_deeper(data) and goyaml.json_depth_exceeds(value):
            raise errors.bad_request(f"error decoding JSON body: {goyaml.depth_message()}")
        if check_duplicates:
            try:
                json.loads(data, object_pairs_hook=_no_duplicates)
            except _DuplicateKeys as d:
                duplicates.append(str(d))
            except (ValueError, RecursionError):
                pass  # orjson read it: what the slower parser cannot is not a duplicate
        return value, duplicates
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise errors.bad_request(f"error decoding YAML body: {e}") from None
    if check_duplicates:
        try:
            goyaml.load(text, _UniqueKeyLoader)
        except _DuplicateKeys as d:
            duplicates.append(str(d))
        except goyaml.YAMLDecodeError:
            pass  # reported by the plain load below
    try:
        return goyaml.load(text), duplicates
    except goyaml.YAMLDecodeError as e:
        raise errors.bad_request(f"error decoding YAML body: {e}") from None


def field_validation(query: Any) -> str:
    mode = query.get("fieldValidation", "") or "Warn"
    if mode not in ("Ignore", "Warn", "Strict"):
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: {errors.go_quote(mode)}: supported values: "Ignore", "Warn", "Strict"'
        )
    return mode


def _typed(obj: Object, served: Resource, mode: str, changed: frozenset[str] | None = None) -> tuple[Object, list[str]]:
    """`obj` read into the served kind's Go types (api/types/codec), and the unknown fields it had (looked for
    unless `mode` is Ignore); DecodeError when Go would not read it. With `changed`, only those top-level
    fields are new: the rest are a stored object's, already in stored form, and are not walked again."""
    codec = codec_for(served.group, served.version, served.kind)
    if codec is None:  # a kind without a Go type: nothing to check it against
        return obj, []
    unknown: Unknown | None = None if mode == "Ignore" else []
    typed = codec.decode(obj, unknown) if changed is None else codec.decode_top(obj, changed, unknown)
    return typed, [f"unknown field {errors.go_quote(p)}" for p in unknown_paths(unknown or [])]


# How a body becomes what is stored: (object, mode, only these top-level fields changed) -> (object, unknown
# field warnings); DecodeError when it cannot. The built-in kinds' is `_typed` (their Go types).
Coerce = Callable[[Object, str, "frozenset[str] | None"], tuple[Object, list[str]]]


def typed_object(
    obj: Object, served: Resource, mode: str, duplicates: list[str], coerce: Coerce | None = None
) -> tuple[Object, list[str]]:
    """A request body read into the kind's Go types as upstream decodes it (or as `coerce` reads it): the
    object as it will be stored, and the warnings for unknown and duplicate fields (a 400 instead under
    Strict, nothing under Ignore)."""
    try:
        typed, unknown = coerce(obj, mode, None) if coerce else _typed(obj, served, mode)
    except DecodeError as e:
        raise errors.cannot_decode(served.kind, served.version, e) from None
    if mode == "Ignore":
        return typed, []
    problems = [f"duplicate field {errors.go_quote(d)}" for d in duplicates] + unknown
    if problems and mode == "Strict":
        raise errors.bad_request("strict decoding error: " + ", ".join(problems))
    return typed, problems


def typed_body(raw: Any, type_name: str, kind: str, version: str = "v1") -> Object:
    """A request body of a kind that is not stored (Binding, Eviction, DeleteOptions, Scale) read into its Go
    type (`type_name` in the type table); 400 with upstream's decode message when it does not fit."""
    if not isinstance(raw, dict):
        detail = f"json: cannot unmarshal {json_kind(raw)} into Go value of type {go_type_name(type_name)}"
        raise errors.cannot_decode(kind, version, detail)
    try:
        typed: Object = decoder_for(type_name).decode(raw, None)
    except DecodeError as e:
        raise errors.cannot_decode(kind, version, e) from None
    return typed


def typed_patch_result(
    obj: Object,
    served: Resource,
    mode: str,
    shown: Callable[[], Any],
    changed: frozenset[str] | None = None,
    coerce: Coerce | None = None,
) -> tuple[Object, list[str]]:
    """A patched object read into the kind's types (or by `coerce`): what goes wrong is a 422 on the field
    `patch` showing `shown` (the patched JSON, or the strategic patch), as upstream's patch handler answers.
    `changed`: the top-level fields the patch could have changed, when it is known that it changed no others."""
    try:
        typed, problems = coerce(obj, mode, changed) if coerce else _typed(obj, served, mode, changed)
    except DecodeError as e:
        raise errors.invalid_object("", "", [errors.invalid("patch", _shown(shown()), str(e))]) from None
    if problems and mode == "Strict":
        detail = "strict decoding error: " + ", ".join(problems)
        raise errors.invalid_object("", "", [errors.invalid("patch", _shown(shown()), detail)])
    return typed, problems


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def body_object(obj: Any, served: Resource) -> Object:
    """Check a decoded body is an object of the endpoint's kind and group/version, filling them in."""
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the body of the request must be a {served.kind} object")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != served.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({served.api_version})"
        )
    if kind and kind != served.kind:
        raise errors.cannot_decode(
            served.kind, served.version,
            f"the kind in the data ({kind}) does not match the expected kind ({served.kind})", data_kind=kind,
        )  # fmt: skip
    obj["apiVersion"], obj["kind"] = served.api_version, served.kind
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = {}
    elif not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return obj


def encode(doc: Any, out: Output, *, stored: bool = False) -> bytes:
    """`doc` in the chosen format. `stored`: it is an object as storage holds it, or a list of such (a GET's or
    a LIST's answer), whose protobuf encodings may be reused (api/protobuf: EncodingCache)."""
    if out.media == PROTOBUF:
        return protobuf.encode_object(doc, stored=stored)
    if out.media == YAML:
        return yaml.dump(doc, Dumper=_Dumper, default_flow_style=False, sort_keys=False).encode()
    return orjson.dumps(doc)


def respond(
    doc: Any, out: Output, status: int = 200, warnings: list[str] | None = None, *, stored: bool = False
) -> web.Response:
    resp = web.Response(body=encode(doc, out, stored=stored), status=status, content_type=out.media)
    add_warnings(resp, [*(warnings or ()), *take_warnings()])  # with what admission added (warning.py)
    return resp


def add_warnings(resp: web.StreamResponse, warnings: list[str] | None) -> None:
    for w in warnings or ():
        resp.headers.add("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"')


def status_response(err: errors.StatusError, accept: str | None = None) -> web.Response:
    """An error as a Status, in protobuf when the client prefers it (as upstream answers every error in the
    negotiated format), otherwise JSON."""
    media = JSON
    if accept and PROTOBUF in accept:
        try:
            media = choose_output(accept, protobuf=True).media
        except errors.StatusError:
            pass
    if media == PROTOBUF:
        body = protobuf.encode_object(err.status())
    else:
        media, body = JSON, orjson.dumps(err.status())
    resp = web.Response(body=body, status=err.code, content_type=media)
    add_warnings(resp, take_warnings())  # a refused write still carries admission's warnings, as upstream's
    if err.retry_after is not None:
        resp.headers["Retry-After"] = str(err.retry_after)
    return resp
