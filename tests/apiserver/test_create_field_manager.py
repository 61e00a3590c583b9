"""What a create's field manager owns, as upstream's create handler records it: the object as the client sent it
with its defaults filled in, before the strategy and admission change it. So a pod's creator owns its
containers and the defaulted dnsPolicy, not the phase, the QoS class, the service account, the priority or the
tolerations the server adds (upstream: handlers/create.go runs the field manager on the decoded object)."""

from __future__ import annotations

import json

import pytest

from pyk8s.testing.cluster import APIServerProcess


@pytest.fixture(scope="module")
def server():
    s = APIServerProcess(admission_args=()).start()  # every default admission plugin pyk8s has, as `pyk8s up`
    # No controller manager runs here: the ServiceAccount plugin needs the account its controller would make.
    s.request("POST", "/api/v1/namespaces/default/serviceaccounts",
              {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})  # fmt: skip
    yield s
    s.cleanup()


def _paths(fields: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in fields.items():
        path = f"{prefix}/{k}"
        out.add(path)
        out |= _paths(v, path)
    return out


def test_a_pod_creator_owns_what_it_sent_and_the_defaults(server):
    assert server.kubectl("run", "web", "--image=nginx", "--labels=app=web").returncode == 0
    pod = json.loads(server.kubectl("get", "pod", "web", "-o", "json", "--show-managed-fields").stdout)
    [entry] = pod["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-run", "Update")
    owned = _paths(entry["fieldsV1"])
    container = '/f:spec/f:containers/k:{"name":"web"}'
    assert {"/f:metadata/f:labels/f:app", f"{container}/f:image", f"{container}/f:imagePullPolicy",
            "/f:spec/f:dnsPolicy", "/f:spec/f:restartPolicy", "/f:spec/f:terminationGracePeriodSeconds"} <= owned  # fmt: skip
    # Set by the server after the field manager ran: nobody owns them, though the pod has them.
    server_set = {"/f:status", "/f:spec/f:priority", "/f:spec/f:preemptionPolicy", "/f:spec/f:serviceAccountName",
                  "/f:spec/f:serviceAccount", "/f:spec/f:tolerations"}  # fmt: skip
    assert not owned & server_set
    spec = pod["spec"]
    assert (spec["priority"], spec["serviceAccountName"], pod["status"]["qosClass"]) == (0, "default", "BestEffort")
    assert {t["key"] for t in spec["tolerations"]} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def test_nodes_a_create_adds_whole_are_owned_themselves(server):
    # Upstream's "." entries: labels (absent from an empty Pod) and the container item are added whole; spec (a
    # struct Go always writes) and containers (written as null) are not.
    assert server.kubectl("run", "dots", "--image=nginx", "--labels=app=dots").returncode == 0
    pod = json.loads(server.kubectl("get", "pod", "dots", "-o", "json", "--show-managed-fields").stdout)
    fields = pod["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert "." not in fields["f:spec"] and "." not in fields["f:spec"]["f:containers"]
    assert next(iter(fields["f:spec"]["f:containers"]['k:{"name":"dots"}'])) == "."
    assert fields["f:spec"]["f:securityContext"] == {}  # an empty added struct is a leaf, as upstream's


def test_a_create_does_not_own_the_status_it_sent(server):
    # The main resource's status is a reset field: a client may send one, the server drops it, no one owns it.
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 7},
    }  # fmt: skip
    status, body = server.request("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert status == 201, body
    [entry] = body["metadata"]["managedFields"]
    assert "f:status" not in entry["fieldsV1"] and "f:spec" in entry["fieldsV1"]
