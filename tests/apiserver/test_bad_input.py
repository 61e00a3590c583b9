"""Bad input gets the 4xx upstream gives, with upstream's words, and changes nothing: wrong JSON types, names
that are not path segments, out-of-range numbers, malformed tokens, bodies that would amplify into huge or
deeply nested objects. Every case here answered 500 (or stored something no real server would) before."""

from __future__ import annotations

import pytest

from tests.apiserver.test_api_semantics import ok, pod


def cm(name: str, **extra: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


_CM = "/api/v1/namespaces/{ns}/configmaps"
_PODS = "/api/v1/namespaces/{ns}/pods"
_BOMB = b'metadata: {name: bomb}\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + b"".join(
    f"{x}: &{x} [{','.join(['*' + p] * 9)}]\n".encode() for p, x in zip("abcdef", "bcdefg", strict=True)
)

# (what, method, path, body, content type, extra headers, status, words the message must hold)
CASES = [
    ("a number for a name", "POST", _CM, {"metadata": {"name": 1}}, "application/json", {}, 400,
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct '
     "field ObjectMeta.metadata.name of type string"),
    ("a string for a pod spec", "POST", _PODS, {"metadata": {"name": "a"}, "spec": "x"}, "application/json", {},
     400, "cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"),
    ("a string for secret data", "POST", "/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "a"}, "data": "x"},
     "application/json", {}, 400, "Go struct field Secret.data of type map[string][]uint8"),
    ("a number for generateName", "POST", _CM, {"metadata": {"generateName": 5}}, "application/json", {}, 400,
     "Go struct field ObjectMeta.metadata.generateName of type string"),
    ("a number for an owner's apiVersion", "POST", _CM,
     {"metadata": {"name": "o", "ownerReferences": [{"apiVersion": 1, "kind": "X", "name": "x", "uid": "u"}]}},
     "application/json", {}, 400, "Go struct field OwnerReference.metadata.ownerReferences.apiVersion of type string"),
    ("a list for a ClusterRole's name", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
     {"metadata": {"name": ["evil"]}}, "application/json", {}, 400, "cannot unmarshal array into Go struct field"),
    ("an int32 out of range", "POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
     {"metadata": {"name": "c"}, "spec": {"request": "aGVsbG8=", "signerName": "a/b", "expirationSeconds": 1e30}},
     "application/json", {}, 400, "into Go struct field CertificateSigningRequestSpec.spec.expirationSeconds of type int32"),
    ("an integer that is a float literal", "POST", "/apis/apps/v1/namespaces/{ns}/deployments",
     {"metadata": {"name": "d"}, "spec": {"replicas": 1.5}}, "application/json", {}, 400,
     "cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("a timestamp that is not one", "POST", "/api/v1/namespaces/{ns}/events",
     {"metadata": {"name": "e"}, "involvedObject": {}, "firstTimestamp": "garbage"}, "application/json", {}, 400,
     'parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"'),
    ("a quantity that is not one", "POST", _PODS,
     {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "i",
                                                            "resources": {"limits": {"cpu": "lots"}}}]}},
     "application/json", {}, 400, "quantities must match the regular expression"),
    ("DeleteOptions with a list for preconditions", "DELETE", _CM + "/p", {"preconditions": [1]},
     "application/json", {}, 400, "Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
    ("DeleteOptions with a number for dryRun", "DELETE", _CM + "/p", {"dryRun": 5}, "application/json", {}, 400,
     "Go struct field DeleteOptions.dryRun of type []string"),
    ("a strategic patch with a string for containers", "PATCH", _PODS + "/p", {"spec": {"containers": "x"}},
     "application/strategic-merge-patch+json", {}, 422,
     "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container"),
    ("a strategic patch with an object for a volume name", "PATCH", _PODS + "/p",
     {"spec": {"volumes": [{"name": {}}]}}, "application/strategic-merge-patch+json", {}, 422,
     "Go struct field Volume.spec.volumes.name of type string"),
    ("a binding to a missing pod", "POST", "/api/v1/namespaces/{ns}/bindings",
     {"metadata": {"name": "nope"}, "target": {"name": "n1"}}, "application/json", {}, 404, 'pods "nope" not found'),
    ("a binding with no name", "POST", "/api/v1/namespaces/{ns}/bindings", {}, "application/json", {}, 400,
     "Name parameter required."),
    ("a binding with a string target", "POST", "/api/v1/namespaces/{ns}/bindings",
     {"metadata": {"name": "p"}, "target": "x"}, "application/json", {}, 400,
     "Go struct field Binding.target of type v1.ObjectReference"),
    ("a bearer token with a non-ASCII character", "GET", "/api/v1/namespaces", None, "application/json",
     {"Authorization": "Bearer t\u00e9st"}, 401, "Unauthorized"),
    ("the name ..", "GET", _CM + "/..", None, "application/json", {}, 400,
     "Name parameter invalid: \"..\": may not be '..'"),
    ("a name with a slash", "GET", _CM + "/a%2Fb", None, "application/json", {}, 400, "may not contain '/'"),
    ("a limit beyond int64", "GET", _CM + "?limit=99999999999999999999999", None, "application/json", {}, 400,
     'strconv.ParseInt: parsing "99999999999999999999999": value out of range'),
    ("a limit that is not a number", "GET", _CM + "?limit=ten", None, "application/json", {}, 400,
     'strconv.ParseInt: parsing "ten": invalid syntax'),
    ("a watch timeout beyond int64", "GET", _CM + "?watch=1&timeoutSeconds=1" + "0" * 30, None, "application/json",
     {}, 400, "value out of range"),
    ("100,000 nested arrays under Strict", "POST", _CM + "?fieldValidation=Strict",
     b'{"metadata":{"name":"d"},"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "application/json", {}, 400, "depth"),
    ("600 nested arrays", "POST", _CM, b'{"metadata":{"name":"d"},"x":' + b"[" * 600 + b"]" * 600 + b"}",
     "application/json", {}, 400, "exceeded max depth"),
    ("600 nested objects in a patch", "PATCH", _PODS + "/p", b'{"x":' + b'{"a":' * 600 + b"1" + b"}" * 600 + b"}",
     "application/merge-patch+json", {}, 400, "exceeded max depth"),
    ("600 nested arrays in YAML", "POST", _CM, b"metadata: {name: d}\nx: " + b"[" * 600 + b"]" * 600 + b"\n",
     "application/yaml", {}, 400, "exceeded max depth"),
    ("a 5,000-digit integer", "POST", _CM, b'{"metadata":{"name":"n"},"x":' + b"9" * 5000 + b"}", "application/json",
     {}, 400, "error decoding JSON body"),
    ("a gzip Content-Encoding on a plain body", "POST", _CM, cm("gz"), "application/json",
     {"Content-Encoding": "gzip"}, 400, "content-encoding"),
    ("YAML aliases that expand to a huge object", "POST", _CM, _BOMB, "application/yaml", {}, 400,
     "yaml: document contains excessive aliasing"),
    ("JSON patch copies that add 3 MiB", "PATCH", _PODS + "/p",
     [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 1000}}]
     + [{"op": "copy", "from": "/metadata/annotations", "path": "/metadata/labels"}] * 5000,
     "application/json-patch+json", {}, 422, "Unable to complete the copy, the accumulated size increase of copy is"),
    ("more than 10,000 JSON patch operations", "PATCH", _PODS + "/p",
     [{"op": "test", "path": "/metadata/name", "value": "p"}] * 10_001, "application/json-patch+json", {}, 413,
     "The allowed maximum operations in a JSON patch is 10000, got 10001"),
    ("a JSON patch nesting values 300 deep", "PATCH", _PODS + "/p",
     [{"op": "add", "path": "/metadata/annotations" + "/a" * i, "value": {}} for i in range(301)],
     "application/json-patch+json", {}, 422, "exceeded max depth"),
    ("an object larger than etcd's request limit", "POST", _CM, cm("big", data={"k": "x" * (2 * 1024 * 1024)}),
     "application/json", {}, 413, "etcdserver: request is too large"),
    ("an unknown subresource", "GET", _PODS + "/p/foo", None, "application/json", {}, 404,
     "the server could not find the requested resource"),
    ("an API that is not served", "GET", "/apis/foo.example/v1/things", None, "application/json", {}, 404,
     "the server could not find the requested resource"),
]  # fmt: skip


@pytest.fixture
def sentinel(cluster, ns):
    """A pod and a config map that no bad request may change."""
    ok(cluster.request("POST", _PODS.format(ns=ns), pod("p")), 201)
    return ok(cluster.request("POST", _CM.format(ns=ns), cm("keep", data={"a": "1"})), 201)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_upstreams_4xx_and_changes_nothing(cluster, ns, sentinel, case):
    _, method, path, body, content_type, headers, code, words = case
    before = ok(cluster.request("GET", _PODS.format(ns=ns) + "/p"))
    status, answer = cluster.request(method, path.format(ns=ns), body, content_type, headers)
    assert status == code, answer
    assert isinstance(answer, dict) and answer["kind"] == "Status", answer
    assert answer["code"] == code
    assert words in answer["message"], answer["message"]
    assert ok(cluster.request("GET", _PODS.format(ns=ns) + "/p")) == before
    assert ok(cluster.request("GET", _CM.format(ns=ns) + "/keep")) == sentinel


def test_unknown_fields_are_dropped_at_every_depth_and_reported(cluster, ns):
    body = cm("u", data={"a": "1"}, spec={"y": 2}, status={"x": 1}, foo="bar")
    body["metadata"]["bogus"] = {"deep": 1}
    status, created = cluster.request("POST", _CM.format(ns=ns), body)
    assert status == 201, created
    assert set(created) == {"apiVersion", "kind", "metadata", "data"}
    assert "bogus" not in created["metadata"]
    # A merge patch adding unknown fields stores none of them, and no managedFields entry claims them.
    patched = ok(
        cluster.request(
            "PATCH", _CM.format(ns=ns) + "/u", {"status": {"x": 1}, "spec": {"y": 2}, "foo": "bar"},
            "application/merge-patch+json",
        )
    )  # fmt: skip
    assert set(patched) == {"apiVersion", "kind", "metadata", "data"}
    assert all("f:status" not in (m.get("fieldsV1") or {}) for m in patched["metadata"].get("managedFields", []))
    # Strict names each one, with its path as upstream prints it.
    status, err = cluster.request("POST", _CM.format(ns=ns) + "?fieldValidation=Strict", body)
    assert status == 400
    for path in ("metadata.bogus", "spec", "status", "foo"):
        assert f'unknown field "{path}"' in err["message"]
    status, err = cluster.request(
        "POST", _PODS.format(ns=ns) + "?fieldValidation=Strict",
        {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i", "bar": 1}]}},
    )  # fmt: skip
    assert status == 400 and 'unknown field "spec.containers[0].bar"' in err["message"]


def test_a_status_patch_is_read_into_the_types_where_it_changes_the_pod(cluster, ns):
    """A merge patch of a pod's status (what a kubelet sends) is checked like a whole object: its unknown fields
    are reported with their paths, a value of the wrong type is a 422 that changes nothing, and the parts it
    did not touch come back as they were stored."""
    ok(cluster.request("POST", _PODS.format(ns=ns), {
        "metadata": {"name": "sp"}, "spec": {"containers": [{"name": "c", "image": "i"}]},
    }), 201)  # fmt: skip
    url = _PODS.format(ns=ns) + "/sp/status"
    before = ok(cluster.request("GET", _PODS.format(ns=ns) + "/sp"))
    status, err = cluster.request(
        "PATCH", url + "?fieldValidation=Strict", {"status": {"phase": "Running", "bogus": {"deep": 1}}},
        "application/merge-patch+json",
    )  # fmt: skip
    assert status == 422 and 'unknown field "status.bogus"' in err["message"], err
    status, err = cluster.request(
        "PATCH", url, {"status": {"hostIPs": [{"ip": 5}]}}, "application/merge-patch+json"
    )  # fmt: skip
    assert status == 422 and "cannot unmarshal number into Go struct field HostIP" in err["message"], err
    after = ok(cluster.request("GET", _PODS.format(ns=ns) + "/sp"))
    assert after == before
    patched = ok(cluster.request(
        "PATCH", url, {"status": {"phase": "Running", "podIP": "10.0.0.9", "extra": 1}}, "application/merge-patch+json",
    ))  # fmt: skip
    assert patched["status"]["phase"] == "Running" and "extra" not in patched["status"]
    assert patched["spec"] == before["spec"]


def test_values_are_stored_in_upstreams_form(cluster, ns):
    # Times in UTC with whole seconds (MicroTime: six digits), quantities as upstream writes them, YAML dates
    # and !!binary as go-yaml reads them, non-string keys as strings.
    ev = ok(cluster.request("POST", f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
        "firstTimestamp": "2024-03-01T12:00:00.123456+03:00", "eventTime": "2024-03-01T12:00:00.1234567Z",
    }), 400)  # fmt: skip
    assert 'cannot parse "7Z" as "Z07:00"' in ev["message"]  # MicroTime wants exactly six digits, as Go
    ev = ok(cluster.request("POST", f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
        "firstTimestamp": "2024-03-01T12:00:00.123456+03:00", "eventTime": "2024-03-01T12:00:00.123456-01:30",
    }), 201)  # fmt: skip
    assert ev["firstTimestamp"] == "2024-03-01T09:00:00Z"
    assert ev["eventTime"] == "2024-03-01T13:30:00.123456Z"
    assert ev["lastTimestamp"] is None  # a metav1.Time Go always writes: null when unset
    p = ok(cluster.request("POST", _PODS.format(ns=ns), {
        "metadata": {"name": "q"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {
            "requests": {"cpu": "1000m", "memory": "0.5Gi"}, "limits": {"cpu": 2, "memory": "2e9"}}}]},
    }), 201)  # fmt: skip
    res = p["spec"]["containers"][0]["resources"]
    assert res == {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "2", "memory": "2e9"}}
    y = b"metadata:\n  name: yml\ndata:\n  d: 2024-01-01\n  b: !!binary aGVsbG8=\n  1: one\n  t: yes\n"
    status, err = cluster.request("POST", _CM.format(ns=ns), y, "application/yaml")
    assert (
        status == 400 and "cannot unmarshal bool into Go struct field ConfigMap.data of type string" in err["message"]
    )
    got = ok(cluster.request("POST", _CM.format(ns=ns), y.replace(b"t: yes", b"t: 'yes'"), "application/yaml"), 201)
    assert got["data"] == {"d": "2024-01-01", "b": "hello", "1": "one", "t": "yes"}


@pytest.mark.parametrize(
    "path, body, status",
    [
        ("/apis/apps/v1/namespaces/{ns}/statefulsets", {"replicas": 0, "availableReplicas": 0}, {}),
        ("/apis/apps/v1/namespaces/{ns}/replicasets", {"replicas": 0}, {}),
        ("/api/v1/namespaces/{ns}/replicationcontrollers", {"replicas": 0}, {}),
        ("/apis/apps/v1/namespaces/{ns}/daemonsets",
         {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}, {}),
        ("/apis/apps/v1/namespaces/{ns}/deployments", {}, {}),
    ],
)  # fmt: skip
def test_workloads_carry_the_status_fields_go_always_writes(cluster, ns, path, body, status):
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec: dict = {"selector": {"matchLabels": {"a": "b"}}, "template": template}
    if "replicationcontrollers" in path:
        spec["selector"] = {"a": "b"}
    if "statefulsets" in path:
        spec["serviceName"] = "s"
    created = ok(cluster.request("POST", path.format(ns=ns), {"metadata": {"name": "w"}, "spec": spec}), 201)
    assert created["status"] == body
    # The pod template's metadata is an ObjectMeta too: Go writes its zero creationTimestamp as null.
    assert created["spec"]["template"]["metadata"]["creationTimestamp"] is None
    listed = ok(cluster.request("GET", path.format(ns=ns)))
    assert listed["items"][0]["status"] == body


def test_pointer_zero_stays_and_empty_values_are_left_out(cluster, ns):
    d = ok(cluster.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", {
        "metadata": {"name": "z", "labels": {}, "annotations": {}, "finalizers": []},
        "spec": {"replicas": 0, "paused": False, "minReadySeconds": 0, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i", "args": [], "env": None}]}}},
    }), 201)  # fmt: skip
    assert d["spec"]["replicas"] == 0  # *int32: an explicit zero is kept
    assert "paused" not in d["spec"] and "minReadySeconds" not in d["spec"]  # omitempty bool and int32
    assert not {"labels", "annotations", "finalizers"} & set(d["metadata"])
    container = d["spec"]["template"]["spec"]["containers"][0]
    assert "args" not in container and "env" not in container
    assert container["resources"] == {}  # a struct: never left out


async def test_objects_an_earlier_pyk8s_stored_are_rewritten_once():
    """A store written before the typed round trip (objects as clients sent them) is rewritten into upstream's
    form at the next start, once: typed clients then read it, and later starts leave it alone."""
    from pyk8s.apiserver.storage_migration import MARKER_KEY
    from pyk8s.storage import open_storage
    from pyk8s.testing.cluster import APIServerProcess

    server = APIServerProcess().start()
    try:
        server.stop()
        store = await open_storage(f"sqlite:///{server.data_dir}")
        async with store:
            await store.delete(MARKER_KEY)  # as if this store predates the migration
            await store.create("/registry/statefulsets/default/old", {
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "old", "namespace": "default", "uid": "u1",
                             "creationTimestamp": "2024-01-01T01:00:00+01:00"},
                "spec": {"replicas": 1, "serviceName": "s", "selector": {"matchLabels": {"a": "b"}}, "bogus": 1,
                         "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}},
                "status": {},
            })  # fmt: skip
            await store.create("/registry/configmaps/default/broken", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "broken", "namespace": "default"},
                "data": {"a": 1},
            })  # fmt: skip
        server.restart()
        sts = ok(server.request("GET", "/apis/apps/v1/namespaces/default/statefulsets/old"))
        assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
        assert sts["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
        assert "bogus" not in sts["spec"]
        rv = sts["metadata"]["resourceVersion"]
        # Nothing it could not read was lost: the broken object is still there, as stored.
        assert ok(server.request("GET", "/api/v1/namespaces/default/configmaps/broken"))["data"] == {"a": 1}
        server.restart()
        assert (
            ok(server.request("GET", "/apis/apps/v1/namespaces/default/statefulsets/old"))["metadata"][
                "resourceVersion"
            ]
            == rv
        )  # not rewritten again
    finally:
        server.cleanup()
