"""API aggregation end to end: kubectl and the official Python client against a pyk8s API server that proxies
`wardle.example.com/v1alpha1` to the extension server of `wardle.py`."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import ssl
import time

from cryptography import x509
from kubernetes import client, config

from pyk8s.apiserver.certs import self_signed_serving_pair
from pyk8s.testing.h2_client import H2Client

from .conftest import APISERVICE, NAMESPACE, authentication_configmap, available, wait_for_available
from .wardle import GROUP, GV

ADMIN = ("pyk8s-admin", ["system:masters", "system:authenticated"])


def table(cluster, *args: str) -> dict[str, list[str]]:
    """`kubectl get` output as {first column: the row's cells}."""
    lines = cluster.kubectl("get", *args, check=True).stdout.splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]} | {"": lines[0].split()}


def test_kubectl_get_apiservices_lists_local_ones_and_the_remote_one(cluster, wardle):
    rows = table(cluster, "apiservices")
    assert rows[""] == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    for local in ("v1.", "v1.apps", "v2.autoscaling", "v1.autoscaling", "v1.apiextensions.k8s.io"):
        assert rows.get(local, [])[1:3] == ["Local", "True"], rows
    assert rows[APISERVICE][1:3] == [f"{NAMESPACE}/api", "True"]
    assert "v1.apiregistration.k8s.io" not in rows  # the aggregator's own group has none, as upstream
    obj = json.loads(cluster.kubectl("get", "apiservice", "v1.apps", "-o", "json", check=True).stdout)
    assert obj["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    assert obj["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    cond = available(cluster, "v1.apps")
    assert (cond["reason"], cond["message"]) == ("Local", "Local APIServices are always available")
    cond = available(cluster, APISERVICE)
    assert (cond["reason"], cond["message"]) == ("Passed", "all checks passed")


def test_kubectl_api_resources_lists_the_extension_servers_resources(cluster, wardle):
    out = cluster.kubectl("api-resources", "--api-group", GROUP, check=True).stdout.splitlines()
    assert out[1].split() == ["flunders", "fl", GV, "true", "Flunder"]
    status, groups = cluster.request("GET", "/apis")
    names = [g["name"] for g in groups["groups"]]  # type: ignore[index]
    # the aggregator's group first; wardle at 1000 after every built-in group, before metrics.k8s.io at 100
    assert names[0] == "apiregistration.k8s.io" and names[-2:] == [GROUP, "metrics.k8s.io"]
    status, resources = cluster.request("GET", f"/apis/{GV}")  # proxied: the extension server's own document
    assert status == 200 and [r["name"] for r in resources["resources"]] == ["flunders"]  # type: ignore[index]
    status, group = cluster.request("GET", f"/apis/{GROUP}")
    assert status == 200 and group["preferredVersion"] == {"groupVersion": GV, "version": "v1alpha1"}  # type: ignore[index]


def test_kubectl_get_flunders_goes_through_the_proxy_as_the_admin(cluster, wardle):
    wardle.seen.clear()
    rows = table(cluster, "flunders", "-n", "default")
    assert rows[""] == ["NAME", "REFERENCE"] and rows["alpha"] == ["alpha", "alpha"] and "beta" in rows
    got = json.loads(cluster.kubectl("get", "fl", "beta", "-n", "default", "-o", "json", check=True).stdout)
    assert got["kind"] == "Flunder" and got["metadata"]["name"] == "beta"
    res = cluster.kubectl("get", "flunder", "nope", "-n", "default")
    assert res.returncode != 0 and f'flunders.{GROUP} "nope" not found' in res.stderr
    requests = [s for s in wardle.seen if "/flunders" in s.path]
    assert requests and all((s.user, s.groups) == ADMIN and s.common_name == "front-proxy-client" for s in requests)


def test_the_client_cannot_choose_the_identity_headers_and_its_token_is_not_passed_on(cluster, wardle):
    wardle.seen.clear()
    status, _, body = cluster.raw_request(
        "GET", f"/apis/{GV}/namespaces/default/flunders?limit=5&b=1",
        headers={"X-Remote-User": "mallory", "X-Remote-Group": "hackers", "X-Remote-Extra-Scopes": "all"},
    )  # fmt: skip
    assert status == 200 and [o["metadata"]["name"] for o in json.loads(body)["items"]] == ["alpha", "beta"]
    [seen] = [s for s in wardle.seen if s.path.endswith("/flunders")]
    assert (seen.user, seen.groups) == ADMIN and not seen.authorization
    assert seen.query == "b=1&limit=5"  # re-encoded as Go does: keys sorted


def test_a_request_body_goes_through_and_the_answer_comes_back_as_sent(cluster, wardle):
    body = json.dumps({"apiVersion": GV, "kind": "Flunder", "metadata": {"name": "gamma"}, "spec": {"x": "é" * 5000}})
    status, headers, answer = cluster.raw_request(
        "POST", f"/apis/{GV}/namespaces/default/flunders", body.encode(), {"Content-Type": "application/json"}
    )
    try:
        assert status == 201 and json.loads(answer) == json.loads(body)
        assert headers["Content-Type"].startswith("application/json")
        assert "gamma" in table(cluster, "flunders", "-n", "default")
    finally:
        wardle.flunders["default"].remove("gamma")


def test_upgrade_requests_are_refused(cluster, wardle):
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=ctx, timeout=15)
    try:
        conn.request("GET", f"/apis/{GV}/namespaces/default/flunders/alpha/exec", headers={
            "Authorization": f"Bearer {cluster.token}", "Connection": "Upgrade", "Upgrade": "websocket"})  # fmt: skip
        resp = conn.getresponse()
        assert resp.status == 400 and b"upgrade requests are not proxied" in resp.read()
    finally:
        conn.close()


def test_a_watch_streams_through_the_proxy(cluster, wardle):
    wardle.watch_release.clear()
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=ctx, timeout=15)
    try:
        conn.request("GET", f"/apis/{GV}/namespaces/default/flunders?watch=true",
                     headers={"Authorization": f"Bearer {cluster.token}"})  # fmt: skip
        resp = conn.getresponse()
        assert resp.status == 200
        # The backend holds the response open until released: these come while it is still streaming.
        first = [json.loads(resp.readline()) for _ in range(2)]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in first] == [("ADDED", "alpha"), ("ADDED", "beta")]
        wardle.watch_release.set()
        assert json.loads(resp.readline())["object"]["metadata"]["name"] == "late"
        assert resp.readline() == b""
    finally:
        wardle.watch_release.set()
        conn.close()


def test_a_watch_streams_through_the_proxy_over_http2(cluster, wardle):
    """As client-go watches: on an HTTP/2 stream."""
    wardle.watch_release.clear()

    async def watch() -> list[str]:
        async with H2Client("127.0.0.1", cluster.port, str(cluster.ca_file), token=cluster.token) as h2:
            stream = h2.open("GET", f"/apis/{GV}/namespaces/default/flunders?watch=true")
            while stream.body.count(b"\n") < 2:
                await asyncio.wait_for(stream.arrived.wait(), 15)
                stream.arrived.clear()
            assert not stream.done.is_set()
            wardle.watch_release.set()
            await asyncio.wait_for(stream.done.wait(), 15)
            assert stream.status == 200
            return [json.loads(line)["object"]["metadata"]["name"] for line in stream.body.splitlines()]

    try:
        assert asyncio.run(watch()) == ["alpha", "beta", "late"]
    finally:
        wardle.watch_release.set()


def test_apiservices_whose_service_is_not_usable_say_why(cluster, wardle):
    base = {"version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10, "insecureSkipTLSVerify": True}
    cases = {
        "nosuch": ({"name": "nosuch"}, "ServiceNotFound", f'service/nosuch in "{NAMESPACE}" is not present'),
        "wrongport": ({"name": "api", "port": 8443}, "ServicePortError",
                      f'service/api in "{NAMESPACE}" is not listening on port 8443'),
        "noeps": ({"name": "noeps"}, "EndpointsNotFound", f'cannot find endpoints for service/noeps in "{NAMESPACE}"'),
        "emptyeps": ({"name": "emptyeps"}, "MissingEndpoints",
                     f'endpoints for service/emptyeps in "{NAMESPACE}" have no addresses with port name "https"'),
    }  # fmt: skip
    for svc in ("noeps", "emptyeps"):
        cluster.kubectl("apply", "-f", "-", check=True, input=json.dumps({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": svc, "namespace": NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443}]}}))  # fmt: skip
    cluster.kubectl("apply", "-f", "-", check=True, input=json.dumps({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "emptyeps", "namespace": NAMESPACE},
        "subsets": [{"notReadyAddresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 1}]}]}))  # fmt: skip
    for group, (service, _, _) in cases.items():
        spec = {**base, "group": f"{group}.example.com", "service": {"namespace": NAMESPACE, **service}}
        obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": f"v1.{group}.example.com"}, "spec": spec}  # fmt: skip
        cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=True)
    try:
        for group, (_, reason, message) in cases.items():
            cond = wait_for_available(cluster, f"v1.{group}.example.com", "False")
            assert (cond["reason"], cond["message"]) == (reason, message)
        rows = table(cluster, "apiservices")
        assert rows["v1.nosuch.example.com"][1:4] == [f"{NAMESPACE}/nosuch", "False", "(ServiceNotFound)"]
        # an unavailable group version answers 503, as upstream's proxy writes it
        status, headers, body = cluster.raw_request("GET", "/apis/nosuch.example.com/v1/things")
        assert (status, body) == (503, b"service unavailable\n")
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
    finally:
        for group in cases:
            cluster.kubectl("delete", "apiservice", f"v1.{group}.example.com")


def test_the_backend_is_verified_with_the_ca_bundle(cluster, wardle):
    """The availability check does not verify the backend (upstream's neither); the proxy does."""
    other_ca, _ = self_signed_serving_pair(["api.wardle.svc"])
    obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"v1beta1.{GROUP}"},
           "spec": {"group": GROUP, "version": "v1beta1", "groupPriorityMinimum": 1000, "versionPriority": 10,
                    "service": {"namespace": NAMESPACE, "name": "api"},
                    "caBundle": base64.b64encode(other_ca).decode()}}  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=True)
    try:
        wait_for_available(cluster, f"v1beta1.{GROUP}", "True")
        status, _, body = cluster.raw_request("GET", f"/apis/{GROUP}/v1beta1/namespaces/default/flunders")
        assert (status, body) == (503, b"tls: failed to verify certificate: x509: certificate signed by unknown "
                                       b"authority\n")  # fmt: skip
    finally:
        cluster.kubectl("delete", "apiservice", f"v1beta1.{GROUP}")


def test_a_stopped_server_fails_the_discovery_check_and_its_requests_answer_503(cluster, wardle):
    wardle.stop()
    try:
        cond = wait_for_available(cluster, APISERVICE, "False")
        url = f"https://127.0.0.1:{wardle.port}/apis/{GV}"
        assert cond["reason"] == "FailedDiscoveryCheck"
        assert cond["message"] == (
            f'failing or missing response from {url}: Get "{url}": dial tcp 127.0.0.1:{wardle.port}: connect: '
            "connection refused"
        )
        assert table(cluster, "apiservices")[APISERVICE][2:4] == ["False", "(FailedDiscoveryCheck)"]
        status, _, body = cluster.raw_request("GET", f"/apis/{GV}/namespaces/default/flunders")
        assert (status, body) == (503, b"service unavailable\n")
        res = cluster.kubectl("get", "flunders", "-n", "default")
        assert res.returncode != 0
    finally:
        wardle.start()
    wait_for_available(cluster, APISERVICE, "True")
    assert "alpha" in table(cluster, "flunders", "-n", "default")


def test_crd_group_versions_get_apiservices_that_follow_the_crd(cluster):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gizmos.toys.example.com"},
           "spec": {"group": "toys.example.com", "scope": "Namespaced",
                    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}  # fmt: skip
    cluster.apply_crds(json.dumps(crd), "gizmos.toys.example.com")
    name = "v1.toys.example.com"
    deadline = time.monotonic() + 10
    while cluster.kubectl("get", "apiservice", name).returncode != 0:
        assert time.monotonic() < deadline, "no APIService for the CRD"
        time.sleep(0.1)
    obj = json.loads(cluster.kubectl("get", "apiservice", name, "-o", "json", check=True).stdout)
    assert obj["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    assert (obj["spec"]["groupPriorityMinimum"], obj["spec"]["versionPriority"]) == (1000, 100)
    cluster.kubectl("delete", "apiservice", name, check=True)  # kept in step: it comes back
    deadline = time.monotonic() + 10
    while cluster.kubectl("get", "apiservice", name).returncode != 0:
        assert time.monotonic() < deadline, "the CRD's APIService was not put back"
        time.sleep(0.1)
    cluster.kubectl("delete", "crd", "gizmos.toys.example.com", check=True)
    deadline = time.monotonic() + 20
    while cluster.kubectl("get", "apiservice", name).returncode == 0:
        assert time.monotonic() < deadline, "the CRD's APIService outlived it"
        time.sleep(0.1)


def test_an_invalid_apiservice_is_refused_with_upstreams_messages(cluster):
    obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.bad.example.com"},
           "spec": {"group": "other.example.com", "version": "v1", "groupPriorityMinimum": 30000,
                    "versionPriority": 0, "caBundle": base64.b64encode(b"0123456789").decode()}}  # fmt: skip
    res = cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
    assert res.returncode != 0
    for message in (
        'metadata.name: Invalid value: "v1.bad.example.com": must be `spec.version+"."+spec.group`: '
        '"v1.other.example.com"',
        "spec.groupPriorityMinimum: Invalid value: 30000: must be positive and less than 20000",
        "spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
        'spec.caBundle: Invalid value: "10 bytes": local APIServices may not have a caBundle',
    ):
        assert message in res.stderr, res.stderr


def test_the_authentication_configmap_is_published_as_upstream_writes_it(cluster):
    data = authentication_configmap(cluster)
    pki = cluster.data_dir / "pki"
    assert data["client-ca-file"] == (pki / "ca.crt").read_text()
    assert data["requestheader-client-ca-file"] == (pki / "front-proxy-ca.crt").read_text()
    assert {k: v for k, v in data.items() if not k.endswith("-file")} == {
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-uid-headers": "[]",
        "requestheader-username-headers": '["X-Remote-User"]',
    }
    ca = x509.load_pem_x509_certificate(data["requestheader-client-ca-file"].encode())
    assert ca.subject.rfc4514_string() == "CN=front-proxy-ca"
    # taken out of it, it is put back
    cluster.kubectl("patch", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "--type=json",
                    "-p", '[{"op":"remove","path":"/data/requestheader-allowed-names"}]', check=True)  # fmt: skip
    deadline = time.monotonic() + 10
    while "requestheader-allowed-names" not in authentication_configmap(cluster):
        assert time.monotonic() < deadline, "the ConfigMap was not reconciled"
        time.sleep(0.1)


def test_the_python_client_reads_the_authentication_configmap(cluster):
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    cm = api.read_namespaced_config_map("extension-apiserver-authentication", "kube-system")
    assert json.loads(cm.data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert cm.data["client-ca-file"].startswith("-----BEGIN CERTIFICATE-----")
