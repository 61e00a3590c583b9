"""`/openapi/v2` in its protobuf form: the swagger document as gnostic's `openapi.v2.Document` message, which
client-go's discovery client asks for (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and kubectl
reads to validate what it creates and applies (upstream: kube-openapi's handler converts the JSON spec to YAML and
then to the gnostic message).

Only the parts of gnostic's schema (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto, proto3) that our
document uses are written: the document's info, paths (operations with query, path and body parameters, responses
that name a schema, vendor extensions) and definitions (schemas with every keyword upstream's definitions carry).
Field numbers are that file's. Vendor extensions and other free-form values (`default`, `enum`, `example`) are
gnostic's `Any` with YAML text: JSON text, which is YAML, as kube-openapi's readers unmarshal it with a YAML parser.
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

from ..api.protobuf.schema import varint

# Accept values (the `@` form is what clients send; the dotted one is what the server answers with).
PROTO_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTO_V2_REPLY = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _len(n: int, payload: bytes) -> bytes:
    return varint(n << 3 | 2) + varint(len(payload)) + payload


def _str(n: int, text: Any) -> bytes:
    if not isinstance(text, str) or not text:
        return b""  # proto3: an empty string is not written
    return _len(n, text.encode())


def _strs(n: int, items: Any) -> bytes:
    return b"".join(_len(n, str(x).encode()) for x in items or ())


def _bool(n: int, v: Any) -> bytes:
    return varint(n << 3) + b"\x01" if v is True else b""


def _int(n: int, v: Any) -> bytes:
    return varint(n << 3) + varint(int(v)) if isinstance(v, int) and not isinstance(v, bool) and v else b""


def _double(n: int, v: Any) -> bytes:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return varint(n << 3 | 1) + struct.pack("<d", float(v))
    return b""


def _any(n: int, value: Any) -> bytes:
    """gnostic's Any{yaml = 2}: the value as YAML text (JSON text is YAML)."""
    return _len(n, _len(2, orjson.dumps(value) + b"\n"))


def _extensions(n: int, node: dict[str, Any]) -> bytes:
    """`x-*` keys as repeated NamedAny{name = 1, value = 2}."""
    return b"".join(_len(n, _str(1, k) + _any(2, v)) for k, v in node.items() if k.startswith("x-"))


def schema(node: dict[str, Any]) -> bytes:
    """gnostic `Schema`."""
    out = [_str(1, node.get("$ref")), _str(2, node.get("format")), _str(3, node.get("title")),
           _str(4, node.get("description"))]  # fmt: skip
    if "default" in node:
        out.append(_any(5, node["default"]))
    out += [
        _double(6, node.get("multipleOf")), _double(7, node.get("maximum")), _bool(8, node.get("exclusiveMaximum")),
        _double(9, node.get("minimum")), _bool(10, node.get("exclusiveMinimum")), _int(11, node.get("maxLength")),
        _int(12, node.get("minLength")), _str(13, node.get("pattern")), _int(14, node.get("maxItems")),
        _int(15, node.get("minItems")), _bool(16, node.get("uniqueItems")), _int(17, node.get("maxProperties")),
        _int(18, node.get("minProperties")), _strs(19, node.get("required")),
    ]  # fmt: skip
    out += [_any(20, v) for v in node.get("enum") or ()]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_len(21, _len(1, schema(extra))))  # AdditionalPropertiesItem{schema = 1}
    elif isinstance(extra, bool):
        out.append(_len(21, varint(2 << 3) + (b"\x01" if extra else b"\x00")))  # {boolean = 2}
    typ = node.get("type")
    if typ:
        out.append(_len(22, _strs(1, [typ] if isinstance(typ, str) else typ)))  # TypeItem{value = 1}
    items = node.get("items")
    if isinstance(items, dict):
        items = [items]
    if items:
        out.append(_len(23, b"".join(_len(1, schema(i)) for i in items)))  # ItemsItem{schema = 1}
    out += [_len(24, schema(s)) for s in node.get("allOf") or ()]
    props = node.get("properties")
    if props:
        named = b"".join(_len(1, _str(1, k) + _len(2, schema(v))) for k, v in props.items())
        out.append(_len(25, named))  # Properties{additional_properties = 1: NamedSchema{name, value}}
    out += [_str(26, node.get("discriminator")), _bool(27, node.get("readOnly"))]
    if "example" in node:
        out.append(_any(30, node["example"]))
    out.append(_extensions(31, node))
    return b"".join(out)


def _parameter(p: dict[str, Any]) -> bytes:
    """A ParametersItem: a $ref, or a Parameter that is a body or a query/path/header/formData parameter."""
    if "$ref" in p:
        return _len(2, _str(1, p["$ref"]) + _str(2, p.get("description")))  # JsonReference
    where = p.get("in", "")
    if where == "body":
        body = (_str(1, p.get("description")) + _str(2, p.get("name")) + _str(3, where) + _bool(4, p.get("required"))
                + (_len(5, schema(p["schema"])) if isinstance(p.get("schema"), dict) else b"")
                + _extensions(6, p))  # fmt: skip
        return _len(1, _len(1, body))  # Parameter{body_parameter = 1}
    head = _bool(1, p.get("required")) + _str(2, where) + _str(3, p.get("description")) + _str(4, p.get("name"))
    if where == "query":
        # QueryParameterSubSchema: allow_empty_value 5, type 6, format 7, ..., unique_items 20, vendor_extension 23
        sub = head + _str(6, p.get("type")) + _str(7, p.get("format")) + _bool(20, p.get("uniqueItems"))
        sub += _extensions(23, p)
        which = 3
    elif where == "path":
        # PathParameterSubSchema: type 5, format 6, ..., unique_items 19, vendor_extension 22
        sub = head + _str(5, p.get("type")) + _str(6, p.get("format")) + _bool(19, p.get("uniqueItems"))
        sub += _extensions(22, p)
        which = 4
    elif where == "header":
        sub = head + _str(5, p.get("type")) + _str(6, p.get("format")) + _bool(19, p.get("uniqueItems"))
        sub += _extensions(22, p)
        which = 1
    else:  # formData
        sub = head + _str(6, p.get("type")) + _str(7, p.get("format")) + _bool(20, p.get("uniqueItems"))
        sub += _extensions(23, p)
        which = 2
    return _len(1, _len(2, _len(which, sub)))  # Parameter{non_body_parameter = 2: NonBodyParameter{which}}


def _operation(op: dict[str, Any]) -> bytes:
    out = [_strs(1, op.get("tags")), _str(2, op.get("summary")), _str(3, op.get("description")),
           _str(5, op.get("operationId")), _strs(6, op.get("produces")), _strs(7, op.get("consumes"))]  # fmt: skip
    out += [_len(8, _parameter(p)) for p in op.get("parameters") or ()]
    responses = b""
    for code, resp in (op.get("responses") or {}).items():
        if "$ref" in resp:
            value = _len(2, _str(1, resp["$ref"]))
        else:
            body = _str(1, resp.get("description"))
            if isinstance(resp.get("schema"), dict):
                body += _len(2, _len(1, schema(resp["schema"])))  # SchemaItem{schema = 1}
            body += _extensions(5, resp)
            value = _len(1, body)  # ResponseValue{response = 1}
        responses += _len(1, _str(1, code) + _len(2, value))  # NamedResponseValue
    out += [_len(9, responses), _strs(10, op.get("schemes")), _bool(11, op.get("deprecated")), _extensions(13, op)]
    return b"".join(out)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: dict[str, Any]) -> bytes:
    out = [_str(1, item.get("$ref"))]
    for method, n in _METHODS.items():
        if isinstance(item.get(method), dict):
            out.append(_len(n, _operation(item[method])))
    out += [_len(9, _parameter(p)) for p in item.get("parameters") or ()]
    out.append(_extensions(10, item))
    return b"".join(out)


def document(doc: dict[str, Any]) -> bytes:
    """The serialized `openapi.v2.Document` of a swagger 2.0 document (as a dict)."""
    info = doc.get("info") or {}
    out = [_str(1, doc.get("swagger")), _len(2, _str(1, info.get("title")) + _str(2, info.get("version")))]
    paths = b"".join(_len(2, _str(1, p) + _len(2, _path_item(item))) for p, item in (doc.get("paths") or {}).items())
    out.append(_len(8, paths))  # Paths{path = 2: NamedPathItem}
    definitions = b"".join(_len(1, _str(1, k) + _len(2, schema(v))) for k, v in (doc.get("definitions") or {}).items())
    out.append(_len(9, definitions))  # Definitions{additional_properties = 1: NamedSchema}
    return b"".join(out)
