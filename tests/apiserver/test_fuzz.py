"""Fuzzing the API server from its own OpenAPI: a few thousand requests across every served resource, verb and
content type, with bodies built from each kind's schema and then broken (wrong types, unknown and null fields,
deep nesting, huge numbers, garbage bytes). No answer may be a 5xx, every answer must be a Status or an object,
and a sentinel object must come through unchanged. Bounded in count, so it ends by itself."""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.api import schema
from pyk8s.api.protobuf import codec as protobuf
from pyk8s.api.resources import TABLE
from pyk8s.testing.cluster import APIServerProcess

# CI's count; PYK8S_FUZZ_EXAMPLES=20000 for a longer hunt by hand.
EXAMPLES = int(os.environ.get("PYK8S_FUZZ_EXAMPLES", "2500"))
NS = "fuzz"
_RESOURCES = [r for r in TABLE.resources if r.plural != "bindings"] + [TABLE.get("", "v1", "bindings")]

_WILD = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=12), st.sampled_from(["", "..", "a/b", "\x00", "2024-01-01", "1e30", "-1"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)  # fmt: skip
_NUMBERS = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 2**31, 2**63, 1.5, 1e30]))
_STRINGS = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
    st.sampled_from(["", "x" * 300, "2024-01-01T00:00:00Z", "garbage", "100m", "1Gi", "25%", "\ud7ff", "é"]),
    st.text(max_size=16),
)


def _from_schema(node: schema.Node | None, depth: int) -> st.SearchStrategy[Any]:
    """Values shaped like `node` most of the time, and anything at all now and then."""
    if node is None or depth > 5:
        return _WILD
    shaped: st.SearchStrategy[Any]
    if node.is_object and "properties" in node.schema:
        props = {name: _from_schema(child, depth + 1) for name, child in node.properties()}
        shaped = st.fixed_dictionaries({}, optional={**props, "unknownField": _WILD})
    elif node.is_object:
        value = node.child("anything")
        shaped = st.dictionaries(_STRINGS, _from_schema(value, depth + 1) if value else _WILD, max_size=3)
    elif node.is_array:
        shaped = st.lists(_from_schema(node.items(), depth + 1), max_size=3)
    elif "integer" in node.types or "number" in node.types:
        shaped = _NUMBERS
    elif "boolean" in node.types:
        shaped = st.booleans()
    else:
        shaped = _STRINGS
    return st.one_of(shaped, shaped, shaped, shaped, _WILD, st.none())


_BODIES: dict[str, st.SearchStrategy[Any]] = {}


def body_for(group: str, version: str, kind: str) -> st.SearchStrategy[Any]:
    key = f"{group}/{version}/{kind}"
    if key not in _BODIES:
        node = schema.kind_node(group, version, kind)
        _BODIES[key] = _from_schema(node, 0) if node else _WILD
    return _BODIES[key]


def _deep(n: int) -> bytes:
    return b'{"metadata":{"name":"d"},"x":' + b"[" * n + b"]" * n + b"}"


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes | None, dict[str, str]]:
    r = draw(st.sampled_from(_RESOURCES))
    base = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
    collection = f"{base}/namespaces/{NS}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
    name = draw(st.sampled_from(["f1", "f2", "..", "a%2Fb", "x" * 300, "%00"]))
    sub = draw(st.sampled_from(["", "", "", "/status", "/scale", "/binding", "/eviction", "/finalize", "/nope"]))
    verb = draw(st.sampled_from(["POST", "PUT", "PATCH", "PATCH", "GET", "GET", "DELETE", "LIST", "WATCH"]))
    query = draw(st.sampled_from([
        "", "", "?fieldValidation=Strict", "?fieldValidation=Warn", "?dryRun=All", "?dryRun=Nope",
        "?limit=99999999999999999999999", "?limit=-1", "?labelSelector=a%20in%20(", "?fieldSelector=x%3Dy",
        "?resourceVersion=abc", "?resourceVersionMatch=Exact", "?continue=garbage", "?gracePeriodSeconds=1e3",
        "?propagationPolicy=Nope", "?fieldManager=" + "m" * 200, "?fieldManager=fuzz", "?fieldManager=fuzz&force=true",
        "?fieldManager=kubectl&force=false",
    ]))  # fmt: skip
    obj = draw(body_for(r.group, r.version, r.kind))
    if isinstance(obj, dict) and draw(st.booleans()):
        obj.setdefault("metadata", {})
        if isinstance(obj["metadata"], dict):
            obj["metadata"]["name"] = name
    content_type = draw(st.sampled_from([
        "application/json", "application/json", "application/yaml", "application/merge-patch+json",
        "application/strategic-merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf", "text/plain", "",
    ]))  # fmt: skip
    raw_kind = draw(st.sampled_from(["json", "json", "json", "yaml", "bytes", "deep", "patch", "none", "protobuf"]))
    body: bytes | None
    if raw_kind == "protobuf":
        # The object in protobuf, as client-go would send it (with its envelope's kind, which may not be the
        # endpoint's), and sometimes cut short: what the encoder cannot write goes as bytes instead.
        try:
            kind = draw(st.sampled_from([r.kind, r.kind, r.kind, "Secret", "Nope"]))
            body = protobuf.encode_object(obj, r.api_version, kind)
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
            body = protobuf.MAGIC + draw(st.binary(max_size=64))
        if draw(st.integers(0, 3)) == 0:
            body = body[: draw(st.integers(0, len(body)))]
        content_type = "application/vnd.kubernetes.protobuf"
    elif raw_kind == "json":
        body = json.dumps(obj).encode()
    elif raw_kind == "yaml":
        import yaml

        body = yaml.safe_dump(obj).encode()
    elif raw_kind == "bytes":
        body = draw(st.binary(max_size=64))
    elif raw_kind == "deep":
        body = _deep(draw(st.sampled_from([150, 250, 2000])))
    elif raw_kind == "patch":
        ops = draw(st.lists(st.fixed_dictionaries({
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            "path": st.sampled_from(["/metadata/labels", "/spec", "/metadata/name", "", "/x/y", "/metadata/labels/a"]),
            "from": st.sampled_from(["/metadata", "/spec", ""]), "value": _WILD,
        }), max_size=4))  # fmt: skip
        body = json.dumps(ops).encode()
    else:
        body = None
    headers = {"Content-Type": content_type}
    headers["Accept"] = draw(st.sampled_from([
        "application/json", "application/yaml", "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/vnd.kubernetes.protobuf", "text/html", "*/*",
    ]))  # fmt: skip
    if verb == "LIST":
        return "GET", collection + query, None, headers
    if verb == "WATCH":
        return "GET", collection + "?watch=1&timeoutSeconds=0" + query.replace("?", "&"), None, headers
    if verb == "POST" and not sub:
        return "POST", collection + query, body, headers
    return verb, f"{collection}/{name}{sub}{query}", body, headers


@pytest.fixture(scope="module")
def fuzz_server():
    server = APIServerProcess().start()
    server.create_namespace(NS)
    yield server
    server.cleanup()


def _sentinel(server: APIServerProcess) -> tuple[dict, dict]:
    _, cm = server.request("GET", f"/api/v1/namespaces/{NS}/configmaps/keep")
    _, ns = server.request("GET", f"/api/v1/namespaces/{NS}")
    return cm, ns  # type: ignore[return-value]


@settings(
    max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)  # fmt: skip
@given(req=requests())
def _fuzz_one(server: APIServerProcess, seen: dict[int, int], req: tuple[str, str, bytes | None, dict]) -> None:
    method, path, body, headers = req
    status, answer = server.request(method, path, body, headers.get("Content-Type", ""), headers)
    seen[status] = seen.get(status, 0) + 1
    assert status < 500, (method, path, body[:300] if body else None, headers, answer)
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        assert answer.get("code") == status or answer.get("status") == "Success", answer


@pytest.mark.timeout(max(300, EXAMPLES // 8))
def test_fuzzed_requests_never_get_a_5xx_and_lose_nothing(fuzz_server):
    ok_status, _ = fuzz_server.request("POST", f"/api/v1/namespaces/{NS}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "finalizers": ["example.com/hold"]},
        "data": {"a": "1"},
    })  # fmt: skip
    assert ok_status == 201
    before = _sentinel(fuzz_server)
    seen: dict[int, int] = {}
    random.seed(0)
    _fuzz_one(fuzz_server, seen)
    # No request named the sentinel or its namespace: whatever the others did, those two are as they were.
    assert _sentinel(fuzz_server) == before
    assert sum(seen.values()) >= EXAMPLES * 0.9, seen
    assert any(400 <= s < 500 for s in seen) and any(s < 300 for s in seen), seen


# Server-side apply has its own way in (the field manager merges, prunes and owns): fuzzed configurations of
# every kind, some with the kind's apiVersion and kind and a name so that they get past the first checks, applied
# by a few managers, with and without force, to the object and its status.
APPLY_EXAMPLES = max(200, EXAMPLES // 5)


@st.composite
def applies(draw: st.DrawFn) -> tuple[str, str, bytes | None, dict[str, str]]:
    r = draw(st.sampled_from([r for r in _RESOURCES if r.plural not in ("bindings", "namespaces")]))
    base = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
    collection = f"{base}/namespaces/{NS}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
    name = draw(st.sampled_from(["a1", "a2"]))
    obj = draw(body_for(r.group, r.version, r.kind))
    if isinstance(obj, dict) and draw(st.integers(0, 4)):
        obj["apiVersion"], obj["kind"] = r.api_version, r.kind
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        md["name"] = name
        md.pop("managedFields", None) if draw(st.integers(0, 5)) else None
    sub = draw(st.sampled_from(["", "", "", "/status"]))
    manager = draw(st.sampled_from(["a", "b", "kubectl"]))
    force = draw(st.sampled_from(["", "&force=true"]))
    body = json.dumps(obj).encode()
    if draw(st.integers(0, 3)) == 0:
        import yaml

        body = yaml.safe_dump(obj).encode()
    return (
        "PATCH",
        f"{collection}/{name}{sub}?fieldManager={manager}{force}",
        body,
        {"Content-Type": "application/apply-patch+yaml"},
    )


@settings(
    max_examples=APPLY_EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)  # fmt: skip
@given(req=applies())
def _fuzz_apply(server: APIServerProcess, seen: dict[int, int], req: tuple[str, str, bytes | None, dict]) -> None:
    _fuzz_one.hypothesis.inner_test(server, seen, req)  # type: ignore[attr-defined]


@pytest.mark.timeout(max(300, APPLY_EXAMPLES // 4))
def test_fuzzed_applies_never_get_a_5xx_and_lose_nothing(fuzz_server):
    before = _sentinel(fuzz_server)
    seen: dict[int, int] = {}
    _fuzz_apply(fuzz_server, seen)
    assert _sentinel(fuzz_server) == before
    assert any(s in (200, 201) for s in seen) and any(400 <= s < 500 for s in seen), seen
