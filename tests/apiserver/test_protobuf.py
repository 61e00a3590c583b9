"""Protobuf on the wire, as client-go speaks it: kubectl 1.32's typed `create` generators (which send protobuf and
ask for protobuf back), and raw requests whose answers are read by the official protobuf runtime with descriptors
built from upstream's generated.proto facts (tests/api/protobuf_reference.py), not by our decoder: objects,
lists, Status errors, watch streams; content negotiation as upstream does it."""

from __future__ import annotations

import base64
import threading
from pathlib import Path
from typing import Any

import pytest

from pyk8s.apiserver.certs import self_signed_serving_pair
from pyk8s.testing.cluster import APIServerProcess

from ..api import protobuf_reference as ref

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = "application/vnd.kubernetes.protobuf,application/json"
NS = "wire"


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess().start()
    s.create_namespace(NS)
    yield s
    s.cleanup()


def raw_request(
    server: APIServerProcess, method: str, path: str, body: bytes | None = None, *, accept: str = CLIENT_GO_ACCEPT,
    content_type: str = PROTOBUF, timeout: float = 30,
) -> tuple[int, str, bytes]:  # fmt: skip
    """(status, Content-Type, body) of a request with client-go's protobuf headers (or those given)."""
    status, headers, data = server.raw_request(
        method, path, body, {"Accept": accept, "Content-Type": content_type}, timeout=timeout
    )
    return status, headers.get("Content-Type", ""), data


def get_json(server: APIServerProcess, path: str) -> Any:
    status, body = server.request("GET", path)
    assert status == 200, body
    return body


def _tls_files(tmp: Path) -> tuple[Path, Path]:
    cert, key = self_signed_serving_pair(["example.test"])
    (tmp / "tls.crt").write_bytes(cert)
    (tmp / "tls.key").write_bytes(key)
    return tmp / "tls.crt", tmp / "tls.key"


# kubectl 1.32's typed generators: each sends its object in protobuf. (`create token` needs the TokenRequest API:
# issue 18.) For each: the arguments, the object's path, and what must have arrived.
GENERATORS: list[tuple[list[str], str, Any]] = [
    (["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=80"],
     f"/apis/apps/v1/namespaces/{NS}/deployments/web",
     lambda o: (o["spec"]["replicas"], o["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
                o["spec"]["strategy"]["rollingUpdate"]["maxSurge"]) == (3, 80, "25%")),
    (["create", "namespace", "made-by-protobuf"], "/api/v1/namespaces/made-by-protobuf",
     lambda o: o["status"]["phase"] == "Active" and o["spec"]["finalizers"] == ["kubernetes"]),
    (["create", "configmap", "cm", "--from-literal=a=1", "--from-literal=b=two"],
     f"/api/v1/namespaces/{NS}/configmaps/cm", lambda o: o["data"] == {"a": "1", "b": "two"}),
    (["create", "secret", "generic", "sec", "--from-literal=password=s3cret"],
     f"/api/v1/namespaces/{NS}/secrets/sec",
     lambda o: o["type"] == "Opaque" and base64.b64decode(o["data"]["password"]) == b"s3cret"),
    (["create", "secret", "docker-registry", "reg", "--docker-server=r.example", "--docker-username=u",
      "--docker-password=p"], f"/api/v1/namespaces/{NS}/secrets/reg",
     lambda o: o["type"] == "kubernetes.io/dockerconfigjson"
     and b"r.example" in base64.b64decode(o["data"][".dockerconfigjson"])),
    (["create", "service", "clusterip", "svc", "--tcp=80:8080"], f"/api/v1/namespaces/{NS}/services/svc",
     lambda o: o["spec"]["ports"][0]["targetPort"] == 8080 and o["spec"]["clusterIP"]),
    (["create", "service", "nodeport", "np", "--tcp=443:8443"], f"/api/v1/namespaces/{NS}/services/np",
     lambda o: o["spec"]["type"] == "NodePort" and 30000 <= o["spec"]["ports"][0]["nodePort"] <= 32767),
    (["create", "job", "echo", "--image=busybox", "--", "echo", "hi"], f"/apis/batch/v1/namespaces/{NS}/jobs/echo",
     lambda o: o["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]),
    (["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *"],
     f"/apis/batch/v1/namespaces/{NS}/cronjobs/tick", lambda o: o["spec"]["schedule"] == "*/5 * * * *"),
    (["create", "role", "reader", "--verb=get,list", "--resource=pods"],
     f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/reader",
     lambda o: o["rules"] == [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
    (["create", "rolebinding", "reader-bob", "--role=reader", "--user=bob"],
     f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings/reader-bob",
     lambda o: o["roleRef"]["name"] == "reader" and o["subjects"][0]["name"] == "bob"),
    (["create", "clusterrole", "node-reader", "--verb=get", "--resource=nodes"],
     "/apis/rbac.authorization.k8s.io/v1/clusterroles/node-reader", lambda o: o["rules"][0]["resources"] == ["nodes"]),
    (["create", "clusterrolebinding", "node-reader-bob", "--clusterrole=node-reader", "--group=devs"],
     "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/node-reader-bob",
     lambda o: o["subjects"] == [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]),
    (["create", "serviceaccount", "robot"], f"/api/v1/namespaces/{NS}/serviceaccounts/robot",
     lambda o: o["metadata"]["name"] == "robot"),
    (["create", "quota", "q", "--hard=pods=10,requests.cpu=2"], f"/api/v1/namespaces/{NS}/resourcequotas/q",
     lambda o: o["spec"]["hard"] == {"pods": "10", "requests.cpu": "2"}),
    (["create", "priorityclass", "high", "--value=1000", "--description=important"],
     "/apis/scheduling.k8s.io/v1/priorityclasses/high",
     lambda o: (o["value"], o["description"], o["preemptionPolicy"]) == (1000, "important", "PreemptLowerPriority")),
    (["create", "poddisruptionbudget", "pdb", "--selector=app=web", "--min-available=50%"],
     f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/pdb", lambda o: o["spec"]["minAvailable"] == "50%"),
    (["create", "ingress", "ing", "--rule=foo.example/bar*=svc:80"],
     f"/apis/networking.k8s.io/v1/namespaces/{NS}/ingresses/ing",
     lambda o: o["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"]["number"] == 80),
]  # fmt: skip


@pytest.mark.parametrize("args, path, check", GENERATORS, ids=[" ".join(g[0][1:3]) for g in GENERATORS])
def test_kubectl_create_generators(server, args, path, check):
    res = server.kubectl("-n", NS, *args)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith(" created"), res.stdout
    obj = get_json(server, path)
    assert check(obj), obj
    # What kubectl sent in protobuf is tracked as it sent it: kubectl-create manages the fields (a ServiceAccount
    # with nothing but a name has no fields to manage, and no entry, as upstream).
    managers = [m["manager"] for m in obj["metadata"].get("managedFields", [])]
    assert managers == ([] if args[1] == "serviceaccount" else ["kubectl-create"])


def test_kubectl_create_secret_tls(server, tmp_path):
    cert, key = _tls_files(tmp_path)
    res = server.kubectl("create", "secret", "tls", "tls", f"--cert={cert}", f"--key={key}", "-n", NS)
    assert res.returncode == 0, res.stderr
    obj = get_json(server, f"/api/v1/namespaces/{NS}/secrets/tls")
    assert obj["type"] == "kubernetes.io/tls"
    assert base64.b64decode(obj["data"]["tls.crt"]) == cert.read_bytes()


def test_a_bad_generator_request_reads_as_a_status(server):
    # Through protobuf both ways: the request's object and the 409 that answers it.
    assert server.kubectl("create", "configmap", "twice", "-n", NS).returncode == 0
    res = server.kubectl("create", "configmap", "twice", "-n", NS)
    assert res.returncode == 1
    assert res.stderr.strip() == 'error: failed to create configmap: configmaps "twice" already exists'


def test_objects_lists_and_errors_in_protobuf(server):
    assert server.kubectl("create", "configmap", "pb", "--from-literal=k=v", "-n", NS).returncode == 0
    assert server.kubectl("create", "configmap", "pb2", "-n", NS).returncode == 0
    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps/pb")
    assert (status, ctype) == (200, PROTOBUF)
    api_version, kind, cm = ref.parse(body, "io.k8s.api.core.v1.ConfigMap")
    assert (api_version, kind, cm.metadata.name, dict(cm.data)) == ("v1", "ConfigMap", "pb", {"k": "v"})
    assert cm.metadata.creationTimestamp.seconds > 1_700_000_000 and int(cm.metadata.resourceVersion) > 0

    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=1")
    api_version, kind, cms = ref.parse(body, "io.k8s.api.core.v1.ConfigMapList")
    assert (status, kind, len(cms.items)) == (200, "ConfigMapList", 1) and cms.metadata.resourceVersion
    assert getattr(cms.metadata, "continue")  # a keyword in Python, a field name in the message

    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps/missing")
    assert (status, ctype) == (404, PROTOBUF)
    _, kind, st = ref.parse(body, "io.k8s.apimachinery.pkg.apis.meta.v1.Status")
    assert (kind, st.status, st.reason, st.code) == ("Status", "Failure", "NotFound", 404)
    assert st.message == 'configmaps "missing" not found' and st.details.kind == "configmaps"

    # A client that does not ask for protobuf still gets JSON, and a Table is JSON even when protobuf comes first.
    status, ctype, _ = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps/pb", accept="application/json")
    assert ctype == "application/json"
    table_accept = f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps", accept=table_accept)
    assert (status, ctype) == (200, "application/json") and b'"kind":"Table"' in body


def test_a_protobuf_body_from_the_official_runtime_is_created(server):
    cm = ref.message_class("io.k8s.api.core.v1.ConfigMap")()
    cm.metadata.name = "from-upb"
    cm.data["x"] = "y"
    cm.binaryData["bin"] = b"\x00\xff"
    status, _ctype, body = raw_request(
        server, "POST", f"/api/v1/namespaces/{NS}/configmaps", ref.envelope("v1", "ConfigMap", cm)
    )
    assert status == 201, body
    _, _, created = ref.parse(body, "io.k8s.api.core.v1.ConfigMap")
    assert created.metadata.uid and dict(created.binaryData) == {"bin": b"\x00\xff"}
    stored = get_json(server, f"/api/v1/namespaces/{NS}/configmaps/from-upb")
    assert stored["data"] == {"x": "y"} and stored["binaryData"] == {"bin": "AP8="}


@pytest.mark.parametrize(
    "body, message",
    [
        (
            b"{}",
            "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be "
            "a protobuf message, expected prefix [107 56 115 0] ({})",
        ),
        (b"k8s\x00", "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"),
        (
            b"k8s\x00\x12\x00",
            "the object provided is unrecognized (must be of type ConfigMap): Object 'Kind' is "
            'missing in \'runtime.TypeMeta{APIVersion:"", Kind:""}\' (6b3873001200)',
        ),
        (
            b"k8s\x00\x0a\x0a\x0a\x02v1\x12\x04Carp",
            'Carp in version "v1" cannot be handled as a ConfigMap: no kind "Carp" is registered for version "v1"',
        ),
    ],
)
def test_malformed_protobuf_bodies_are_400(server, body, message):
    status, _ctype, answer = raw_request(server, "POST", f"/api/v1/namespaces/{NS}/configmaps", body)
    assert status == 400
    _, _, st = ref.parse(answer, "io.k8s.apimachinery.pkg.apis.meta.v1.Status")
    assert (st.reason, st.message) == ("BadRequest", message)


def test_only_protobuf_where_there_is_none_is_406(server):
    # metrics.k8s.io has no protobuf form here: a client that takes nothing else is refused, as upstream does.
    status, _ctype, body = raw_request(server, "GET", "/apis/metrics.k8s.io/v1beta1/nodes", accept=PROTOBUF)
    assert status == 406, body


def test_a_protobuf_watch_stream(server):
    frames: list[tuple[str, bytes]] = []
    got: dict[str, Any] = {}

    def watch() -> None:
        status, ctype, body = raw_request(
            server, "GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&timeoutSeconds=3&labelSelector=w%3D1",
            timeout=30,
        )  # fmt: skip
        got.update(status=status, ctype=ctype)
        frames.extend(ref.watch_events(body))

    t = threading.Thread(target=watch)
    t.start()
    import time

    time.sleep(0.5)
    server.request("POST", f"/api/v1/namespaces/{NS}/configmaps",
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "labels": {"w": "1"}}})  # fmt: skip
    server.request("PATCH", f"/api/v1/namespaces/{NS}/configmaps/w", {"data": {"a": "b"}},
                   "application/merge-patch+json")  # fmt: skip
    server.request("DELETE", f"/api/v1/namespaces/{NS}/configmaps/w")
    t.join(30)
    assert got == {"status": 200, "ctype": PROTOBUF + ";stream=watch"}
    assert [typ for typ, _ in frames] == ["ADDED", "MODIFIED", "DELETED"]
    objects = [ref.parse(raw, "io.k8s.api.core.v1.ConfigMap") for _, raw in frames]
    assert {(av, kind, cm.metadata.name) for av, kind, cm in objects} == {("v1", "ConfigMap", "w")}
    assert dict(objects[1][2].data) == {"a": "b"}
    rvs = [int(cm.metadata.resourceVersion) for _, _, cm in objects]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


LIST = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed-a}
  data: {x: "1"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed-b}
  %s
"""


def test_kubectl_create_of_a_list_validates_through_the_protobuf_openapi(server):
    # kubectl validates a v1 List against /openapi/v2 in gnostic's protobuf form before it creates anything.
    res = server.kubectl("create", "-n", NS, "-f", "-", input=LIST % "data: {z: '2'}")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["configmap/listed-a", "created", "configmap/listed-b", "created"]
    assert get_json(server, f"/api/v1/namespaces/{NS}/configmaps/listed-b")["data"] == {"z": "2"}
    # An item with a field ConfigMap does not have is refused, as on a real cluster.
    res = server.kubectl("create", "-n", NS, "-f", "-", input=(LIST % "datta: {z: '2'}").replace("listed", "bad"))
    assert res.returncode == 1
    assert 'unknown field "datta"' in res.stderr, res.stderr


def _top_fields(data: bytes) -> dict[int, list[bytes]]:
    """The length-delimited top-level fields of a message, by number (a minimal reader, independent of ours)."""
    out: dict[int, list[bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _uvarint(data, pos)
        assert key & 7 == 2, key
        n, pos = _uvarint(data, pos)
        out.setdefault(key >> 3, []).append(data[pos : pos + n])
        pos += n
    return out


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def test_openapi_v2_in_protobuf(server):
    proto_accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    status, ctype, body = raw_request(server, "GET", "/openapi/v2", accept=proto_accept)
    assert (status, ctype) == (200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    doc = _top_fields(body)
    assert doc[1] == [b"2.0"]  # swagger
    definitions = _top_fields(doc[9][0])[1]  # Definitions{additional_properties: NamedSchema}
    names = {_top_fields(d)[1][0].decode() for d in definitions}
    assert {"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.apps.v1.Deployment"} <= names
    json_status, json_type, json_body = raw_request(server, "GET", "/openapi/v2", accept="application/json")
    assert (json_status, json_type) == (200, "application/json") and json_body.startswith(b'{"swagger":"2.0"')
    # q-values decide; the ETag is the JSON document's for both forms, and a client holding it gets a 304.
    status, ctype, _ = raw_request(server, "GET", "/openapi/v2", accept=f"application/json;q=0.5,{proto_accept}")
    assert ctype.endswith("+protobuf")
    _, headers, _ = server.raw_request("GET", "/openapi/v2", headers={"Accept": proto_accept})
    etag = headers["ETag"]
    assert len(etag) == 130 and etag == etag.upper()
    status, _, _ = server.raw_request("GET", "/openapi/v2", headers={"Accept": proto_accept, "If-None-Match": etag})
    assert status == 304
    status, _, _ = raw_request(server, "GET", "/openapi/v2", accept="text/html")
    assert status == 406


def test_partial_object_metadata_in_protobuf(server):
    # What client-go's metadata informers (the garbage collector's) ask for: only metadata, in protobuf.
    assert server.kubectl("create", "configmap", "meta-only", "--from-literal=big=value", "-n", NS).returncode == 0
    accept = f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps", accept=accept)
    assert (status, ctype) == (200, PROTOBUF)
    api_version, kind, lst = ref.parse(body, "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList")
    assert (api_version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    assert "meta-only" in {item.metadata.name for item in lst.items}
    accept = f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    status, ctype, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps/meta-only", accept=accept)
    _, kind, one = ref.parse(body, "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata")
    assert (status, kind, one.metadata.name, one.metadata.namespace) == (200, "PartialObjectMetadata", "meta-only", NS)


def test_reused_encodings_never_go_stale(server):
    # GETs and LISTs in protobuf reuse the encoding of an object version; a change, or a dry run that answers
    # with new content under the stored resourceVersion, must never be served from it.
    assert server.kubectl("create", "configmap", "kept", "--from-literal=v=1", "-n", NS).returncode == 0
    path = f"/api/v1/namespaces/{NS}/configmaps/kept"

    def read() -> dict[str, str]:
        _, _, body = raw_request(server, "GET", path)
        return dict(ref.parse(body, "io.k8s.api.core.v1.ConfigMap")[2].data)

    def listed() -> dict[str, str]:
        _, _, body = raw_request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps")
        items = ref.parse(body, "io.k8s.api.core.v1.ConfigMapList")[2].items
        return next(dict(i.data) for i in items if i.metadata.name == "kept")

    assert read() == listed() == {"v": "1"}
    status, _, body = raw_request(server, "PATCH", f"{path}?dryRun=All", b'{"data":{"v":"dry"}}',
                                  content_type="application/merge-patch+json")  # fmt: skip
    assert status == 200 and dict(ref.parse(body, "io.k8s.api.core.v1.ConfigMap")[2].data) == {"v": "dry"}
    assert read() == listed() == {"v": "1"}
    server.request("PATCH", path, {"data": {"v": "2"}}, "application/merge-patch+json")
    assert read() == listed() == {"v": "2"}
