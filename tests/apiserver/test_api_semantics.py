"""Object semantics over raw HTTP: what upstream's apiserver answers for generation, status, finalizers,
graceful deletion, propagation, bindings, evictions, namespaces, generateName, limits and bad requests."""

from __future__ import annotations

import time

import pytest


def pod(name: str, node: str = "", **extra: object) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **extra}, "spec": spec}


def deployment(name: str) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": name}},
                 "template": {"metadata": {"labels": {"a": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }  # fmt: skip


def ok(res: tuple[int, object], code: int = 200) -> dict:
    status, body = res
    assert status == code, body
    assert isinstance(body, dict)
    return body


def test_generation_moves_with_spec_not_status(cluster, ns):
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    d = ok(cluster.request("POST", base, deployment("g")), 201)
    assert d["metadata"]["generation"] == 1 and d["status"] == {}
    d = ok(cluster.request("PATCH", f"{base}/g", {"spec": {"replicas": 3}}, "application/merge-patch+json"))
    assert d["metadata"]["generation"] == 2
    # Status writes through the main resource are ignored; through /status they land and keep the generation.
    d = ok(cluster.request("PATCH", f"{base}/g", {"status": {"replicas": 9}}, "application/merge-patch+json"))
    assert d["status"] == {} and d["metadata"]["generation"] == 2
    d = ok(
        cluster.request(
            "PATCH",
            f"{base}/g/status",
            {"status": {"replicas": 9}, "spec": {"replicas": 7}},
            "application/merge-patch+json",
        )
    )
    assert d["status"] == {"replicas": 9} and d["spec"]["replicas"] == 3 and d["metadata"]["generation"] == 2
    scale = ok(cluster.request("GET", f"{base}/g/scale"))
    assert (
        scale["kind"] == "Scale"
        and scale["spec"]["replicas"] == 3
        and scale["status"] == {"replicas": 9, "selector": "a=g"}
    )


def test_finalizers_hold_an_object_until_removed(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/configmaps"
    ok(cluster.request("POST", base, {"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}), 201)
    marked = ok(cluster.request("DELETE", f"{base}/f"))
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["finalizers"] == ["example.com/hold"]
    ok(cluster.request("GET", f"{base}/f"))
    status, body = cluster.request(
        "PATCH", f"{base}/f", {"metadata": {"finalizers": ["example.com/hold", "new"]}}, "application/merge-patch+json"
    )
    assert status == 422 and "no new finalizers can be added if the object is being deleted" in str(body)
    ok(cluster.request("PATCH", f"{base}/f", {"metadata": {"finalizers": None}}, "application/merge-patch+json"))
    assert cluster.request("GET", f"{base}/f")[0] == 404


@pytest.mark.parametrize(("policy", "finalizer"), [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
def test_propagation_policies_set_the_garbage_collector_finalizers(cluster, ns, policy, finalizer):
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    ok(cluster.request("POST", base, deployment("p")), 201)
    marked = ok(cluster.request("DELETE", f"{base}/p", {"propagationPolicy": policy}))
    assert marked["metadata"]["finalizers"] == [finalizer] and marked["metadata"]["deletionTimestamp"]
    gone = ok(cluster.request("DELETE", f"{base}/p", {"propagationPolicy": "Background"}))
    assert gone["metadata"].get("finalizers") in (None, [])
    ok(cluster.request("POST", base, deployment("b")), 201)
    status = ok(cluster.request("DELETE", f"{base}/b", {"propagationPolicy": "Background"}))
    assert status["kind"] == "Status" and status["status"] == "Success" and status["details"]["name"] == "b"


def test_graceful_pod_deletion(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/pods"
    ok(cluster.request("POST", base, pod("unscheduled")), 201)
    gone = ok(cluster.request("DELETE", f"{base}/unscheduled"))
    assert gone["kind"] == "Pod" and cluster.request("GET", f"{base}/unscheduled")[0] == 404
    ok(cluster.request("POST", base, pod("running", node="node-1")), 201)
    marked = ok(cluster.request("DELETE", f"{base}/running"))
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30 and marked["metadata"]["deletionTimestamp"]
    ok(cluster.request("GET", f"{base}/running"))  # waits for its node to confirm
    ok(cluster.request("DELETE", f"{base}/running?gracePeriodSeconds=0"))
    assert cluster.request("GET", f"{base}/running")[0] == 404


def test_binding_and_eviction(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/pods"
    created = ok(cluster.request("POST", base, pod("b")), 201)
    assert created["status"]["phase"] == "Pending"
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"kind": "Node", "name": "node-7"},
    }
    ok(cluster.request("POST", f"{base}/b/binding", binding), 201)
    bound = ok(cluster.request("GET", f"{base}/b"))
    assert bound["spec"]["nodeName"] == "node-7"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    status, body = cluster.request("POST", f"{base}/b/binding", binding)
    assert status == 409 and "already assigned" in str(body)
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "b", "namespace": ns},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }
    ok(cluster.request("POST", f"{base}/b/eviction", eviction), 201)
    assert cluster.request("GET", f"{base}/b")[0] == 404


def test_binding_checks_the_pods_uid_and_leaves_managed_fields(cluster, ns):
    # A binding names the pod it was decided for: a pod replaced under the same name is not bound by it.
    base = f"/api/v1/namespaces/{ns}/pods"
    created = ok(cluster.request("POST", base, pod("u")), 201)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "u", "uid": "not-the-pods-uid"},
               "target": {"kind": "Node", "name": "node-1"}}  # fmt: skip
    status, body = cluster.request("POST", f"{base}/u/binding", binding)
    assert status == 409 and "Precondition failed: UID in precondition: not-the-pods-uid" in str(body)
    assert "nodeName" not in ok(cluster.request("GET", f"{base}/u"))["spec"]
    binding["metadata"]["uid"] = created["metadata"]["uid"]
    ok(cluster.request("POST", f"{base}/u/binding", binding), 201)
    bound = ok(cluster.request("GET", f"{base}/u"))
    assert bound["spec"]["nodeName"] == "node-1"
    # As upstream's, the binding writes the pod directly: its managed fields stay those of the create.
    assert bound["metadata"]["managedFields"] == created["metadata"]["managedFields"]


def test_pod_spec_is_immutable_but_image_is_not(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/pods"
    ok(cluster.request("POST", base, pod("i")), 201)
    ok(
        cluster.request(
            "PATCH",
            f"{base}/i",
            {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}},
            "application/strategic-merge-patch+json",
        )
    )
    status, body = cluster.request(
        "PATCH", f"{base}/i", {"spec": {"restartPolicy": "Never"}}, "application/merge-patch+json"
    )
    assert status == 422 and "pod updates may not change fields other than" in str(body)


def test_terminating_and_missing_namespaces(cluster):
    cluster.create_namespace("doomed")
    ns = ok(cluster.request("GET", "/api/v1/namespaces/doomed"))
    assert ns["status"]["phase"] == "Active" and ns["spec"]["finalizers"] == ["kubernetes"]
    marked = ok(cluster.request("DELETE", "/api/v1/namespaces/doomed"))
    assert marked["status"]["phase"] == "Terminating"
    status, body = cluster.request("POST", "/api/v1/namespaces/doomed/configmaps", {"metadata": {"name": "x"}})
    assert status == 403 and "because it is being terminated" in str(body)
    # Controllers recognise this refusal by its cause and create nothing more there, silently.
    assert body["details"]["causes"] == [
        {
            "type": "NamespaceTerminating",
            "message": "namespace doomed is being terminated",
            "field": "metadata.namespace",
        }
    ]
    status, body = cluster.request("POST", "/api/v1/namespaces/nowhere/configmaps", {"metadata": {"name": "x"}})
    assert status == 404 and body["message"] == 'namespaces "nowhere" not found'
    status, body = cluster.request("DELETE", "/api/v1/namespaces/default")
    assert status == 403
    # /finalize removes the spec finalizer; with nothing left the namespace is gone.
    marked["spec"]["finalizers"] = []
    ok(cluster.request("PUT", "/api/v1/namespaces/doomed/finalize", marked))
    assert cluster.request("GET", "/api/v1/namespaces/doomed")[0] == 404


def test_generate_name(cluster, ns):
    body = ok(
        cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"generateName": "gen-"}}), 201
    )
    name = body["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == 9


def test_annotations_are_limited_to_256_kib(cluster, ns):
    big = {"metadata": {"name": "big", "annotations": {"a": "x" * (256 * 1024)}}}
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", big)
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.annotations"


@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "code", "reason"),
    [
        ("GET", "/api/v1/nothings", None, "application/json", 404, "NotFound"),
        ("GET", "/no/such/path", None, "application/json", 404, "NotFound"),
        ("PUT", "/api/v1/namespaces/default/configmaps", {}, "application/json", 405, "MethodNotAllowed"),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"\x0a\x0b",
            "application/vnd.kubernetes.protobuf",
            400,
            "BadRequest",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            b"{}",
            "application/apply-patch+yaml",
            422,
            "Invalid",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            b"{}",
            "application/apply-patch+cbor",
            415,
            "UnsupportedMediaType",
        ),
        ("POST", "/api/v1/namespaces/default/configmaps", b"{not json", "application/json", 400, "BadRequest"),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"kind": "Secret", "metadata": {"name": "k"}},
            "application/json",
            400,
            "BadRequest",
        ),
        ("GET", "/api/v1/configmaps?labelSelector=a%3D%3D%3D", None, "application/json", 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?resourceVersionMatch=Exact", None, "application/json", 422, "Invalid"),
    ],
)
def test_bad_requests_get_upstream_status(cluster, method, path, body, ctype, code, reason):
    status, resp = cluster.request(method, path, body, ctype)
    assert status == code, resp
    assert resp["kind"] == "Status" and resp["reason"] == reason and resp["code"] == code


def test_body_size_limit(cluster, ns):
    status, resp = cluster.request(
        "POST", f"/api/v1/namespaces/{ns}/configmaps", b'{"x":"' + b"a" * (3 * 1024 * 1024 + 10) + b'"}'
    )
    assert status == 413 and resp["reason"] == "RequestEntityTooLarge"


def test_dry_run_writes_nothing(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/configmaps"
    ok(cluster.request("POST", f"{base}?dryRun=All", {"metadata": {"name": "dry"}}), 201)
    assert cluster.request("GET", f"{base}/dry")[0] == 404
    ok(cluster.request("POST", base, {"metadata": {"name": "real"}, "data": {"a": "1"}}), 201)
    ok(cluster.request("PATCH", f"{base}/real?dryRun=All", {"data": {"a": "2"}}, "application/merge-patch+json"))
    ok(cluster.request("DELETE", f"{base}/real", {"dryRun": ["All"]}))
    assert ok(cluster.request("GET", f"{base}/real"))["data"] == {"a": "1"}


def test_events_are_served_in_both_groups(cluster, ns):
    event = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns}, "reason": "Test",
             "message": "hello", "type": "Normal", "source": {"component": "me"}}  # fmt: skip
    ok(cluster.request("POST", f"/api/v1/namespaces/{ns}/events", event), 201)
    new = ok(cluster.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events/e1"))
    assert new["apiVersion"] == "events.k8s.io/v1" and new["note"] == "hello" and new["regarding"]["name"] == "p"
    sel = ok(
        cluster.request("GET", f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3Dp,reason%3DTest")
    )
    assert [e["metadata"]["name"] for e in sel["items"]] == ["e1"]


def test_autoscaling_v1_and_v2_views_of_one_object(cluster, ns):
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                    "targetCPUUtilizationPercentage": 60}}  # fmt: skip
    ok(cluster.request("POST", f"/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers", hpa), 201)
    v2 = ok(cluster.request("GET", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/h"))
    assert v2["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 60}
    assert v2["spec"]["minReplicas"] == 1


def test_health_version_metrics_and_auth(cluster):
    status, text = cluster.request("GET", "/readyz?verbose")
    assert status == 200 and "[+]ping ok" in text and "readyz check passed" in text
    status, text = cluster.request("GET", "/livez/ping")
    assert status == 200 and text == "ok"
    status, text = cluster.request("GET", "/metrics")
    assert status == 200
    for name in ("apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_storage_objects",
                 "apiserver_current_inflight_requests", "apiserver_longrunning_requests"):  # fmt: skip
        assert name in text
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    # A wrong token is 401; no credentials is system:anonymous, whom the default RBAC policy lets read only
    # the public endpoints (403 elsewhere, as upstream).
    for headers, code in (({}, 403), ({"Authorization": "Bearer wrong"}, 401)):
        req = urllib.request.Request(f"{cluster.url}/api/v1/namespaces", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, context=ctx)
        assert err.value.code == code
    with urllib.request.urlopen(urllib.request.Request(f"{cluster.url}/version"), context=ctx) as r:
        assert r.status == 200  # public without credentials


def test_table_responses(cluster, ns):
    ok(
        cluster.request(
            "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "t"}, "data": {"a": "1", "b": "2"}}
        ),
        201,
    )
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    t = ok(cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps", headers=accept))
    assert t["kind"] == "Table" and [c["name"] for c in t["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert t["rows"][0]["cells"][:2] == ["t", 2] and t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    t = ok(cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps?includeObject=Object", headers=accept))
    assert t["rows"][0]["object"]["data"] == {"a": "1", "b": "2"}
    assert cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps?includeObject=Bogus", headers=accept)[0] == 400
    time.sleep(0)


@pytest.mark.parametrize(
    ("timeout", "status"), [("1m0s", 200), ("30s", 200), ("1h2m3.5s", 200), ("500ms", 200), ("abc", 400), ("30", 400)]
)
def test_the_timeout_parameter_is_a_go_duration(cluster, timeout, status):
    """kubectl sends --request-timeout as a Go duration (`60s` becomes `1m0s`); a bare number has no unit."""
    code, body = cluster.request("GET", f"/api/v1/namespaces?timeout={timeout}")
    assert code == status, body
    if status == 400:
        assert body["message"].startswith("invalid timeout specified in the request URL")


def test_kubectl_with_a_minute_long_request_timeout(cluster):
    assert cluster.kubectl("get", "namespaces", "--request-timeout=60s").returncode == 0
