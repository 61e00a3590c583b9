"""The protobuf codec against upstream's schema and an independent reader: every message compiles and agrees
with the Go types' protobuf tags; objects of any shape the schema allows survive encode → the official protobuf
runtime (parse, serialize) → decode; the C codec and the Python reference write the same bytes and read the same
dicts; malformed bodies get upstream's errors."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.api import gotime
from pyk8s.api.duration import format_go_duration
from pyk8s.api.protobuf import codec
from pyk8s.api.protobuf.schema import (
    Field,
    Kind,
    Message,
    _tables,
    all_messages,
    message,
    message_name_for,
    union_parts,
)
from pyk8s.api.types.codec import codec_for

from . import protobuf_reference as ref

POD = "io.k8s.api.core.v1.Pod"
CRD = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
SCHEMA = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
API_SERVICE = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"


def test_every_message_compiles_and_matches_the_go_tags():
    messages, go_types, kinds = _tables()
    compiled = all_messages()
    assert len(compiled) == len(messages) > 1000
    assert [m.index for m in compiled] == list(range(len(compiled)))
    # The Go struct tags name the same field numbers as generated.proto (two upstream sources, one fact).
    checked = 0
    for name, fields in messages.items():
        by_number = {f[0]: f for f in fields}
        for go_field in (go_types.get(name) or {}).get("fields", ()):
            tag_text = go_field.get("protobuf")
            if not tag_text or tag_text == "-":
                continue
            number = int(tag_text.split(",")[1])
            names = [p.split("=", 1)[1] for p in tag_text.split(",") if p.startswith("name=")]
            assert number in by_number and names in ([], [by_number[number][1]]), (name, number)
            checked += 1
    assert checked > 3500
    # Every kind the API serves has its message; lists too.
    for gv, ks in kinds.items():
        for kind in ks:
            assert message_name_for(gv, kind) is not None, (gv, kind)


def test_json_keys_come_from_the_go_types_not_the_proto_names():
    hook = message("io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration")
    assert [f.key for f in hook.fields] == ["metadata", "webhooks"]  # the proto field is `Webhooks`
    volume = message("io.k8s.api.core.v1.Volume")
    assert [(f.key, f.inline) for f in volume.fields] == [("name", False), ("", True)]  # volumeSource is inlined
    meta = message("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    kinds = {f.key: f.kind for f in meta.fields}
    assert kinds["creationTimestamp"] is Kind.TIME and kinds["labels"] is Kind.MESSAGE
    assert message("io.k8s.apimachinery.pkg.apis.meta.v1.APIResource").by_number[4].kind is Kind.STRING_LIST


# -- objects of any shape the schema allows ---------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_QUANTITIES = st.sampled_from(["1", "0", "100m", "1Gi", "1500Mi", "2.5", "1e3", "-4", "12k"])


def _scalar(f: Field) -> st.SearchStrategy[Any] | None:
    kind = f.kind
    if kind is Kind.STRING:
        return _TEXT
    if kind is Kind.BOOL:
        return st.booleans()
    if kind is Kind.INT:
        return st.integers(-(2**31), 2**31 - 1) if f.int32 else st.integers(-(2**63), 2**63 - 1)
    if kind is Kind.BYTES:
        return st.binary(max_size=16).map(lambda b: base64.b64encode(b).decode())
    if kind is Kind.TIME:
        return st.integers(-(2**34), 2**37).map(gotime.format_utc)
    if kind is Kind.MICRO_TIME:
        return st.tuples(st.integers(0, 2**35), st.integers(0, 999_999)).map(
            lambda t: gotime.format_utc(t[0], t[1] * 1000, micro=True)
        )
    if kind is Kind.DURATION:
        return st.integers(-(2**40), 2**40).map(format_go_duration)
    if kind is Kind.QUANTITY:
        return _QUANTITIES
    if kind is Kind.INT_OR_STRING:
        return st.one_of(st.integers(-(2**31), 2**31 - 1), _TEXT)
    if kind is Kind.RAW:
        leaf = st.one_of(st.integers(-(2**53), 2**53), _TEXT, st.booleans())
        return st.dictionaries(st.text(max_size=5), leaf, max_size=3)
    if kind is Kind.STRING_LIST:
        return st.lists(_TEXT, max_size=3)
    if kind is Kind.DOUBLE:  # (a float64 holding an integer reads back as that integer: equal in Python)
        return st.one_of(st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False))
    return None


def _draw_value(data: st.DataObject, f: Field, depth: int) -> Any:
    scalar = _scalar(f)
    if scalar is not None:
        return data.draw(scalar)
    assert f.message is not None
    if f.kind is Kind.UNION:  # an object, a non-empty list or a bool, as the message can hold
        obj, items, flag = union_parts(f.message)
        shapes = [shape for shape, field in (("object", obj), ("list", items), ("bool", flag)) if field is not None]
        shape = data.draw(st.sampled_from(shapes))
        if shape == "object":
            assert obj is not None and obj.message is not None
            return _draw_object(data, obj.message, depth + 1)
        if shape == "list":
            assert items is not None
            return [_draw_value(data, items, depth + 1) for _ in range(data.draw(st.integers(1, 2)))]
        return data.draw(st.booleans())
    return _draw_object(data, f.message, depth + 1)


def _draw_object(data: st.DataObject, msg: Message, depth: int) -> dict[str, Any]:
    """An object of a message: a few of its fields (fewer deeper down), each with a value of its type; inlined
    messages' fields in the same object."""
    out: dict[str, Any] = {}
    if depth > 4 or not msg.fields:
        return out
    most = max(1, 6 - depth)
    chosen = data.draw(st.lists(st.sampled_from(msg.fields), max_size=most, unique_by=lambda f: f.number))
    for f in chosen:
        if f.inline:
            assert f.message is not None
            for k, v in _draw_object(data, f.message, depth).items():
                out.setdefault(k, v)
        elif f.is_map:
            assert f.value is not None
            keys = data.draw(st.lists(_TEXT, min_size=1, max_size=2, unique=True))
            out[f.key] = {k: _draw_value(data, f.value, depth) for k in keys}
        elif f.repeated:
            n = data.draw(st.integers(1, 2))
            out[f.key] = [_draw_value(data, f, depth) for _ in range(n)]
            if f.kind is Kind.RAW and data.draw(st.booleans()):
                out[f.key].append(None)  # a null JSON value (a schema's enum) among the others
        else:
            out[f.key] = _draw_value(data, f, depth)
    return out


_KINDS = [
    POD,
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.core.v1.Secret",
    "io.k8s.api.core.v1.PersistentVolume",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.batch.v1.CronJob",
    "io.k8s.api.apps.v1.ControllerRevision",
    "io.k8s.api.authorization.v1.SubjectAccessReview",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.api.resource.v1beta1.ResourceSlice",
    CRD,
    SCHEMA,
    API_SERVICE,
]


@pytest.mark.parametrize("name", _KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_objects_survive_the_official_runtime(name: str, data: st.DataObject) -> None:
    msg = message(name)
    obj = _draw_object(data, msg, 0)
    ours = codec.encode_message(msg, obj)
    assert bytes(codec.py_encode_message(msg, obj)) == bytes(ours)  # the C codec writes what the reference writes
    parsed = ref.message_class(name)()
    parsed.ParseFromString(bytes(ours))  # the official runtime reads our bytes...
    again = parsed.SerializeToString()  # ...and writes them its own way (map order, field order)
    decoded = codec.decode_message(msg, again)
    assert decoded == obj
    assert codec.py_decode_message(msg, again) == decoded


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "0b7c", "resourceVersion": "12",
                     "creationTimestamp": "2026-11-28T12:00:00Z", "labels": {"b": "2", "a": "1"},
                     "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                        "time": "2026-11-28T12:00:00Z", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}]},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}},
                                 "livenessProbe": {"httpGet": {"path": "/", "port": "http"}}}],
                 "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}],
                 "terminationGracePeriodSeconds": 30, "priority": 0},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None,
                                                      "lastTransitionTime": "2026-11-28T12:00:01Z"}]},
    }  # fmt: skip


def test_a_pod_reads_as_upstream_wrote_it():
    body = codec.encode_object(_pod())
    api_version, kind, pod = ref.parse(body, POD)
    assert (api_version, kind) == ("v1", "Pod")
    assert pod.metadata.creationTimestamp.seconds == 1795867200 and pod.metadata.creationTimestamp.nanos == 0
    assert dict(pod.metadata.labels) == {"a": "1", "b": "2"}
    assert pod.spec.containers[0].resources.requests["cpu"].string == "100m"
    assert pod.spec.containers[0].livenessProbe.handler.httpGet.port.type == 1  # IntOrString: a string
    assert pod.spec.containers[0].livenessProbe.handler.httpGet.port.strVal == "http"
    assert pod.spec.volumes[0].volumeSource.configMap.localObjectReference.name == "cm"  # inlined twice in JSON
    assert orjson.loads(pod.metadata.managedFields[0].fieldsV1.Raw) == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}}
    }
    assert pod.spec.HasField("priority") and pod.spec.priority == 0  # a pointer's zero is written
    # Maps are written sorted by key, as Go's generated code writes them: the bytes are deterministic.
    assert codec.encode_object(_pod()) == body


def test_decoding_then_the_go_types_give_the_json_path_object():
    pod = _pod()
    via_protobuf = codec.decode_object(codec.encode_object(pod))
    pod_codec = codec_for("", "v1", "Pod")
    assert pod_codec is not None
    assert pod_codec.decode(via_protobuf, None) == pod_codec.decode(orjson.loads(orjson.dumps(pod)), None)


def _crd() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["size"], "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                     "properties": {
                         "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 2.5, "default": 3},
                         "port": {"x-kubernetes-int-or-string": True,
                                  "anyOf": [{"type": "integer"}, {"type": "string"}]},
                         "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                         "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                         "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                         "closed": {"type": "object", "additionalProperties": False},
                         "open": {"type": "object", "additionalProperties": True},
                         "mode": {"type": "string", "enum": ["a", None, 1], "default": {"any": ["json", 1.5]}},
                         "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                  "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
                     }},
        },
    }  # fmt: skip
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "uid": "u1", "resourceVersion": "7",
                     "creationTimestamp": "2026-11-28T12:00:00Z"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                                        "statusReplicasPath": ".status.size"}},
                               "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                             "jsonPath": ".spec.size"}]}],
                 "conversion": {"strategy": "None"}},
        "status": {"conditions": [{"type": "Established", "status": "True",
                                   "lastTransitionTime": "2026-11-28T12:00:01Z"}],
                   "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"]},
    }  # fmt: skip


def _api_service() -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                 "group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True,
                 "caBundle": "AAEC", "groupPriorityMinimum": 100, "versionPriority": 100},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints",
                                   "lastTransitionTime": "2026-11-28T12:00:00Z"}]},
    }  # fmt: skip


@pytest.mark.parametrize("make", [_crd, _api_service], ids=["CustomResourceDefinition", "APIService"])
def test_extension_kinds_round_trip_through_protobuf_as_through_json(make: Any) -> None:
    obj = make()
    group, _, version = obj["apiVersion"].rpartition("/")
    typed = codec_for(group, version, obj["kind"])
    assert typed is not None
    via_json = typed.decode(orjson.loads(orjson.dumps(obj)))
    body = codec.encode_object(via_json)
    msg = message(message_name_for(obj["apiVersion"], obj["kind"]) or "")
    assert bytes(codec.py_encode_message(msg, via_json)) == codec.unwrap(body)[2].tobytes()  # C and Python alike
    via_protobuf = typed.decode(codec.decode_object(body))
    assert codec.py_decode_message(msg, codec.unwrap(body)[2]) == codec.decode_message(msg, codec.unwrap(body)[2])
    # the same object, to the JSON text (an integer is not written as a float, nor the reverse)
    sort = orjson.OPT_SORT_KEYS
    assert orjson.dumps(via_protobuf, option=sort) == orjson.dumps(via_json, option=sort)


def test_a_crd_reads_as_upstream_wrote_it():
    obj = _crd()
    typed = codec_for("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
    assert typed is not None
    _, _, crd = ref.parse(codec.encode_object(typed.decode(obj)), CRD)
    root = crd.spec.versions[0].schema.openAPIV3Schema
    spec = root.properties["spec"]
    size = spec.properties["size"]
    assert size.HasField("minimum") and size.minimum == 1.0 and size.maximum == 2.5  # doubles
    assert size.default.raw == b"3"  # JSON: its text
    assert spec.properties["tags"].items.schema.type == "string"  # JSONSchemaPropsOrArray: one schema...
    assert [s.type for s in spec.properties["pair"].items.jSONSchemas] == ["string", "integer"]  # ... or a list
    labels = spec.properties["labels"].additionalProperties  # JSONSchemaPropsOrBool: a schema allows
    assert labels.allows and labels.schema.type == "string"
    closed, open_ = spec.properties["closed"].additionalProperties, spec.properties["open"].additionalProperties
    assert (closed.HasField("allows"), closed.allows, closed.HasField("schema")) == (True, False, False)
    assert (open_.allows, open_.HasField("schema")) == (True, False)
    assert [e.raw for e in spec.properties["mode"].enum] == [b'"a"', b"", b"1"]  # null: a JSON with no raw
    deps = spec.properties["blob"].dependencies  # JSONSchemaPropsOrStringArray
    assert list(deps["a"].property) == ["b"] and list(deps["c"].schema.required) == ["d"]
    assert spec.properties["port"].xKubernetesIntOrString
    assert crd.spec.versions[0].subresources.HasField("status")  # an empty message, present


def test_fields_a_newer_server_writes_are_skipped():
    msg = ref.message_class("io.k8s.api.core.v1.ConfigMap")()
    msg.metadata.name = "cm"
    msg.data["a"] = "b"
    raw = msg.SerializeToString() + b"\xf8\x07\x05" + b"\xfa\x07\x02hi"  # field 127 as a varint and as bytes
    body = codec.envelope("v1", "ConfigMap", raw)
    assert codec.decode_object(body) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                                         "data": {"a": "b"}}  # fmt: skip


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "empty data"),
        (b"{}", "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
        (b"k8s\x00", "empty body"),
        (b"k8s\x00\x0a\x05\x0a\x02v1", "unexpected EOF"),
        (codec.envelope("v1", "Pod", b"\x0a\x10short"), "unexpected EOF"),
        (codec.envelope("v1", "Pod", b"\x08\x01"), "proto: wrong wireType = 0 for field metadata"),
    ],
)
def test_malformed_bodies(body: bytes, message: str) -> None:
    with pytest.raises(codec.ProtobufError) as e:
        codec.decode_object(body)
    assert str(e.value) == message


def test_an_unknown_kind_is_named():
    with pytest.raises(codec.UnknownKind) as e:
        codec.decode_object(codec.envelope("v1", "Carp", b""))
    assert str(e.value) == 'no kind "Carp" is registered for version "v1"'


def test_watch_frames_read_back():
    pod = codec.encode_object(_pod())
    stream = codec.watch_frame("ADDED", pod) + codec.watch_frame("DELETED", pod)
    assert ref.watch_events(stream) == [("ADDED", pod), ("DELETED", pod)]


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=64), name=st.sampled_from(_KINDS))
def test_any_bytes_are_read_alike_or_refused_alike(raw: bytes, name: str) -> None:
    # Garbage never crashes either codec, and both agree on what it means (or that it means nothing).
    msg = message(name)
    results = []
    for decode in (codec.decode_message, codec.py_decode_message):
        try:
            results.append(("ok", decode(msg, raw)))
        except codec.ProtobufError as e:
            results.append(("error", str(e)))
        except ValueError as e:  # an embedded object (RawExtension) whose JSON does not parse
            results.append(("json", type(e).__name__))
    assert _same(results[0], results[1])


def _same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (a double on the wire may be one)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.skipif(not codec.fast(), reason="the C codec is not built")
def test_lengths_of_every_size_class_in_any_order_and_repeated_strings():
    """The C encoder reserves for a nested message the length bytes its type took last time; objects whose
    sizes jump between one, two and three length bytes, in both directions, still encode as the reference
    does. The decoder shares repeated short strings: every value still reads back equal."""
    msg = message("io.k8s.api.core.v1.Pod")
    sizes = [3, 300, 20000, 5, 20000, 200, 1, 70000, 2]
    for n in sizes:
        pod = {"metadata": {"name": "p", "labels": {"a": "x" * n, "b": "True"}, "annotations": {"c": "TCP"}},
               "spec": {"containers": [{"name": "c", "image": "i" * n, "args": ["True", "TCP", "x" * (n % 7)]}]}}  # fmt: skip
        fast = codec.encode_message(msg, pod)
        assert fast == codec.py_encode_message(msg, pod)
        assert codec.decode_message(msg, fast) == codec.py_decode_message(msg, fast) == pod


@pytest.mark.skipif(not codec.fast(), reason="the C codec is not built")
def test_keys_in_field_order_or_not_encode_alike():
    """The C encoder writes an object whose keys come in field-number order as it reads them, and sorts the
    others (for a while after one, every object of that type): objects in, out of, and back in order all
    encode as the reference does."""
    msg = message(POD)
    ordered = _pod()
    backwards = {k: ordered[k] for k in reversed(ordered)}
    backwards["spec"] = {k: ordered["spec"][k] for k in reversed(ordered["spec"])}
    expected = codec.py_encode_message(msg, ordered)
    for obj in [ordered, backwards, ordered, *[backwards] * 300, *[ordered] * 300, backwards]:
        assert codec.encode_message(msg, obj) == expected
