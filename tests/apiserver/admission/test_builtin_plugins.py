"""The built-in admission plugins of kube-apiserver v1.32 through a real API server with upstream's default plugin
set, kubectl, and a controller manager running the serviceaccount and resourcequota controllers: a pod gets its
service account and the kube-api-access volume, LimitRange defaults and limits, priorities from PriorityClasses,
RuntimeClass overhead and scheduling, the default IngressClass, quotas charged and refused with upstream's
messages, and the CertificateSigningRequest plugins under RBAC."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.manager import ControllerManager
from pyk8s.testing.cluster import APIServerProcess

_counter = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    # Upstream's default plugins (admission_args=()), RBAC so that the certificate plugins have something to ask.
    proc = APIServerProcess(admission_args=(), extra_args=("--authorization-mode=RBAC",)).start()
    config = load_kubeconfig(str(proc.kubeconfig)).with_options(qps=-1)
    loop = asyncio.new_event_loop()
    holder: dict[str, Any] = {}
    ready = threading.Event()

    async def main() -> None:
        async with RESTClient(config) as client:
            holder["task"] = asyncio.current_task()
            ready.set()
            await ControllerManager(client, ["serviceaccount-controller", "resourcequota-controller"]).run()

    def run() -> None:
        try:
            loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=run, name="controller-manager", daemon=True)
    thread.start()
    ready.wait(30)
    yield proc
    loop.call_soon_threadsafe(holder["task"].cancel)
    thread.join(30)
    proc.cleanup()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def ns(server: APIServerProcess) -> str:
    name = f"adm{next(_counter)}"
    server.create_namespace(name)
    wait_for("the default service account",
             lambda: server.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200)  # fmt: skip
    return name


def apply(server: APIServerProcess, ns: str, *objects: dict[str, Any]) -> Any:
    return server.kubectl("apply", "-n", ns, "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))  # fmt: skip


def get(server: APIServerProcess, ns: str, kind: str, name: str) -> dict[str, Any]:
    res = server.kubectl("get", "-n", ns, kind, name, "-o", "json", check=True)
    return json.loads(res.stdout)


def pod(name: str, *, containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": containers or [{"name": name, "image": "nginx"}], **spec}}  # fmt: skip


def container(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "nginx", "resources": resources}


# -- ServiceAccount -----------------------------------------------------------------------------------------------


def test_a_pod_runs_as_default_with_the_api_access_volume(server: APIServerProcess, ns: str) -> None:
    server.kubectl("run", "web", "-n", ns, "--image=nginx", check=True)
    spec = get(server, ns, "pod", "web")["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    [volume] = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    }  # fmt: skip
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    ]


def test_automount_off_and_image_pull_secrets(server: APIServerProcess, ns: str) -> None:
    apply(server, ns, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"},
                       "automountServiceAccountToken": False, "imagePullSecrets": [{"name": "regcred"}]})  # fmt: skip
    apply(server, ns, pod("quiet", serviceAccountName="builder"),
          pod("own-mount", initContainers=[{"name": "init", "image": "busybox", "volumeMounts": [
              {"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
              volumes=[{"name": "mine", "emptyDir": {}}]))  # fmt: skip
    quiet = get(server, ns, "pod", "quiet")["spec"]
    assert not any(v["name"].startswith("kube-api-access-") for v in quiet.get("volumes", []))
    assert quiet["imagePullSecrets"] == [{"name": "regcred"}]
    # A container with its own mount at the path keeps it; the others get the token volume.
    own = get(server, ns, "pod", "own-mount")["spec"]
    assert [m["name"] for m in own["initContainers"][0]["volumeMounts"]] == ["mine"]
    assert own["containers"][0]["volumeMounts"][0]["name"].startswith("kube-api-access-")


def test_a_missing_service_account_is_refused(server: APIServerProcess, ns: str) -> None:
    res = apply(server, ns, pod("lost", serviceAccountName="nobody"))
    assert res.returncode != 0
    assert (f'pods "lost" is forbidden: error looking up service account {ns}/nobody: '
            'serviceaccount "nobody" not found') in res.stderr  # fmt: skip


def test_mirror_pods_reference_no_secrets(server: APIServerProcess, ns: str) -> None:
    mirror = pod("static", volumes=[{"name": "s", "secret": {"secretName": "x"}}])
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods", mirror)
    assert (status, body["message"]) == (403, 'pods "static" is forbidden: a mirror pod may not reference secrets')


# -- LimitRanger --------------------------------------------------------------------------------------------------


def test_limit_range_defaults_and_limits(server: APIServerProcess, ns: str) -> None:
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
              "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"},
                                   "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}}]}}  # fmt: skip
    apply(server, ns, limits)
    wait_for("the LimitRange in the cache", lambda: "LimitRanger" in json.dumps(
        get(server, ns, "pod", "probe") if apply(server, ns, pod("probe")).returncode == 0 else {}))  # fmt: skip
    server.kubectl("run", "app", "-n", ns, "--image=nginx", check=True)
    created = get(server, ns, "pod", "app")
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}  # fmt: skip
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    )
    assert created["status"]["qosClass"] == "Burstable"
    res = apply(server, ns, pod("big", containers=[container("big", limits={"cpu": "2"})]))
    assert 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in res.stderr


# -- Priority -----------------------------------------------------------------------------------------------------


def test_priority_from_the_priority_class(server: APIServerProcess, ns: str) -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"high-{ns}"},
            "value": 1000, "preemptionPolicy": "Never"}  # fmt: skip
    apply(server, ns, high)
    apply(server, ns, pod("vip", priorityClassName=f"high-{ns}"))
    spec = get(server, ns, "pod", "vip")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    plain = get(server, ns, "pod", "vip") and apply(server, ns, pod("plain"))
    assert plain.returncode == 0
    spec = get(server, ns, "pod", "plain")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    res = apply(server, ns, pod("unknown", priorityClassName="nope"))
    assert 'pods "unknown" is forbidden: no PriorityClass with name nope was found' in res.stderr
    res = apply(server, ns, pod("stated", priorityClassName=f"high-{ns}", priority=5))
    assert ('pods "stated" is forbidden: the integer value of priority (5) must not be provided in pod spec; '
            "priority admission controller computed 1000 from the given PriorityClass name") in res.stderr  # fmt: skip


def test_only_one_global_default_priority_class(server: APIServerProcess) -> None:
    first = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "first-default"},
             "value": 10, "globalDefault": True}  # fmt: skip
    second = {**first, "metadata": {"name": "second-default"}}
    status, _ = server.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", first)
    assert status == 201
    try:
        wait_for("the default class in the cache", lambda: server.request(
            "POST", "/apis/scheduling.k8s.io/v1/priorityclasses?dryRun=All", second)[0] == 403)  # fmt: skip
        status, body = server.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", second)
        assert (status, body["message"]) == (403, 'priorityclasses.scheduling.k8s.io "second-default" is forbidden: '
                                                  "PriorityClass first-default is already marked as default. "
                                                  "Only one default can exist")  # fmt: skip
    finally:
        server.request("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/first-default")


# -- RuntimeClass and DefaultIngressClass ---------------------------------------------------------------------------


def test_runtime_class_overhead_and_scheduling(server: APIServerProcess, ns: str) -> None:
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": f"kata-{ns}"}, "handler": "kata",
          "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
          "scheduling": {"nodeSelector": {"runtime": "kata"},
                         "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}}  # fmt: skip
    apply(server, ns, rc)
    apply(server, ns, pod("sandboxed", runtimeClassName=f"kata-{ns}"))
    spec = get(server, ns, "pod", "sandboxed")["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"runtime": "kata"}
    assert {"key": "kata", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    res = apply(server, ns, pod("clash", runtimeClassName=f"kata-{ns}", nodeSelector={"runtime": "runc"}))
    assert ('pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; '
            "pod.spec.nodeSelector[runtime] = runc") in res.stderr  # fmt: skip
    res = apply(server, ns, pod("nowhere", runtimeClassName="missing"))
    assert 'pods "nowhere" is forbidden: pod rejected: RuntimeClass "missing" not found' in res.stderr


def test_default_ingress_class(server: APIServerProcess, ns: str) -> None:
    cls = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {
        "name": "nginx-default", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
        "spec": {"controller": "k8s.io/ingress-nginx"}}  # fmt: skip
    apply(server, ns, cls)
    try:

        def ingress(name: str) -> dict[str, Any]:
            return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
                    "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}  # fmt: skip

        wait_for("the IngressClass in the cache", lambda: server.request(
            "POST", f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses?dryRun=All", ingress("x"))[1].get(
            "spec", {}).get("ingressClassName") == "nginx-default")  # fmt: skip
        apply(server, ns, ingress("site"))
        assert get(server, ns, "ingress", "site")["spec"]["ingressClassName"] == "nginx-default"
    finally:
        server.kubectl("delete", "ingressclass", "nginx-default")


# -- ResourceQuota ------------------------------------------------------------------------------------------------


def quota_status(server: APIServerProcess, ns: str, name: str) -> dict[str, Any]:
    return get(server, ns, "resourcequota", name).get("status") or {}


def test_quota_charges_and_refuses_pods(server: APIServerProcess, ns: str) -> None:
    apply(server, ns, {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
                       "spec": {"hard": {"pods": "2", "requests.cpu": "1", "limits.cpu": "2"}}})  # fmt: skip
    wait_for("the controller's first usage", lambda: quota_status(server, ns, "compute").get("used"))
    assert quota_status(server, ns, "compute") == {
        "hard": {"limits.cpu": "2", "pods": "2", "requests.cpu": "1"},
        "used": {"limits.cpu": "0", "pods": "0", "requests.cpu": "0"}}  # fmt: skip
    res = apply(server, ns, pod("bare"))
    assert ('pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: bare; '
            "requests.cpu for: bare") in res.stderr  # fmt: skip
    apply(server, ns, pod("one", containers=[container("one", {"cpu": "500m"}, {"cpu": "1500m"})]))
    res = apply(server, ns, pod("two", containers=[container("two", {"cpu": "500m"}, {"cpu": "1"})]))
    assert ('pods "two" is forbidden: exceeded quota: compute, requested: limits.cpu=1, used: limits.cpu=1500m, '
            "limited: limits.cpu=2") in res.stderr  # fmt: skip
    assert quota_status(server, ns, "compute")["used"] == {"limits.cpu": "1500m", "pods": "1", "requests.cpu": "500m"}
    described = server.kubectl("describe", "quota", "compute", "-n", ns, check=True).stdout
    assert [line.split() for line in described.splitlines() if line.startswith(("limits.cpu", "pods"))] == [
        ["limits.cpu", "1500m", "2"], ["pods", "1", "2"]]  # fmt: skip
    # Deleting the pod frees its usage (the controller's replenishment).
    server.kubectl("delete", "pod", "one", "-n", ns, "--grace-period=0", "--force", check=True)
    wait_for("usage released", lambda: quota_status(server, ns, "compute")["used"].get("pods") == "0")


def test_object_count_quota(server: APIServerProcess, ns: str) -> None:
    apply(server, ns, {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "objects"},
                       "spec": {"hard": {"count/configmaps": "1", "count/deployments.apps": "0"}}})  # fmt: skip
    wait_for("the controller's first usage", lambda: quota_status(server, ns, "objects").get("used"))
    assert server.kubectl("create", "configmap", "a", "-n", ns).returncode == 0
    res = server.kubectl("create", "configmap", "b", "-n", ns)
    assert ('configmaps "b" is forbidden: exceeded quota: objects, requested: count/configmaps=1, '
            "used: count/configmaps=1, limited: count/configmaps=1") in res.stderr  # fmt: skip
    res = server.kubectl("create", "deployment", "d", "-n", ns, "--image=nginx")
    assert ('deployments.apps "d" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, '
            "used: count/deployments.apps=0, limited: count/deployments.apps=0") in res.stderr  # fmt: skip


def test_a_quota_without_status_refuses_what_it_covers(server: APIServerProcess, ns: str) -> None:
    # A quota written with a status (as a restore might) that lacks a usage it limits: upstream's "status unknown".
    status, _ = server.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "svc"}, "spec": {"hard": {"services": "1"}}})  # fmt: skip
    assert status == 201
    wait_for("the controller's first usage", lambda: quota_status(server, ns, "svc").get("used"))
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}
    apply(server, ns, svc)
    res = apply(server, ns, {**svc, "metadata": {"name": "b"}})
    assert ('services "b" is forbidden: exceeded quota: svc, requested: services=1, used: services=1, '
            "limited: services=1") in res.stderr  # fmt: skip


# -- certificates -----------------------------------------------------------------------------------------------


def csr(name: str, signer: str, organization: str = "") -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(x509.NameOID.COMMON_NAME, name)]
    if organization:
        attrs.append(x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, organization))
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    pem = request.public_bytes(serialization.Encoding.PEM)
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem).decode(), "signerName": signer,
                     "usages": ["client auth"]}}  # fmt: skip


def test_subject_restriction(server: APIServerProcess) -> None:
    status, body = server.request("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                                  csr("root", "kubernetes.io/kube-apiserver-client", "system:masters"))  # fmt: skip
    assert (status, body["message"]) == (403, 'certificatesigningrequests.certificates.k8s.io "root" is forbidden: '
                                              "use of kubernetes.io/kube-apiserver-client signer with system:masters "
                                              "group is not allowed")  # fmt: skip


def test_signing_needs_the_sign_verb_on_the_signer(server: APIServerProcess) -> None:
    status, _ = server.request("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                               csr("widget", "example.com/widgets"))  # fmt: skip
    assert status == 201
    signer = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "csr-signer"},
              "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                         "verbs": ["get"]},
                        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/status"],
                         "verbs": ["update"]}]}  # fmt: skip
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "csr-signer"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-signer"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]}  # fmt: skip
    apply(server, "default", signer, binding)

    def fail_it() -> tuple[int, Any]:
        current = get(server, "default", "csr", "widget")
        current["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "SignerError",
                                             "message": "no key"}]}  # fmt: skip
        return server.request("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/widget/status",
                              current, headers={"Impersonate-User": "jane"})  # fmt: skip

    def refused_by_admission() -> tuple[int, Any] | None:
        # RBAC may not have seen the binding yet (a 403 of its own); the plugin's 403 names the signer.
        status, body = fail_it()
        return (status, body) if status != 403 or "signerName" in body["message"] else None

    status, body = wait_for("the plugin's refusal", refused_by_admission)
    assert (status, body["message"]) == (403, 'certificatesigningrequests.certificates.k8s.io "widget" is forbidden: '
                                              'user not permitted to sign requests with signerName '
                                              '"example.com/widgets"')  # fmt: skip
    # The domain's wildcard is enough.
    signer["rules"].append({"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                            "resourceNames": ["example.com/*"], "verbs": ["sign"]})  # fmt: skip
    apply(server, "default", signer)
    wait_for("jane may sign", lambda: fail_it()[0] == 200)
    conditions = get(server, "default", "csr", "widget")["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Failed"]
