"""Admission beyond creates and updates, through a real API server, kubectl and a local HTTPS webhook: a DELETE
(and a deletecollection) is admitted with the stored object as oldObject and DeleteOptions as options, and a
validating webhook or a ValidatingAdmissionPolicy can refuse it with its message; a CONNECT (pods/exec,
pods/proxy, nodes/proxy) is admitted with the connect options as the object before anything is looked up; the
creates of subresources and of kinds that are never stored (serviceaccounts/token, pods/eviction, pods/binding,
an access review) go through admission as upstream's do.

Each test's webhook configurations select its own namespace (or names its own objects), so tests do not see
each other's webhooks."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp import web

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.webhook_server import WebhookServer

_names = itertools.count()


class Hooks(WebhookServer):
    """Webhooks told apart by path; every review is recorded. `/deny/<reason>` refuses with that message,
    `/deny-hour` refuses a TokenRequest of exactly an hour, anything else allows."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.reviews: list[tuple[str, dict[str, Any]]] = []

    def seen(self, path: str) -> list[dict[str, Any]]:
        return [r["request"] for p, r in self.reviews if p == path]

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append((request.path, review))
        req = review["request"]
        response: dict[str, Any] = {"uid": req["uid"], "allowed": True}
        if request.path.startswith("/deny/"):
            message = request.path.removeprefix("/deny/").replace("-", " ")
            response = {"uid": req["uid"], "allowed": False, "status": {"code": 403, "message": message}}
        elif (
            request.path == "/deny-hour"
            and ((req.get("object") or {}).get("spec") or {}).get("expirationSeconds") == 3600
        ):
            response = {"uid": req["uid"], "allowed": False, "status": {"message": "no hour-long tokens"}}
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})


@pytest.fixture(scope="module")
def hooks() -> Iterator[Hooks]:
    server = Hooks().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


@pytest.fixture
def ns(server: APIServerProcess) -> str:
    name = f"ops{next(_names)}"
    server.create_namespace(name)
    return name


def webhook_configuration(kind: str, name: str, hooks: Hooks, path: str, operations: list[str], resources: list[str],
                          ns: str | None = None) -> dict[str, Any]:  # fmt: skip
    hook: dict[str, Any] = {
        "name": f"{name}.pyk8s.test", "clientConfig": hooks.client_config(path), "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [{"operations": operations, "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources}],
    }  # fmt: skip
    if ns is not None:
        hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [hook]}  # fmt: skip


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Configurations reach admission through the watch caches: retry until `check` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def configmap(server: APIServerProcess, ns: str, name: str, labels: dict[str, str] | None = None) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
          "data": {"k": "v"}}  # fmt: skip
    server.kubectl("create", "-f", "-", input=json.dumps(cm), check=True)


# -- DELETE -----------------------------------------------------------------------------------------------------------


def test_a_validating_webhook_refuses_a_delete_with_its_message(
    server: APIServerProcess, hooks: Hooks, ns: str
) -> None:
    seen_path, deny_path = f"/seen-{ns}", f"/deny/{ns}-configmaps-stay"
    server.apply(
          webhook_configuration("MutatingWebhookConfiguration", f"del-m-{ns}", hooks, seen_path, ["DELETE"],
                                ["configmaps"], ns),
          webhook_configuration("ValidatingWebhookConfiguration", f"del-v-{ns}", hooks, deny_path, ["DELETE"],
                                ["configmaps"], ns))  # fmt: skip
    counter = itertools.count()

    def refused() -> str:
        name = f"cm{next(counter)}"
        configmap(server, ns, name)
        res = server.kubectl("delete", "configmap", name, "-n", ns, "--grace-period=7")
        assert res.returncode != 0, res.stdout
        return name

    name = eventually(refused)
    res = server.kubectl("delete", "configmap", name, "-n", ns)
    assert res.returncode != 0
    assert res.stderr.strip() == (
        # the webhook's Status has no reason, so kubectl names none (as with upstream's ToStatusErr)
        f'Error from server: admission webhook "del-v-{ns}.pyk8s.test" denied the request: {ns} configmaps stay'
    )
    assert server.kubectl("get", "configmap", name, "-n", ns).returncode == 0  # still there
    # Both phases saw the delete: no object, the stored one as oldObject, the DeleteOptions as options.
    for path in (seen_path, deny_path):
        req = [r for r in hooks.seen(path) if r.get("name") == name][-1]
        assert req["operation"] == "DELETE" and req["namespace"] == ns
        assert req["object"] is None
        assert req["oldObject"]["metadata"]["name"] == name and req["oldObject"]["data"] == {"k": "v"}
        assert req["options"]["kind"] == "DeleteOptions" and req["options"]["apiVersion"] == "meta.k8s.io/v1"
    first = next(r for r in hooks.seen(deny_path) if r.get("name") == name)
    assert first["options"]["gracePeriodSeconds"] == 7
    # A deletecollection is admitted object by object.
    status, body = server.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 403 and isinstance(body, dict), body
    assert body["message"].endswith(f"denied the request: {ns} configmaps stay")
    server.kubectl("delete", "validatingwebhookconfiguration", f"del-v-{ns}", check=True)
    server.kubectl("delete", "mutatingwebhookconfiguration", f"del-m-{ns}", check=True)
    eventually(lambda: _deleted(server, ns, name))


def _deleted(server: APIServerProcess, ns: str, name: str) -> None:
    res = server.kubectl("delete", "configmap", name, "-n", ns)
    assert res.returncode == 0, res.stderr


def test_a_validating_admission_policy_refuses_a_delete(server: APIServerProcess, ns: str) -> None:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": f"keep-{ns}"},
              "spec": {"matchConstraints": {"resourceRules": rules},
                       "validations": [{"expression": "!('keep' in oldObject.metadata.labels)",
                                        "message": "configmaps labelled keep are kept"}]}}  # fmt: skip
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": f"keep-{ns}"},
               "spec": {"policyName": f"keep-{ns}", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": ns}}}}}  # fmt: skip
    server.apply(policy, binding)
    configmap(server, ns, "plain", {"a": "b"})
    counter = itertools.count()

    def refused() -> tuple[str, str]:
        name = f"kept{next(counter)}"
        configmap(server, ns, name, {"keep": "yes"})
        res = server.kubectl("delete", "configmap", name, "-n", ns)
        assert res.returncode != 0, res.stdout
        return name, res.stderr.strip()

    name, message = eventually(refused)
    assert message == (
        f"The configmaps \"{name}\" is invalid: : ValidatingAdmissionPolicy 'keep-{ns}' with binding 'keep-{ns}' "
        "denied request: configmaps labelled keep are kept"
    )
    assert server.kubectl("delete", "configmap", "plain", "-n", ns).returncode == 0
    server.kubectl("delete", "validatingadmissionpolicybinding", f"keep-{ns}", check=True)
    server.kubectl("delete", "validatingadmissionpolicy", f"keep-{ns}", check=True)


# -- CONNECT ----------------------------------------------------------------------------------------------------------


def test_a_webhook_on_connect_sees_exec_and_proxy_and_may_refuse(
    server: APIServerProcess, hooks: Hooks, ns: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    server.kubectl("create", "-f", "-", input=json.dumps(pod), check=True)
    path = f"/deny/no-{ns}-exec"
    server.apply(webhook_configuration("ValidatingWebhookConfiguration", f"exec-{ns}", hooks, path, ["CONNECT"],
                                        ["pods/exec", "pods/proxy"], ns))  # fmt: skip

    def refused() -> str:
        res = server.kubectl("exec", "p", "-n", ns, "-c", "c", "--", "ls", "-l")
        assert res.returncode != 0
        assert f"no {ns} exec" in res.stderr, res.stderr
        return res.stderr

    eventually(refused)
    req = hooks.seen(path)[-1]
    assert req["operation"] == "CONNECT" and req["subResource"] == "exec" and req["name"] == "p"
    assert req["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert req["object"]["command"] == ["ls", "-l"] and req["object"]["container"] == "c"
    assert (req["object"]["apiVersion"], req["object"]["kind"]) == ("v1", "PodExecOptions")  # not the pod's kind
    assert req["oldObject"] is None and req["options"] is None
    # pods/proxy: the path after /proxy is the PodProxyOptions' path; refused before the pod is looked up.
    status, body = server.request("GET", f"/api/v1/namespaces/{ns}/pods/missing/proxy/some/where")
    assert status == 403 and isinstance(body, dict) and body["message"].endswith(f"no {ns} exec"), body
    req = hooks.seen(path)[-1]
    assert req["subResource"] == "proxy" and req["name"] == "missing" and req["object"]["path"] == "/some/where"
    # A dry run is not a thing a CONNECT has.
    status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods/p/exec?command=ls&dryRun=All")
    assert status == 400 and isinstance(body, dict) and body["message"] == "dryRun is not supported"
    server.kubectl("delete", "validatingwebhookconfiguration", f"exec-{ns}", check=True)
    # Admitted, the exec goes on to the simulated container's refusal.
    res = eventually(lambda: _exec_reaches_the_pod(server, ns))
    assert "does not have a host assigned" in res


def _exec_reaches_the_pod(server: APIServerProcess, ns: str) -> str:
    res = server.kubectl("exec", "p", "-n", ns, "--", "ls")
    assert "does not have a host assigned" in res.stderr, res.stderr
    return res.stderr


# -- creates of subresources and of kinds that are not stored -----------------------------------------------------


def test_kubectl_create_token_goes_through_a_webhook_on_serviceaccounts_token(
    server: APIServerProcess, hooks: Hooks, ns: str
) -> None:
    server.kubectl("create", "serviceaccount", "robot", "-n", ns, check=True)
    server.apply(webhook_configuration("ValidatingWebhookConfiguration", f"token-{ns}", hooks, "/deny-hour",
                                        ["CREATE"], ["serviceaccounts/token"], ns))  # fmt: skip

    def refused() -> str:
        res = server.kubectl("create", "token", "robot", "-n", ns)
        assert res.returncode != 0, res.stdout
        return res.stderr.strip()

    # The validating phase sees the request defaulted (an hour when none is asked for), as upstream's.
    message = eventually(refused)
    assert message == (
        f'error: failed to create token: admission webhook "token-{ns}.pyk8s.test" denied the request: '
        "no hour-long tokens"
    )
    req = [r for r in hooks.seen("/deny-hour") if r.get("namespace") == ns][-1]
    assert req["operation"] == "CREATE" and req["subResource"] == "token" and req["name"] == "robot"
    assert req["kind"] == {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "serviceaccounts"}
    assert (req["object"]["apiVersion"], req["object"]["kind"]) == ("authentication.k8s.io/v1", "TokenRequest")
    res = server.kubectl("create", "token", "robot", "-n", ns, "--duration=2h")
    assert res.returncode == 0 and res.stdout.count(".") == 2, res.stderr  # a JWT
    server.kubectl("delete", "validatingwebhookconfiguration", f"token-{ns}", check=True)


def test_eviction_binding_and_access_reviews_are_admitted(server: APIServerProcess, hooks: Hooks, ns: str) -> None:
    path = f"/deny/no-{ns}-subresource-creates"
    server.apply(webhook_configuration("ValidatingWebhookConfiguration", f"subs-{ns}", hooks, path, ["CREATE"],
                                        ["pods/eviction", "pods/binding", "localsubjectaccessreviews"], ns))  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    server.kubectl("create", "-f", "-", input=json.dumps(pod), check=True)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": ns}}

    def refused() -> None:
        status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods/p/eviction", eviction)
        assert status == 403, (status, body)

    eventually(refused)
    req = hooks.seen(path)[-1]
    assert req["subResource"] == "eviction" and req["kind"]["kind"] == "Eviction" and req["name"] == "p"
    assert (req["object"]["apiVersion"], req["object"]["kind"]) == ("policy/v1", "Eviction")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "n1"}}
    status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods/p/binding", binding)
    assert status == 403 and isinstance(body, dict) and body["message"].endswith(f"no {ns} subresource creates")
    assert hooks.seen(path)[-1]["object"]["target"] == {"name": "n1"}
    assert hooks.seen(path)[-1]["object"]["kind"] == "Binding"
    lsar = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": ns},
            "spec": {"user": "someone", "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods"}}}  # fmt: skip
    status, body = server.request("POST", f"/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews",
                                  lsar)  # fmt: skip
    assert status == 403, body
    server.kubectl("delete", "validatingwebhookconfiguration", f"subs-{ns}", check=True)
    # Admitted, each goes on: the pod is bound and then evicted (deleted), the review answered.
    eventually(lambda: _bound(server, ns, binding))
    status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods/p/eviction", eviction)
    assert status == 201, body
    status, body = server.request("POST", f"/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews",
                                  lsar)  # fmt: skip
    assert status == 201 and isinstance(body, dict) and "allowed" in body["status"], body


def _bound(server: APIServerProcess, ns: str, binding: dict[str, Any]) -> None:
    status, body = server.request("POST", f"/api/v1/namespaces/{ns}/pods/p/binding", binding)
    assert status == 201, body
