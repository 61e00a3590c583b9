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
from pyk8s.api.protobuf.schema import Field, Kind, Message, _tables, all_messages, message, message_name_for
from pyk8s.api.types.codec import codec_for

from . import protobuf_reference as ref

POD = "io.k8s.api.core.v1.Pod"


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
    return None


def _draw_value(data: st.DataObject, f: Field, depth: int) -> Any:
    scalar = _scalar(f)
    if scalar is not None:
        return data.draw(scalar)
    assert f.message is not None
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
    assert results[0] == results[1]


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
