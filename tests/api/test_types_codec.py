"""The typed round trip (api/types/codec.py) rule by rule, against what Go's json.Unmarshal into upstream's
types and json.Marshal back make of the same input; and as properties: decoding is idempotent, and a value
already in stored form comes back unchanged."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.api import gotime
from pyk8s.api.types import type_decl
from pyk8s.api.types.codec import (
    Bool,
    Bytes,
    DecodeError,
    Decoder,
    Duration,
    Float,
    Int,
    Interface,
    IntOrString,
    Map,
    Pointer,
    Quantity,
    SchemaOrArray,
    SchemaOrBool,
    SchemaOrStringArray,
    Slice,
    String,
    Struct,
    Time,
    codec_for,
    decoder_for,
    unknown_paths,
)


def decode(group: str, version: str, kind: str, obj: dict, unknown: list | None = None) -> dict:
    codec = codec_for(group, version, kind)
    assert codec is not None
    return codec.decode(json.loads(json.dumps(obj)), unknown)


def test_every_served_kind_has_a_type() -> None:
    from pyk8s.api.resources import TABLE

    for r in TABLE.resources:  # stored or only served (bindings, events.k8s.io, autoscaling/v1)
        assert codec_for(r.group, r.version, r.kind) is not None, (r.group_version, r.kind)
    assert type_decl.table()["source"] == {
        "k8s.io/api": "v0.32.0", "k8s.io/apimachinery": "v0.32.0",
        "k8s.io/apiextensions-apiserver": "v0.32.4", "k8s.io/kube-aggregator": "v0.32.4",
    }  # fmt: skip
    assert type_decl.kind_type("apiregistration.k8s.io", "v1", "APIService") == (
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
    )


@pytest.mark.parametrize(
    "group, kind, spec, status",
    [
        ("apps", "StatefulSet", {}, {"replicas": 0, "availableReplicas": 0}),
        ("apps", "ReplicaSet", {}, {"replicas": 0}),
        ("apps", "Deployment", {}, {}),
        ("apps", "DaemonSet", {},
         {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
        ("batch", "Job", {}, {}),
    ],
)  # fmt: skip
def test_fields_go_always_writes_get_their_zero_value(group: str, kind: str, spec: dict, status: dict) -> None:
    out = decode(group, "v1", kind, {"metadata": {"name": "x"}, "spec": spec, "status": {}})
    assert out["status"] == status
    assert out["metadata"] == {"name": "x", "creationTimestamp": None}  # a zero metav1.Time is written as null


def test_null_means_what_it_means_to_go() -> None:
    out = decode("apps", "v1", "Deployment", {
        "metadata": {"name": None, "labels": None},
        "spec": {"replicas": None, "paused": None, "selector": None, "strategy": None,
                 "template": {"spec": {"containers": [None, {"name": "c", "args": [None, "a"]}]}}},
    })  # fmt: skip
    spec = out["spec"]
    # a nil pointer, slice or map left out where omitempty; a struct or a scalar keeps its zero value
    assert "replicas" not in spec and "paused" not in spec
    assert spec["selector"] is None  # *LabelSelector without omitempty: written as null
    assert spec["strategy"] == {}
    assert out["metadata"] == {"creationTimestamp": None}
    containers = spec["template"]["spec"]["containers"]
    assert containers[0] == {"name": "", "resources": {}}  # a null element is the element's zero value
    assert containers[1]["args"] == ["", "a"]


def test_omitempty_leaves_out_empty_values_but_a_pointer_keeps_an_explicit_zero() -> None:
    out = decode("apps", "v1", "Deployment", {
        "metadata": {"name": "", "labels": {}, "finalizers": []},
        "spec": {"replicas": 0, "paused": False, "minReadySeconds": 0, "revisionHistoryLimit": 0,
                 "template": {"spec": {"containers": [], "hostNetwork": False, "nodeSelector": {}}}},
    })  # fmt: skip
    assert out["metadata"] == {"creationTimestamp": None}
    spec = out["spec"]
    assert spec["replicas"] == 0 and spec["revisionHistoryLimit"] == 0  # *int32
    assert "paused" not in spec and "minReadySeconds" not in spec
    assert spec["template"]["spec"] == {"containers": []}  # containers has no omitempty: an empty list stays


def test_unknown_fields_are_dropped_at_every_depth_with_their_paths() -> None:
    unknown: list = []
    out = decode("", "v1", "Pod", {
        "metadata": {"name": "p", "x": 1, "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "y": {"z": 1}}, {"name": "d", "ports": [{"containerPort": 1, "q": 2}]}],
                 "affinity": {"nodeAffinity": {"w": []}}},
        "top": True, "Spec": {},
    }, unknown)  # fmt: skip
    assert unknown_paths(unknown) == [
        "metadata.x", "spec.containers[0].y", "spec.containers[1].ports[0].q", "spec.affinity.nodeAffinity.w",
        "top", "Spec",  # keys are case-sensitive, as sigs.k8s.io/json reads them
    ]  # fmt: skip
    assert "x" not in out["metadata"] and "top" not in out and "Spec" not in out
    assert out["spec"]["containers"][0] == {"name": "c", "resources": {}}
    assert out["metadata"]["labels"] == {"a": "b"}  # a map's keys are its own, not unknown fields


@pytest.mark.parametrize(
    "kind, obj, message",
    [
        ("Pod", {"spec": "x"}, "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"),
        ("Pod", {"spec": {"containers": {}}},
         "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
        ("Pod", {"spec": {"containers": [{"ports": [{"containerPort": "80"}]}]}},
         "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
         "of type int32"),
        ("Pod", {"spec": {"priority": 2147483648}},
         "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority of type int32"),
        ("Pod", {"spec": {"activeDeadlineSeconds": 1.0}},
         "json: cannot unmarshal number 1.0 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64"),
        ("Pod", {"spec": {"hostNetwork": "true"}},
         "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"),
        ("Pod", {"status": {"phase": 1}},
         "json: cannot unmarshal number into Go struct field PodStatus.status.phase of type v1.PodPhase"),
        ("Pod", {"metadata": {"labels": {"a": 1}}},
         "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
        ("Pod", {"spec": {"volumes": [{"name": "v", "hostPath": {"path": []}}]}},
         "json: cannot unmarshal array into Go struct field HostPathVolumeSource.spec.volumes.hostPath.path "
         "of type string"),
        ("Pod", {"spec": {"overhead": {"cpu": "1mm"}}}, "unable to parse quantity's suffix"),
        ("Pod", {"spec": {"containers": [{"readinessProbe": {"httpGet": {"port": 1.5}}}]}},
         "json: cannot unmarshal number 1.5 into Go struct field HTTPGetAction.spec.containers.readinessProbe.httpGet."
         "port of type int32"),  # the Unmarshaler's own error, with the field's context as Go adds it
        ("Pod", {"metadata": {"creationTimestamp": 5}},
         "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"),
        ("Secret", {"data": {"k": "not base64!"}}, "illegal base64 data at input byte 3"),
        ("Secret", {"data": {"k": "YWJj="}}, "illegal base64 data at input byte 4"),
    ],
)  # fmt: skip
def test_type_mismatches_are_upstreams_decode_errors(kind: str, obj: dict, message: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode("", "v1", kind, obj)
    assert str(err.value) == message


def test_values_are_written_in_upstreams_form() -> None:
    out = decode("", "v1", "Pod", {
        "metadata": {"creationTimestamp": "2024-02-29T23:30:00.999-01:00",
                     "deletionTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 0.5, "memory": "1024Mi"},
                                                           "requests": {"cpu": " 250m ", "memory": "1e9"}},
                                 "livenessProbe": {"httpGet": {"port": "http"}, "tcpSocket": {"port": 8080}}}],
                 "overhead": {"cpu": None}},
    })  # fmt: skip
    assert out["metadata"]["creationTimestamp"] == "2024-03-01T00:30:00Z"
    assert out["metadata"]["deletionTimestamp"] == "2024-01-01T00:00:00Z"
    res = out["spec"]["containers"][0]["resources"]
    assert res == {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1e9"}}
    probe = out["spec"]["containers"][0]["livenessProbe"]
    assert probe["httpGet"]["port"] == "http" and probe["tcpSocket"]["port"] == 8080
    assert out["spec"]["overhead"] == {"cpu": "0"}  # a null Quantity is the zero quantity
    secret = decode("", "v1", "Secret", {"data": {"k": "YWJj\nZGVm"}})  # Go's base64 skips line breaks
    assert secret["data"] == {"k": "YWJjZGVm"}
    lease = decode("coordination.k8s.io", "v1", "Lease", {"spec": {"renewTime": "2024-01-01T01:00:00.000001+01:00"}})
    assert lease["spec"]["renewTime"] == "2024-01-01T00:00:00.000001Z"


@pytest.mark.parametrize(
    "value, layout, expected",
    [
        ("2024-01-01T00:00:00Z", gotime.RFC3339, "2024-01-01T00:00:00Z"),
        ("2024-01-01T00:00:00.999999999Z", gotime.RFC3339, "2024-01-01T00:00:00Z"),
        ("2024-01-01T5:00:00+05:00", gotime.RFC3339, "2024-01-01T00:00:00Z"),  # Go's "15" takes one digit too
        ("0000-01-01T00:00:00+00:01", gotime.RFC3339, "-0001-12-31T23:59:00Z"),
        ("2024-12-31T23:00:00-24:00", gotime.RFC3339, "2025-01-01T23:00:00Z"),
        ("2024-01-01T00:00:00.123456Z", gotime.RFC3339_MICRO, "2024-01-01T00:00:00.123456Z"),
    ],
)
def test_go_time_parse_accepts_what_go_accepts(value: str, layout: str, expected: str) -> None:
    s, ns = gotime.parse(value, layout)
    assert gotime.format_utc(s, ns, micro=layout == gotime.RFC3339_MICRO) == expected


@pytest.mark.parametrize(
    "value, layout, message",
    [
        ("garbage", gotime.RFC3339,
         'parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"'),
        ("2024-1-01T00:00:00Z", gotime.RFC3339,
         'parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01"'),
        ("2024-13-01T00:00:00Z", gotime.RFC3339, 'parsing time "2024-13-01T00:00:00Z": month out of range'),
        ("2023-02-29T00:00:00Z", gotime.RFC3339, 'parsing time "2023-02-29T00:00:00Z": day out of range'),
        ("2024-01-01T00:00:00", gotime.RFC3339,
         'parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"'),
        ("2024-01-01T00:00:00Zjunk", gotime.RFC3339, 'parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"'),
        ("2024-01-01 00:00:00Z", gotime.RFC3339,
         'parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T"'),
        ("2024-01-01T00:00:00Z", gotime.RFC3339_MICRO,
         'parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'),
    ],
)  # fmt: skip
def test_go_time_parse_errors_are_gos(value: str, layout: str, message: str) -> None:
    with pytest.raises(gotime.GoTimeError) as err:
        gotime.parse(value, layout)
    assert str(err.value) == message


# -- apiextensions.k8s.io/v1 and apiregistration.k8s.io/v1 -------------------------------------------------

_SCHEMA_PATH = "JSONSchemaProps.spec.versions.schema.openAPIV3Schema"


def crd(schema: dict) -> dict:
    """A CustomResourceDefinition with one version whose schema is `schema`."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}  # fmt: skip


def crd_schema(schema: dict, unknown: list | None = None) -> dict:
    out = decode("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd(schema), unknown)
    return out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def test_a_crd_is_stored_in_gos_form() -> None:
    out = decode("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd({"type": "object"}))
    # status and its acceptedNames are structs, conditions and storedVersions have no omitempty
    assert out["status"] == {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None}
    assert out["spec"]["versions"][0] == {"name": "v1", "served": True, "storage": True,
                                          "schema": {"openAPIV3Schema": {"type": "object"}}}  # fmt: skip


def test_an_unknown_schema_keyword_is_an_unknown_field() -> None:
    unknown: list = []
    schema = crd_schema({"type": "object", "properties": {"x": {"type": "string", "minLenght": 1}},
                         "additionalProperties": {"type": "string", "bogus": 1},
                         "items": {"type": "string", "propertyNames": {"pattern": "foo"}}}, unknown)  # fmt: skip
    # JSONSchemaProps is a struct like any other: an unknown keyword under `properties` is reported...
    assert unknown_paths(unknown) == ["spec.versions[0].schema.openAPIV3Schema.properties.x.minLenght"]
    # ... but the JSONSchemaPropsOr* types read their content with a json.Unmarshal of their own, which reports
    # nothing: under `items` and `additionalProperties` an unknown keyword is dropped silently (as a real
    # cluster does even under fieldValidation=Strict: kubernetes/kubernetes#128033).
    assert schema == {"type": "object", "properties": {"x": {"type": "string"}},
                      "additionalProperties": {"type": "string"}, "items": {"type": "string"}}  # fmt: skip


@pytest.mark.parametrize(
    "value, stored",
    [
        (False, False),
        (True, True),
        ({"type": "integer", "minimum": 1.0}, {"type": "integer", "minimum": 1}),  # a float64 holding an integer
        ({}, {}),
        (None, "absent"),  # a nil pointer, left out
    ],
)
def test_additional_properties_is_a_bool_or_a_schema(value: object, stored: object) -> None:
    schema = crd_schema({"type": "object", "additionalProperties": value})
    assert schema.get("additionalProperties", "absent") == stored


@pytest.mark.parametrize("value", ["true", 1, [], [{"type": "string"}]])
def test_additional_properties_of_another_shape_is_upstreams_error(value: object) -> None:
    with pytest.raises(DecodeError) as err:
        crd_schema({"type": "object", "additionalProperties": value})
    assert str(err.value) == "boolean or JSON schema expected"


@pytest.mark.parametrize(
    "value, stored",
    [
        ({"type": "string"}, {"type": "string"}),
        ([{"type": "string"}, None, {"type": "integer"}], [{"type": "string"}, {}, {"type": "integer"}]),
        ([], "absent"),  # an empty list is written as null by MarshalJSON: no items
        ("string", "absent"),  # neither a schema nor a list: read as no value, without an error
        (7, "absent"),
    ],
)
def test_items_is_a_schema_or_a_list_of_schemas(value: object, stored: object) -> None:
    schema = crd_schema({"type": "array", "items": value})
    assert schema.get("items", "absent") == stored


@pytest.mark.parametrize(
    "schema, message",
    [
        # a mismatch inside a JSONSchemaPropsOr* value carries the context of the field that holds it, not its own
        ({"items": {"type": 5}}, f"json: cannot unmarshal number into Go struct field {_SCHEMA_PATH}.items "
                                 "of type string"),
        ({"items": [5]}, f"json: cannot unmarshal number into Go struct field {_SCHEMA_PATH}.items "
                         "of type v1.JSONSchemaProps"),
        ({"properties": {"a": {"additionalProperties": {"properties": {"b": {"maxLength": "3"}}}}}},
         f"json: cannot unmarshal string into Go struct field {_SCHEMA_PATH}.properties.additionalProperties "
         "of type int64"),
        ({"dependencies": {"a": ["b", 1]}}, f"json: cannot unmarshal number into Go struct field "
                                            f"{_SCHEMA_PATH}.dependencies of type string"),
        ({"x-kubernetes-int-or-string": "true"}, f"json: cannot unmarshal string into Go struct field "
                                                 f"{_SCHEMA_PATH}.x-kubernetes-int-or-string of type bool"),
        ({"maximum": "5"}, f"json: cannot unmarshal string into Go struct field {_SCHEMA_PATH}.maximum "
                           "of type float64"),
        ({"properties": {"a": {"required": "x"}}}, f"json: cannot unmarshal string into Go struct field "
                                                    f"{_SCHEMA_PATH}.properties.required of type []string"),
        ({"properties": []}, f"json: cannot unmarshal array into Go struct field {_SCHEMA_PATH}.properties "
                             "of type map[string]v1.JSONSchemaProps"),
    ],
)  # fmt: skip
def test_schema_type_mismatches_are_upstreams_decode_errors(schema: dict, message: str) -> None:
    with pytest.raises(DecodeError) as err:
        crd_schema(schema)
    assert str(err.value) == message


def test_int_or_string_default_enum_and_dependencies_keep_their_json() -> None:
    schema = crd_schema({
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                     "default": 8080},
            "off": {"type": "string", "x-kubernetes-int-or-string": False},  # the zero value, omitempty
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                       "default": {"a": [1, None, {"b": True}], "c": 1.5, "d": "e"}},
            "mode": {"type": "string", "enum": ["a", None, 1, {"x": []}], "default": "a", "example": None},
            "n": {"type": "number", "maximum": 2.5, "minimum": -1.0, "multipleOf": 10**20},
        },
        "dependencies": {"a": ["b", None], "c": {"required": ["d"]}, "e": None, "f": []},
    })  # fmt: skip
    props = schema["properties"]
    assert props["port"] == {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                             "default": 8080}  # fmt: skip
    assert props["off"] == {"type": "string"}
    assert props["config"]["default"] == {"a": [1, None, {"b": True}], "c": 1.5, "d": "e"}  # any JSON, as sent
    assert props["mode"] == {"type": "string", "enum": ["a", None, 1, {"x": []}], "default": "a"}  # null: nil
    assert props["n"] == {"type": "number", "maximum": 2.5, "minimum": -1, "multipleOf": 1e20}  # float64s
    # a list of property names or a schema; anything else, and an empty list, is written as null
    assert schema["dependencies"] == {"a": ["b", ""], "c": {"required": ["d"]}, "e": None, "f": None}


def test_an_api_service_is_stored_in_gos_form() -> None:
    out = decode("apiregistration.k8s.io", "v1", "APIService", {
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                 "group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True},
    })  # fmt: skip
    assert out["spec"] == {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                           "group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True,
                           "groupPriorityMinimum": 0, "versionPriority": 0}  # fmt: skip
    assert out["status"] == {}
    with pytest.raises(DecodeError) as err:
        decode("apiregistration.k8s.io", "v1", "APIService", {"spec": {"versionPriority": "1"}})
    assert str(err.value) == (
        "json: cannot unmarshal string into Go struct field APIServiceSpec.spec.versionPriority of type int32"
    )


# -- properties --------------------------------------------------------------------------------------------

_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=8))
_ANY_JSON = st.recursive(
    _JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip


def values_of(dec: Decoder, depth: int = 0) -> st.SearchStrategy:
    """Values a client could send for a Go type: right ones mostly, with nulls and unknown fields among them."""
    if isinstance(dec, Pointer):
        return st.one_of(st.none(), values_of(dec.elem, depth))
    if isinstance(dec, String):
        return st.text(max_size=10)
    if isinstance(dec, Bool):
        return st.booleans()
    if isinstance(dec, Int):
        return st.integers(dec.lo, dec.hi)
    if isinstance(dec, Float):
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if isinstance(dec, Bytes):
        return st.binary(max_size=8).map(lambda b: __import__("base64").b64encode(b).decode())
    if isinstance(dec, Time):
        seconds = st.integers(-62135596800, 253402300799)  # years 1 to 9999
        if dec.micro:
            return st.builds(lambda s, us: gotime.format_utc(s, us * 1000, micro=True), seconds, st.integers(0, 999999))
        return seconds.map(gotime.format_utc)
    if isinstance(dec, Duration):
        return st.sampled_from(["1s", "1m30s", "0s", "1.5h", "300ms"])
    if isinstance(dec, Quantity):
        return st.sampled_from(["1", "100m", "1Gi", "0.5", "1500Mi", "2e3", 3, "1k"])
    if isinstance(dec, IntOrString):
        return st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from(["25%", "http", ""]))
    if isinstance(dec, Interface):
        return _ANY_JSON
    if depth > 6:
        return st.none()
    if isinstance(dec, SchemaOrBool):
        return st.one_of(st.booleans(), values_of(dec.schema, depth + 1))
    if isinstance(dec, SchemaOrArray | SchemaOrStringArray):
        other = dec.schemas if isinstance(dec, SchemaOrArray) else dec.strings
        return st.one_of(values_of(dec.schema, depth + 1), values_of(other, depth + 1), _JSON_LEAF)
    if isinstance(dec, Slice):
        return st.one_of(st.none(), st.lists(values_of(dec.elem, depth + 1), max_size=2))
    if isinstance(dec, Map):
        return st.one_of(st.none(), st.dictionaries(st.text(max_size=6), values_of(dec.elem, depth + 1), max_size=2))
    assert isinstance(dec, Struct)
    fields = {name: values_of(f.decoder, depth + 1) for name, f in dec.fields.items()}
    return st.fixed_dictionaries(
        {}, optional={**fields, "notAField": _ANY_JSON}
    )  # fmt: skip


KINDS_UNDER_TEST = [("", "v1", "Pod"), ("apps", "v1", "Deployment"), ("", "v1", "Service"), ("batch", "v1", "CronJob"),
                    ("", "v1", "Node"), ("", "v1", "Event"), ("autoscaling", "v2", "HorizontalPodAutoscaler"),
                    ("rbac.authorization.k8s.io", "v1", "ClusterRole"), ("", "v1", "Secret"),
                    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
                    ("apiregistration.k8s.io", "v1", "APIService")]  # fmt: skip


@pytest.mark.parametrize("gvk", KINDS_UNDER_TEST, ids=[k for _, _, k in KINDS_UNDER_TEST])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_decode_is_idempotent_and_keeps_stored_form(gvk: tuple[str, str, str], data: st.DataObject) -> None:
    decoder = decoder_for(type_decl.kind_type(*gvk) or "")
    sent = data.draw(values_of(decoder))
    once = decoder.decode(json.loads(json.dumps(sent)), None)
    # What is stored reads back as itself (decode∘encode is the identity on stored objects) ...
    again = decoder.decode(json.loads(json.dumps(once)), None)
    assert again == once
    # ... and it is JSON a Go client reads: no field outside the type, nothing Go would leave out.
    unknown: list = []
    decoder.decode(json.loads(json.dumps(once)), unknown)
    assert unknown == []


@given(
    seconds=st.integers(-62135596800 + 86400, 253402300799 - 86400),  # a day inside years 1 to 9999
    offset=st.integers(-24 * 60, 24 * 60),
    nanos=st.integers(0, 999_999_999),
)
def test_go_time_round_trips_any_instant_and_offset(seconds: int, offset: int, nanos: int) -> None:
    import datetime as dt

    utc = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    assert gotime.format_utc(seconds) == f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"
    # The same instant written at another offset, with a fraction, reads back as itself.
    local = utc + dt.timedelta(minutes=offset)
    sign, off = ("+" if offset >= 0 else "-"), abs(offset)
    text = f"{local.year:04d}-{local:%m-%dT%H:%M:%S}.{nanos:09d}{sign}{off // 60:02d}:{off % 60:02d}"
    assert gotime.parse(text) == (seconds, nanos)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_event_conversion_output_is_in_stored_form(data: st.DataObject) -> None:
    """The events.k8s.io/v1 <-> core/v1 converters only move values between fields of the same Go types, so
    their output needs only its top level fixed (conversion.py relies on it): check against a full decode."""
    from pyk8s.api.meta import json_copy
    from pyk8s.api.resources import TABLE
    from pyk8s.apiserver.conversion import convert

    core, events = TABLE.get("", "v1", "events"), TABLE.get("events.k8s.io", "v1", "events")
    assert core is not None and events is not None
    for source, target in ((core, events), (events, core)):
        codec = codec_for(source.group, source.version, source.kind)
        assert codec is not None
        stored = codec.decode(json.loads(json.dumps(data.draw(values_of(codec.decoder)))))
        stored["metadata"]["name"] = "e"
        out = convert(stored, source, target)
        full = codec_for(target.group, target.version, target.kind).decode(json_copy(out))  # type: ignore[union-attr]
        assert out == full
