"""The official `kubernetes` Python client against pyk8s: CRUD, patches, list+watch, resuming a watch from
a resourceVersion, and 410 when that resourceVersion is compacted away."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from pyk8s.testing.cluster import APIServerProcess


def api_client(cluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "t"}}, "data": data}


def test_create_get_patch_replace_delete(cluster, ns):
    v1 = client.CoreV1Api(api_client(cluster))
    created = v1.create_namespaced_config_map(ns, cm("a", x="1"))
    assert created.metadata.uid and created.data == {"x": "1"}
    patched = v1.patch_namespaced_config_map("a", ns, {"data": {"y": "2"}})  # strategic merge (dict body)
    assert patched.data == {"x": "1", "y": "2"}
    patched = v1.patch_namespaced_config_map("a", ns, [{"op": "remove", "path": "/data/x"}])  # JSON patch
    assert patched.data == {"y": "2"}
    body = v1.read_namespaced_config_map("a", ns)
    body.data = {"z": "3"}
    replaced = v1.replace_namespaced_config_map("a", ns, body)
    assert replaced.data == {"z": "3"}
    # A stale resourceVersion is a 409 Conflict.
    body.data = {"stale": "yes"}
    with pytest.raises(ApiException) as err:
        v1.replace_namespaced_config_map("a", ns, body)
    assert err.value.status == 409 and "the object has been modified" in err.value.body
    status = v1.delete_namespaced_config_map("a", ns)
    # client 37 hands back the Status as a dict, older ones as a V1Status
    assert (status["status"] if isinstance(status, dict) else status.status) == "Success"
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_config_map("a", ns)
    assert err.value.status == 404


def test_already_exists_and_invalid(cluster, ns):
    v1 = client.CoreV1Api(api_client(cluster))
    v1.create_namespaced_config_map(ns, cm("dup"))
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_config_map(ns, cm("dup"))
    assert err.value.status == 409 and '"reason":"AlreadyExists"' in err.value.body.replace(" ", "")
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_config_map(ns, cm("UPPER"))
    assert err.value.status == 422


def test_list_pages_and_label_selectors(cluster, ns):
    v1 = client.CoreV1Api(api_client(cluster))
    for i in range(7):
        body = cm(f"c{i}")
        body["metadata"]["labels"]["parity"] = "even" if i % 2 == 0 else "odd"
        v1.create_namespaced_config_map(ns, body)
    names, token = [], None
    while True:
        page = v1.list_namespaced_config_map(ns, limit=3, _continue=token)
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"c{i}" for i in range(7)]
    odd = v1.list_namespaced_config_map(ns, label_selector="parity=odd")
    assert [c.metadata.name for c in odd.items] == ["c1", "c3", "c5"]
    one = v1.list_namespaced_config_map(ns, field_selector="metadata.name=c4")
    assert [c.metadata.name for c in one.items] == ["c4"]
    with pytest.raises(ApiException) as err:
        v1.list_namespaced_config_map(ns, field_selector="data.x=1")
    assert err.value.status == 400


def test_watch_sees_changes_and_resumes_from_a_resource_version(cluster, ns):
    v1 = client.CoreV1Api(api_client(cluster))
    listed = v1.list_namespaced_config_map(ns)
    rv = listed.metadata.resource_version
    v1.create_namespaced_config_map(ns, cm("w1"))
    v1.patch_namespaced_config_map("w1", ns, {"data": {"k": "v"}})
    v1.delete_namespaced_config_map("w1", ns)
    w = watch.Watch()
    seen = []
    for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


def test_watch_streams_live_events(cluster, ns):
    v1 = client.CoreV1Api(api_client(cluster))
    rv = v1.list_namespaced_config_map(ns).metadata.resource_version

    def later():
        time.sleep(0.5)
        v1.create_namespaced_config_map(ns, cm("live"))

    threading.Thread(target=later).start()
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", "live")
        w.stop()
        break
    else:
        pytest.fail("no event arrived")


def test_watch_from_a_compacted_resource_version_is_410():
    with APIServerProcess(extra_args=("--etcd-compaction-interval", "1s")) as server:
        server.create_namespace("w")
        v1 = client.CoreV1Api(api_client(server))
        first = v1.create_namespaced_config_map("w", cm("x"))
        old_rv = first.metadata.resource_version
        v1.create_namespaced_config_map("w", cm("y"))
        page = v1.list_namespaced_config_map("w", limit=1)
        for i in range(3):
            v1.patch_namespaced_config_map("x", "w", {"data": {"i": str(i)}})
        time.sleep(3.5)  # two compaction rounds: history up to the first round is gone
        v1.patch_namespaced_config_map("x", "w", {"data": {"i": "last"}})
        resp = v1.list_namespaced_config_map(
            "w", watch=True, resource_version=old_rv, _preload_content=False, timeout_seconds=5
        )
        lines = [line for line in resp.read().decode().splitlines() if line]
        assert len(lines) == 1 and '"type":"ERROR"' in lines[0] and '"code":410' in lines[0]
        assert '"reason":"Expired"' in lines[0]
        # An expired continue token: 410, with a token that finishes the list at the current revision.
        status, body = server.request(
            "GET", f"/api/v1/namespaces/w/configmaps?limit=1&continue={page.metadata._continue}"
        )
        assert status == 410 and body["reason"] == "Expired" and body["metadata"]["continue"]
        status, rest = server.request(
            "GET", f"/api/v1/namespaces/w/configmaps?limit=1&continue={body['metadata']['continue']}"
        )
        assert status == 200 and [i["metadata"]["name"] for i in rest["items"]] == ["y"]
        # The official client's watch helper retries once from its resourceVersion, then raises 410.
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(
                v1.list_namespaced_config_map, "w", resource_version=old_rv, timeout_seconds=5
            ):
                pass
        assert err.value.status == 410
