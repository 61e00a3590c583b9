"""Fuzzing the CRD server: requests of every verb and content type to a custom resource whose CRD uses every
schema feature (bounds, patterns, enums, int-or-string, embedded resources, preserved fields, set and map
lists, defaults, a CEL rule, status and scale), with bodies shaped by its schema and then broken; and CRDs
themselves, valid ones mutated at random. No answer may be a 5xx, every error must be a Status, and a sentinel
custom resource must come through unchanged. Bounded in count, so it ends by itself."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.testing.cluster import APIServerProcess

EXAMPLES = int(os.environ.get("PYK8S_FUZZ_EXAMPLES", "2500")) // 3
NS = "fuzz"
GROUP = "fuzz.example.com"

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["replicas"],
    "x-kubernetes-validations": [{"rule": "self.minReplicas <= self.replicas", "message": "too few"}],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
        "minReplicas": {"type": "integer", "default": 0},
        "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$", "maxLength": 64},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]},
        "port": {"x-kubernetes-int-or-string": True},
        "ratio": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": True, "maximum": 10},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}, "maxItems": 5},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "port": {"type": "integer"}}},
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 4},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "nullable": {"type": "string", "nullable": True},
        "choice": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                   "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
    },
}  # fmt: skip

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["gz"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                                         {"name": "When", "type": "date", "jsonPath": ".spec.when"}],
            "selectableFields": [{"jsonPath": ".spec.mode"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": SPEC_SCHEMA,
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
        }],
    },
}  # fmt: skip

_WILD = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=12), st.sampled_from(["", "a/b", "\x00", "2024-01-01T00:00:00Z", "1e30", "-1"])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)  # fmt: skip


def shaped(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values fitting `schema` most of the time, and anything at all now and then."""
    if not isinstance(schema, dict) or depth > 5:
        return _WILD
    t = schema.get("type")
    if "properties" in schema:
        props = {k: shaped(v, depth + 1) for k, v in schema["properties"].items()}
        base: st.SearchStrategy[Any] = st.fixed_dictionaries({}, optional={**props, "unknown": _WILD})
    elif t == "object":
        extra = schema.get("additionalProperties")
        base = st.dictionaries(st.text(max_size=6), shaped(extra, depth + 1) if extra else _WILD, max_size=3)
    elif t == "array":
        base = st.lists(shaped(schema.get("items"), depth + 1), max_size=4)
    elif t == "integer":
        base = st.one_of(st.integers(-5, 120), st.sampled_from([2**63, -(2**63) - 1, 1.5]))
    elif t == "number":
        base = st.one_of(st.floats(-20, 20), st.integers(-20, 20))
    elif t == "string":
        base = st.one_of(st.sampled_from(["Fast", "Slow", "nginx:1", "BAD IMAGE", "", "2024-01-01T00:00:00Z"]),
                         st.text(max_size=20))  # fmt: skip
    else:
        base = _WILD
    return st.one_of(base, base, base, _WILD, st.none())


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes | None, dict[str, str]]:
    collection = f"/apis/{GROUP}/v1/namespaces/{NS}/gizmos"
    name = draw(st.sampled_from(["g1", "g2", "g3", "..", "x" * 300]))
    obj: Any = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name},
                "spec": draw(shaped(SPEC_SCHEMA)), "status": draw(_WILD)}  # fmt: skip
    if draw(st.integers(0, 5)) == 0:
        obj = draw(_WILD)
    elif draw(st.integers(0, 5)) == 0:
        obj["metadata"] = draw(_WILD)
    sub = draw(st.sampled_from(["", "", "", "/status", "/scale", "/nope"]))
    verb = draw(st.sampled_from(["POST", "PUT", "PATCH", "PATCH", "PATCH", "GET", "DELETE", "LIST", "WATCH"]))
    query = draw(st.sampled_from(["", "", "?fieldValidation=Strict", "?dryRun=All", "?fieldManager=fz",
                                  "?fieldSelector=spec.mode%3DFast", "?fieldSelector=spec.nope%3D1",
                                  "?fieldManager=fz&force=true"]))  # fmt: skip
    content_type = draw(st.sampled_from([
        "application/json", "application/json", "application/yaml", "application/merge-patch+json",
        "application/strategic-merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf",
    ]))  # fmt: skip
    kind = draw(st.sampled_from(["json", "json", "yaml", "patch", "bytes"]))
    if kind == "json":
        body: bytes | None = json.dumps(obj).encode()
    elif kind == "yaml":
        body = yaml.safe_dump(obj).encode()
    elif kind == "patch":
        body = json.dumps(draw(st.lists(st.fixed_dictionaries({
            "op": st.sampled_from(["add", "remove", "replace", "test"]),
            "path": st.sampled_from(["/spec/replicas", "/spec", "/metadata/labels", "/spec/ports/0", "/x"]),
            "value": _WILD}), max_size=3))).encode()  # fmt: skip
    else:
        body = draw(st.binary(max_size=48))
    headers = {"Content-Type": content_type, "Accept": draw(st.sampled_from([
        "application/json", "application/json;as=Table;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf",
        "application/yaml"]))}  # fmt: skip
    if verb == "LIST":
        return "GET", collection + query, None, headers
    if verb == "WATCH":
        return "GET", collection + "?watch=1&timeoutSeconds=0" + query.replace("?", "&"), None, headers
    if verb == "POST" and not sub:
        return "POST", collection + query, body, headers
    return verb, f"{collection}/{name}{sub}{query}", body, headers


def _mutate(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """A copy of a JSON value with one place somewhere in it replaced by anything."""
    if depth > 8 or not isinstance(value, dict | list) or not value or draw(st.integers(0, 4)) == 0:
        return draw(_WILD)
    value = copy.copy(value)
    key = draw(st.sampled_from(sorted(value) if isinstance(value, dict) else list(range(len(value)))))
    value[key] = _mutate(draw, value[key], depth + 1)
    return value


@st.composite
def crds(draw: st.DrawFn) -> tuple[str, str, bytes | None, dict[str, str]]:
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = f"gadgets.{GROUP}"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    for _ in range(draw(st.integers(1, 3))):
        crd["spec"] = _mutate(draw, crd["spec"])
    verb = draw(st.sampled_from(["POST", "PUT", "PATCH"]))
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    if verb == "POST":
        return "POST", path, json.dumps(crd).encode(), {"Content-Type": "application/json"}
    if verb == "PUT":
        return "PUT", f"{path}/gizmos.{GROUP}?dryRun=All", json.dumps(crd | {"metadata": CRD["metadata"]}).encode(), \
            {"Content-Type": "application/json"}  # fmt: skip
    return "PATCH", f"{path}/gizmos.{GROUP}?dryRun=All", json.dumps({"spec": crd["spec"]}).encode(), \
        {"Content-Type": "application/merge-patch+json"}  # fmt: skip


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess().start()
    s.create_namespace(NS)
    s.apply_crds(json.dumps(CRD), f"gizmos.{GROUP}")
    status, body = s.request("POST", f"/apis/{GROUP}/v1/namespaces/{NS}/gizmos", {
        "apiVersion": f"{GROUP}/v1", "kind": "Gizmo",
        "metadata": {"name": "keep", "finalizers": ["example.com/hold"]}, "spec": {"replicas": 2}})  # fmt: skip
    assert status == 201, body
    yield s
    s.cleanup()


def _check(server: APIServerProcess, seen: dict[int, int], req: tuple[str, str, bytes | None, dict]) -> None:
    method, path, body, headers = req
    status, answer = server.request(method, path, body, headers.get("Content-Type", ""), headers)
    seen[status] = seen.get(status, 0) + 1
    assert status < 500, (method, path, body[:400] if body else None, headers, answer)
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        assert answer.get("code") == status or answer.get("status") == "Success", answer


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )  # fmt: skip


@_settings(EXAMPLES)
@given(req=requests())
def _fuzz_custom_resource(server: APIServerProcess, seen: dict[int, int], req: Any) -> None:
    _check(server, seen, req)


@_settings(max(100, EXAMPLES // 3))
@given(req=crds())
def _fuzz_crd(server: APIServerProcess, seen: dict[int, int], req: Any) -> None:
    _check(server, seen, req)


def _sentinel(server: APIServerProcess) -> Any:
    return server.request("GET", f"/apis/{GROUP}/v1/namespaces/{NS}/gizmos/keep")


@pytest.mark.timeout(max(300, EXAMPLES // 4))
def test_fuzzed_custom_resource_requests_never_get_a_5xx(server):
    before = _sentinel(server)
    seen: dict[int, int] = {}
    _fuzz_custom_resource(server, seen)
    assert _sentinel(server) == before
    assert any(s < 300 for s in seen) and any(400 <= s < 500 for s in seen), seen


@pytest.mark.timeout(max(300, EXAMPLES // 4))
def test_fuzzed_crds_never_get_a_5xx(server):
    seen: dict[int, int] = {}
    _fuzz_crd(server, seen)
    assert any(400 <= s < 500 for s in seen), seen
    # the served CRD was never changed (every write to it was a dry run), and still serves
    assert server.request("GET", f"/apis/{GROUP}/v1/namespaces/{NS}/gizmos/keep")[0] == 200
    # whatever was created meanwhile does not break discovery
    assert server.request("GET", "/apis")[0] == 200
