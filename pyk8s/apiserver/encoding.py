"""Request bodies in, responses out: JSON or YAML decoding with the body size limit and field validation,
and encoding of objects, lists, Tables and Status errors (upstream: endpoints/handlers/rest.go and the
serializers)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml
from aiohttp import web

from ..api import errors, schema
from ..api.meta import Object
from ..api.resources import Resource
from .negotiation import JSON, YAML, Output, body_format

MAX_BODY_BYTES = 3 * 1024 * 1024
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


async def read_body(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, or 413 when it is larger than `limit`."""
    if request.content_length is not None and request.content_length > limit:
        raise errors.request_entity_too_large(f"limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    while True:
        # read(n) returns what has arrived, up to n bytes: keep reading until the end of the body.
        chunk = await request.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise errors.request_entity_too_large(f"limit is {limit}")


class _DuplicateKeys(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeys(k)
        out[k] = v
    return out


class _UniqueKeyLoader(_Loader):  # type: ignore[misc,valid-type]
    pass


def _construct_unique(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _DuplicateKeys(str(key))
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique)


def decode(data: bytes, content_type: str | None, *, check_duplicates: bool = False) -> tuple[Any, list[str]]:
    """The decoded body and the duplicate fields found (only looked for when asked: it costs a slower parser)."""
    fmt = body_format(content_type)
    duplicates: list[str] = []
    try:
        if fmt == JSON:
            if check_duplicates:
                try:
                    return json.loads(data, object_pairs_hook=_no_duplicates), duplicates
                except _DuplicateKeys as d:
                    duplicates.append(str(d))
            return orjson.loads(data), duplicates
        if check_duplicates:
            try:
                return yaml.load(data, Loader=_UniqueKeyLoader), duplicates
            except _DuplicateKeys as d:
                duplicates.append(str(d))
        return yaml.load(data, Loader=_Loader), duplicates
    except (orjson.JSONDecodeError, json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise errors.bad_request(f"error decoding {'YAML' if fmt == YAML else 'JSON'} body: {e}") from None


def field_validation(query: Any) -> str:
    mode = query.get("fieldValidation", "") or "Warn"
    if mode not in ("Ignore", "Warn", "Strict"):
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: {errors.go_quote(mode)}: supported values: "Ignore", "Warn", "Strict"'
        )
    return mode


def check_fields(obj: Any, served: Resource, mode: str, duplicates: list[str]) -> list[str]:
    """Unknown and duplicate fields: a 400 under Strict, warnings under Warn, nothing under Ignore."""
    if mode == "Ignore":
        return []
    problems = [f"duplicate field {errors.go_quote(d)}" for d in duplicates]
    node = schema.kind_node(served.group, served.version, served.kind)
    problems += [f"unknown field {errors.go_quote(p)}" for p in schema.unknown_fields(obj, node)]
    if problems and mode == "Strict":
        raise errors.bad_request("strict decoding error: " + ", ".join(problems))
    return problems


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
        raise errors.bad_request(
            f"{kind} in version {errors.go_quote(served.version)} cannot be handled as a {served.kind}: "
            f"the kind in the data ({kind}) does not match the expected kind ({served.kind})"
        )
    obj["apiVersion"], obj["kind"] = served.api_version, served.kind
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = {}
    elif not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return obj


def encode(doc: Any, out: Output) -> bytes:
    if out.media == YAML:
        return yaml.dump(doc, Dumper=_Dumper, default_flow_style=False, sort_keys=False).encode()
    return orjson.dumps(doc)


def respond(doc: Any, out: Output, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    resp = web.Response(body=encode(doc, out), status=status, content_type=out.media)
    add_warnings(resp, warnings)
    return resp


def add_warnings(resp: web.StreamResponse, warnings: list[str] | None) -> None:
    for w in warnings or ():
        resp.headers.add("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"')


def status_response(err: errors.StatusError) -> web.Response:
    resp = web.Response(body=orjson.dumps(err.status()), status=err.code, content_type=JSON)
    if err.retry_after is not None:
        resp.headers["Retry-After"] = str(err.retry_after)
    return resp
