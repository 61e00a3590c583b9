"""The aggregator's parts on their own: the front-proxy headers, where a Service is reached, the loopback rule,
the authentication ConfigMap's content, and the merged discovery documents."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pyk8s.aggregator import apiservice as api
from pyk8s.aggregator.cluster_authentication_trust import ClusterAuthenticationInfo, combine, data_for, info_from
from pyk8s.aggregator.discovery import aggregated, api_group, api_group_list, resources_from_legacy
from pyk8s.aggregator.local_apiservices import builtin_apiservices, crd_apiservices
from pyk8s.aggregator.transport import DialError, check_loopback, escape_header_key, forwarded_headers
from pyk8s.api.resources import TABLE, Resource, ResourceTable
from pyk8s.apiserver import resource_metrics
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.service_resolver import (
    ClusterIPServiceResolver,
    EndpointServiceResolver,
    LoopbackServiceResolver,
    ResolveError,
)

# -- identity headers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "escaped"),
    [
        ("scopes", "scopes"),
        ("authentication.kubernetes.io/credential-id", "authentication.kubernetes.io%2Fcredential-id"),
        ("100%", "100%25"),
        ("ünï code", "%C3%BCn%C3%AF%20code"),
    ],
)
def test_extra_keys_are_escaped_as_upstream_does(key, escaped):
    assert escape_header_key(key) == escaped


def test_forwarded_headers_carry_the_user_and_nothing_the_server_consumed():
    incoming = [
        ("Accept", "application/json"), ("Authorization", "Bearer secret"), ("Impersonate-User", "bob"),
        ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), ("Transfer-Encoding", "chunked"), ("Host", "api:6443"),
        ("X-Remote-User", "mallory"), ("x-remote-group", "hackers"), ("X-Remote-Extra-Scope", "all"),
        ("X-Forwarded-For", "10.0.0.9"), ("User-Agent", "kubectl/v1.32.4"),
    ]  # fmt: skip
    user = UserInfo("alice", groups=("devs", "system:authenticated"), extra={"scopes": ("a", "b")})
    out = forwarded_headers(incoming, user, "127.0.0.1")
    assert list(out.items()) == [
        ("Accept", "application/json"), ("User-Agent", "kubectl/v1.32.4"), ("X-Remote-User", "alice"),
        ("X-Remote-Group", "devs"), ("X-Remote-Group", "system:authenticated"), ("X-Remote-Extra-scopes", "a"),
        ("X-Remote-Extra-scopes", "b"), ("X-Forwarded-For", "10.0.0.9, 127.0.0.1"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:8443", "https://127.3.2.1:1", "https://[::1]:443", "https://localhost:1"]
)
def test_loopback_addresses_may_be_dialed(url):
    check_loopback(url)


@pytest.mark.parametrize("url", ["https://10.96.0.12:443", "https://example.com:443", "https://[2001:db8::1]:443"])
def test_other_addresses_may_not(url):
    with pytest.raises(DialError, match="pyk8s connects to loopback addresses only"):
        check_loopback(url)


# -- service resolution -------------------------------------------------------------------------------------


def svc(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "w"}, "spec": spec}


HTTPS = [{"name": "https", "port": 443, "targetPort": 8443}]


def lookup(objs: dict[tuple[str, str], dict[str, Any]]):
    return lambda ns, name: objs.get((ns, name))


@pytest.mark.parametrize(
    ("spec", "port", "result"),
    [
        ({"type": "ClusterIP", "clusterIP": "127.0.0.9", "ports": HTTPS}, 443, "https://127.0.0.9:443"),
        ({"clusterIP": "fd00::1", "ports": HTTPS}, 443, "https://[fd00::1]:443"),
        ({"type": "NodePort", "clusterIP": "10.96.0.5", "ports": HTTPS}, 443, "https://10.96.0.5:443"),
        ({"type": "ExternalName", "externalName": "localhost"}, 6443, "https://localhost:6443"),
        ({"clusterIP": "None", "ports": HTTPS}, 443, ResolveError('cannot route to service with ClusterIP "None"')),
        (
            {"clusterIP": "10.96.0.5", "ports": HTTPS},
            8443,
            ResolveError('no service port 8443 found for service "api"'),
        ),
        ({"type": "Weird"}, 443, ResolveError('unsupported service type "Weird"')),
    ],
)
def test_cluster_ip_routing(spec, port, result):
    resolver = ClusterIPServiceResolver(lookup({("w", "api"): svc(spec)}))
    if isinstance(result, ResolveError):
        with pytest.raises(ResolveError, match=f"^{result!s}$"):
            resolver.resolve("w", "api", port)
    else:
        assert resolver.resolve("w", "api", port) == result


def endpoints(*subsets: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": "w"},
            "subsets": list(subsets)}  # fmt: skip


def test_endpoint_routing_picks_an_address_behind_the_ports_name():
    eps = endpoints(
        {"addresses": [{"ip": "127.0.0.2"}], "ports": [{"name": "metrics", "port": 9090}]},
        {"addresses": [{"ip": "127.0.0.3"}, {"ip": "127.0.0.4"}], "ports": [{"name": "https", "port": 8443}]},
        {"notReadyAddresses": [{"ip": "127.0.0.5"}], "ports": [{"name": "https", "port": 8443}]},
    )
    resolver = EndpointServiceResolver(lookup({("w", "api"): svc({"ports": HTTPS})}), lookup({("w", "api"): eps}))
    seen = {resolver.resolve("w", "api", 443) for _ in range(60)}
    assert seen == {"https://127.0.0.3:8443", "https://127.0.0.4:8443"}


@pytest.mark.parametrize(
    ("service", "eps", "message"),
    [
        (None, None, 'service "api" not found'),
        (svc({"ports": HTTPS}), None, 'endpoints "api" not found'),
        (svc({"ports": HTTPS}), endpoints(), 'no endpoints available for service "api"'),
        (svc({"ports": HTTPS}), endpoints({"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "x", "port": 1}]}),
         'no endpoints available for service "api"'),
        (svc({"type": "ExternalName", "externalName": "localhost"}), None, 'unsupported service type "ExternalName"'),
    ],
)  # fmt: skip
def test_endpoint_routing_errors(service, eps, message):
    services = lookup({("w", "api"): service} if service else {})
    resolver = EndpointServiceResolver(services, lookup({("w", "api"): eps} if eps else {}))
    with pytest.raises(ResolveError, match=f"^{message}$"):
        resolver.resolve("w", "api", 443)


def test_the_kubernetes_service_is_this_server():
    resolver = LoopbackServiceResolver(ClusterIPServiceResolver(lookup({})), lambda: "https://127.0.0.1:6443")
    assert resolver.resolve("default", "kubernetes", 443) == "https://127.0.0.1:6443"
    with pytest.raises(ResolveError):
        resolver.resolve("default", "kubernetes", 80)


# -- the authentication ConfigMap ----------------------------------------------------------------------------


def ca(name: str, days: int = 365) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=400))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM)


def test_the_configmap_data_is_what_upstream_writes():
    client, proxy = ca("client-ca"), ca("front-proxy-ca")
    info = ClusterAuthenticationInfo(client, ["X-Remote-User"], [], ["X-Remote-Group"], ["X-Remote-Extra-"],
                                     ["front-proxy-client"], proxy)  # fmt: skip
    data = data_for(info)
    assert list(data) == sorted(data)
    assert data == {
        "client-ca-file": client.decode(),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-client-ca-file": proxy.decode(),
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-uid-headers": "[]",
        "requestheader-username-headers": '["X-Remote-User"]',
    }
    # without a request-header CA, only the client CA is published
    assert data_for(ClusterAuthenticationInfo(client_ca=client)) == {"client-ca-file": client.decode()}


def test_what_the_configmap_holds_is_kept_and_what_this_server_has_is_added():
    mine, theirs, expired = ca("mine"), ca("theirs"), ca("old", days=-1)
    existing = info_from({
        "client-ca-file": (theirs + expired + mine).decode(),
        "requestheader-username-headers": '["X-Other-User","X-Remote-User"]',
        "requestheader-allowed-names": "[]",
    })  # fmt: skip
    required = ClusterAuthenticationInfo(client_ca=mine, username_headers=["X-Remote-User"],
                                         allowed_names=["front-proxy-client"], requestheader_ca=mine)  # fmt: skip
    combined = combine(existing, required)
    assert combined.client_ca == theirs + mine  # in order, the expired one and the duplicate gone
    assert combined.username_headers == ["X-Other-User", "X-Remote-User"]
    assert combined.allowed_names == ["front-proxy-client"]
    assert json.loads(data_for(combined)["requestheader-username-headers"]) == ["X-Other-User", "X-Remote-User"]


# -- local APIServices and discovery --------------------------------------------------------------------------


def crd_table() -> ResourceTable:
    gizmos = Resource("toys.example.com", "v1", "Gizmo", "gizmos", True, custom=True)
    gizmos_beta = Resource("toys.example.com", "v1beta1", "Gizmo", "gizmos", True, custom=True)
    return ResourceTable([*TABLE.resources, *resource_metrics.RESOURCES, gizmos, gizmos_beta])


def test_local_apiservices_for_the_served_group_versions():
    table = crd_table()
    builtin = {api.name_of(o): o for o in builtin_apiservices(table)}
    assert "v1." in builtin and "v2.autoscaling" in builtin and "v1.apiregistration.k8s.io" not in builtin
    assert builtin["v1."]["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert {o["metadata"]["labels"][api.AUTOMANAGED_LABEL] for o in builtin.values()} == {"onstart"}
    crds = crd_apiservices(table)
    assert [(api.name_of(o), o["metadata"]["labels"][api.AUTOMANAGED_LABEL]) for o in crds] == [
        ("v1.toys.example.com", "true"), ("v1beta1.toys.example.com", "true")
    ]  # fmt: skip


def remote(name: str, gp: int, vp: int, available: bool = True) -> dict[str, Any]:
    version, _, group = name.partition(".")
    obj = api.make(group, version, gp, vp)
    obj["spec"]["service"] = {"namespace": "w", "name": "api", "port": 443}
    if available:
        api.set_condition(obj, api.new_condition("True", "Passed", "all checks passed"))
    return obj


def test_legacy_apis_lists_every_apiservice_in_upstreams_order():
    table = crd_table()
    services = [*builtin_apiservices(table), remote("v1alpha1.wardle.example.com", 1000, 15),
                remote("v1beta1.wardle.example.com", 1000, 20, available=False), remote("v1.top.example.com", 19000, 1)]  # fmt: skip
    groups = orjson.loads(api_group_list(services, table))["groups"]
    names = [g["name"] for g in groups]
    assert names[:3] == ["apiregistration.k8s.io", "top.example.com", "apps"]
    # CRD groups (1000, no APIService yet) and wardle (1000) by name; metrics.k8s.io (100) last
    assert names[-3:] == ["toys.example.com", "wardle.example.com", "metrics.k8s.io"]
    wardle = next(g for g in groups if g["name"] == "wardle.example.com")
    assert [v["version"] for v in wardle["versions"]] == ["v1beta1", "v1alpha1"]  # by versionPriority
    doc = orjson.loads(api_group("wardle.example.com", services, table))  # type: ignore[arg-type]
    assert doc["kind"] == "APIGroup" and doc["preferredVersion"]["version"] == "v1beta1"
    assert api_group("nothing.example.com", services, table) is None


def test_aggregated_discovery_merges_the_remote_versions():
    table = crd_table()
    wardle = remote("v1alpha1.wardle.example.com", 1000, 15)
    shadow = remote("v1.apps", 17800, 15)  # an APIService that moved a built-in group version elsewhere
    docs = {
        "v1alpha1.wardle.example.com": {"version": "v1alpha1", "freshness": "Current", "resources": [{"resource": "flunders"}]},
        "v1.apps": {"version": "v1", "freshness": "Stale"},
    }  # fmt: skip
    doc = orjson.loads(aggregated("v2", table, [*builtin_apiservices(table), wardle, shadow], docs))
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    names = [g["metadata"]["name"] for g in doc["items"]]
    assert names[:2] == ["apiregistration.k8s.io", "apps"]
    assert names[-3:] == ["toys.example.com", "wardle.example.com", "metrics.k8s.io"]
    by_name = {g["metadata"]["name"]: g["versions"] for g in doc["items"]}
    assert by_name["wardle.example.com"] == [docs["v1alpha1.wardle.example.com"]]
    assert by_name["apps"] == [{"version": "v1", "freshness": "Stale"}]
    assert [v["version"] for v in by_name["toys.example.com"]] == ["v1", "v1beta1"]


def test_a_legacy_resource_list_in_the_aggregated_form():
    legacy = [
        {"name": "flunders", "singularName": "flunder", "namespaced": True, "kind": "Flunder", "verbs": ["get"],
         "shortNames": ["fl"]},
        {"name": "flunders/status", "singularName": "", "namespaced": True, "kind": "Flunder", "verbs": ["get"]},
        {"name": "fischers/scale", "singularName": "", "namespaced": False, "group": "autoscaling", "version": "v1",
         "kind": "Scale", "verbs": ["get", "update"]},
    ]  # fmt: skip
    assert resources_from_legacy(legacy) == [
        {"resource": "flunders", "responseKind": {"group": "", "version": "", "kind": "Flunder"}, "scope": "Namespaced",
         "singularResource": "flunder", "verbs": ["get"], "shortNames": ["fl"],
         "subresources": [{"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                           "verbs": ["get"]}]},
        {"resource": "fischers", "responseKind": {}, "scope": "Cluster", "singularResource": "", "verbs": None,
         "subresources": [{"subresource": "scale",
                           "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                           "verbs": ["get", "update"]}]},
    ]  # fmt: skip
