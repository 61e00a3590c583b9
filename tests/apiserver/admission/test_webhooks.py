"""Admission webhooks through a real API server, kubectl and a local HTTPS webhook on 127.0.0.1 with its own
CA: a mutating webhook labels configmaps and pods (by URL and behind a Service), a validating webhook denies
with its message, failurePolicy Fail and Ignore against a server that is down, a timeout, namespace and object
selectors and a matchCondition that skip, dry run and sideEffects, warnings, reinvocation, the AdmissionReview
a webhook receives, and the configurations' own validation. Then unit tests of the answer's checks and of the
dry-run refusal of a webhook with side effects.

Each test's configurations select its own namespace only, so that tests do not see each other's webhooks."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp import web

from pyk8s.api import errors
from pyk8s.api.resources import RESOURCES
from pyk8s.apiserver.admission import Attributes
from pyk8s.apiserver.admission.webhook import errors as webhook_errors
from pyk8s.apiserver.admission.webhook.configuration import WebhookAccessor
from pyk8s.apiserver.admission.webhook.dispatch import call_hook
from pyk8s.apiserver.admission.webhook.generic import CallResult, Invocation, VersionedAttributes, Webhook
from pyk8s.apiserver.admission.webhook.request import (
    GVK,
    InvalidResponse,
    verify_admission_response,
)
from pyk8s.apiserver.authn import UserInfo
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.webhook_server import WebhookServer

_names = itertools.count()


class Hooks(WebhookServer):
    """The module's webhooks (one HTTPS server, told apart by path); every review is recorded."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.reviews: list[tuple[str, dict[str, Any]]] = []  # (path, review)

    def seen(self, path: str, name: str) -> list[dict[str, Any]]:
        """The requests `path` received about objects called `name`."""
        return [r["request"] for p, r in self.reviews if p == path and (r["request"].get("name") == name or (
            (r["request"].get("object") or {}).get("metadata", {}).get("name") == name))]  # fmt: skip

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        path = request.path
        self.reviews.append((path, review))
        req = review["request"]
        response: dict[str, Any] = {"uid": req["uid"], "allowed": True}
        obj = req.get("object") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if path.startswith("/label/"):
            key = path.rsplit("/", 1)[1]
            if key not in labels:
                op = [{"op": "add", "path": "/metadata/labels", "value": {key: "yes"}}] if not labels else [
                    {"op": "add", "path": f"/metadata/labels/{key}", "value": "yes"}]  # fmt: skip
                response["patch"] = base64.b64encode(json.dumps(op).encode()).decode()
                response["patchType"] = "JSONPatch"
            response["warnings"] = [f"labelled {key} by the test webhook"]
        elif path == "/deny":
            if labels.get("deny") == "true":
                response = {"uid": req["uid"], "allowed": False,
                            "status": {"code": 403, "reason": "Forbidden", "message": "objects labelled deny=true are refused"}}  # fmt: skip
        elif path == "/deny-all":
            response = {"uid": req["uid"], "allowed": False, "status": {"message": "no objects here"}}
        elif path == "/slow":
            await asyncio.sleep(3)
        elif path == "/warn":
            response["warnings"] = ["this configmap is looked at closely"]
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})


@pytest.fixture(scope="module")
def hooks() -> Iterator[Hooks]:
    server = Hooks().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(hooks: Hooks) -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    proc.create_namespace("webhooks")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": "webhooks"},
               "spec": {"ports": [{"port": 443, "targetPort": hooks.port}]}}  # fmt: skip
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks", "namespace": "webhooks"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": hooks.port}]}]}  # fmt: skip
    proc.apply(service, endpoints)
    yield proc
    proc.cleanup()


@pytest.fixture
def ns(server: APIServerProcess) -> str:
    name = f"wh{next(_names)}"
    server.create_namespace(name)
    return name


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def url(hooks: Hooks, path: str, port: int | None = None) -> dict[str, Any]:
    return hooks.client_config(path, port)


def service(hooks: Hooks, path: str) -> dict[str, Any]:
    return {"service": {"namespace": "webhooks", "name": "hooks", "path": path},
            "caBundle": hooks.ca_bundle}  # fmt: skip


def configuration(kind: str, name: str, ns: str, client_config: dict[str, Any], resources: tuple[str, ...] = ("configmaps",),
                  **hook: Any) -> dict[str, Any]:  # fmt: skip
    webhook = {"name": f"{name}.pyk8s.test", "clientConfig": client_config, "sideEffects": "None",
               "admissionReviewVersions": ["v1"],
               "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                          "resources": list(resources)}],
               "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}, **hook}  # fmt: skip
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [webhook]}  # fmt: skip


def mutating(name: str, ns: str, client_config: dict[str, Any], **hook: Any) -> dict[str, Any]:
    return configuration("MutatingWebhookConfiguration", name, ns, client_config, **hook)


def validating(name: str, ns: str, client_config: dict[str, Any], **hook: Any) -> dict[str, Any]:
    return configuration("ValidatingWebhookConfiguration", name, ns, client_config, **hook)


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Configurations reach admission through the watch cache: retry until `check` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def create_configmap(server: APIServerProcess, ns: str, name: str, *extra: str, labels: dict[str, str] | None = None):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
          "data": {"k": "v"}}  # fmt: skip
    return server.kubectl("create", "-f", "-", *extra, input=json.dumps(cm))


def get(server: APIServerProcess, *args: str) -> dict[str, Any]:
    return json.loads(server.kubectl("get", *args, "-o", "json", check=True).stdout)


def created(server: APIServerProcess, ns: str, prefix: str, **kw: Any) -> Callable[[], str]:
    """A check that creates a configmap with a fresh name and passes once it was created."""
    counter = itertools.count()

    def check() -> str:
        name = f"{prefix}-{next(counter)}"
        res = create_configmap(server, ns, name, **kw)
        assert res.returncode == 0, res.stderr
        return name

    return check


def refused(server: APIServerProcess, ns: str, prefix: str, **kw: Any) -> Callable[[], str]:
    """A check that passes once a configmap create is refused; returns kubectl's error."""
    counter = itertools.count()

    def check() -> str:
        res = create_configmap(server, ns, f"{prefix}-{next(counter)}", **kw)
        assert res.returncode != 0, "created"
        return res.stderr.strip()

    return check


# -- mutating -------------------------------------------------------------------------------------------------------


def test_a_mutating_webhook_by_url_labels_configmaps_and_shows_its_warning(server, hooks, ns):
    server.apply(mutating(f"label-{ns}", ns, url(hooks, "/label/mutated")))
    name = eventually(lambda: _labelled(server, ns, "mutated"))
    res = create_configmap(server, ns, f"{name}-again")
    assert res.returncode == 0
    assert "Warning: labelled mutated by the test webhook" in res.stderr
    # what the webhook received
    req = hooks.seen("/label/mutated", f"{name}-again")[-1]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert req["operation"] == "CREATE" and req["namespace"] == ns and req["name"] == f"{name}-again"
    assert req["userInfo"]["username"] and req["dryRun"] is False and req["oldObject"] is None
    assert req["options"]["kind"] == "CreateOptions" and req["options"]["apiVersion"] == "meta.k8s.io/v1"
    assert req["object"]["data"] == {"k": "v"} and req["uid"]
    server.kubectl("delete", "mutatingwebhookconfiguration", f"label-{ns}", check=True)


def _labelled(server: APIServerProcess, ns: str, key: str) -> str:
    name = f"cm-{next(_names)}"
    assert create_configmap(server, ns, name).returncode == 0
    assert get(server, "configmap", name, "-n", ns)["metadata"]["labels"].get(key) == "yes"
    return name


def test_a_mutating_webhook_behind_a_service_labels_pods(server, hooks, ns):
    server.apply(mutating(f"pods-{ns}", ns, service(hooks, "/label/via-service"), resources=("pods",)))
    counter = itertools.count()

    def check() -> None:
        name = f"p{next(counter)}"
        res = server.kubectl("run", name, "-n", ns, "--image=nginx")
        assert res.returncode == 0, res.stderr
        assert get(server, "pod", name, "-n", ns)["metadata"]["labels"].get("via-service") == "yes"

    eventually(check)
    server.kubectl("delete", "mutatingwebhookconfiguration", f"pods-{ns}", check=True)


def test_reinvocation_calls_an_if_needed_webhook_again_after_a_later_one_changed_the_object(server, hooks, ns):
    server.apply(
          mutating(f"a-first-{ns}", ns, url(hooks, "/label/first"), reinvocationPolicy="IfNeeded"),
          mutating(f"b-second-{ns}", ns, url(hooks, "/label/second")))  # fmt: skip

    def check() -> str:
        name = f"re-{next(_names)}"
        assert create_configmap(server, ns, name).returncode == 0
        labels = get(server, "configmap", name, "-n", ns)["metadata"]["labels"]
        assert labels == {"first": "yes", "second": "yes"}
        return name

    name = eventually(check)
    first, second = hooks.seen("/label/first", name), hooks.seen("/label/second", name)
    assert len(first) == 2 and len(second) == 1  # `first` again, once, after `second` added its label
    assert first[1]["object"]["metadata"]["labels"] == {"first": "yes", "second": "yes"}
    server.kubectl("delete", "mutatingwebhookconfiguration", f"a-first-{ns}", f"b-second-{ns}", check=True)


def test_match_policy_equivalent_sends_the_version_the_webhook_asked_for(server, hooks, ns):
    rules = [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
              "resources": ["horizontalpodautoscalers"]}]  # fmt: skip
    server.apply(mutating(f"hpa-{ns}", ns, url(hooks, "/label/v1-seen"), rules=rules))
    exact = mutating(f"hpa-exact-{ns}", ns, url(hooks, "/label/exact"), rules=rules, matchPolicy="Exact")
    server.apply(exact)
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"namespace": ns},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 3}}  # fmt: skip

    def check() -> str:
        name = f"hpa-{next(_names)}"
        hpa["metadata"]["name"] = name
        server.kubectl("create", "-f", "-", input=json.dumps(hpa), check=True)
        assert get(server, "hpa.v2.autoscaling", name, "-n", ns)["metadata"]["labels"] == {"v1-seen": "yes"}
        return name

    name = eventually(check)
    req = hooks.seen("/label/v1-seen", name)[-1]
    assert req["kind"] == {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}
    assert req["resource"]["version"] == "v1" and req["requestResource"]["version"] == "v2"
    assert req["object"]["apiVersion"] == "autoscaling/v1" and req["object"]["spec"]["maxReplicas"] == 3
    assert not hooks.seen("/label/exact", name)
    server.kubectl("delete", "mutatingwebhookconfiguration", f"hpa-{ns}", f"hpa-exact-{ns}", check=True)


# -- validating -----------------------------------------------------------------------------------------------------


def test_a_validating_webhook_denies_with_its_message(server, hooks, ns):
    server.apply(validating(f"deny-{ns}", ns, url(hooks, "/deny")))
    err = eventually(refused(server, ns, "bad", labels={"deny": "true"}))
    assert err == ('Error from server (Forbidden): error when creating "STDIN": admission webhook '
                   '"deny-' + ns + '.pyk8s.test" denied the request: objects labelled deny=true are refused')  # fmt: skip
    assert create_configmap(server, ns, "good").returncode == 0
    server.kubectl("delete", "validatingwebhookconfiguration", f"deny-{ns}", check=True)


def test_failure_policy_fail_and_ignore_when_the_webhook_is_down(server, hooks, ns):
    port = closed_port()
    server.apply(validating(f"down-{ns}", ns, url(hooks, "/x", port)))
    err = eventually(refused(server, ns, "fail"))
    assert err == (f'Error from server (InternalError): error when creating "STDIN": Internal error occurred: '
                   f'failed calling webhook "down-{ns}.pyk8s.test": failed to call webhook: Post '
                   f'"https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused')  # fmt: skip
    server.apply(validating(f"down-{ns}", ns, url(hooks, "/x", port), failurePolicy="Ignore"))
    eventually(created(server, ns, "ignored"))
    server.kubectl("delete", "validatingwebhookconfiguration", f"down-{ns}", check=True)


def test_a_webhook_that_does_not_answer_in_time(server, hooks, ns):
    server.apply(validating(f"slow-{ns}", ns, url(hooks, "/slow"), timeoutSeconds=1))
    started = time.monotonic()
    err = eventually(refused(server, ns, "slow"))
    assert time.monotonic() - started < 8
    assert err.endswith(f'failed calling webhook "slow-{ns}.pyk8s.test": failed to call webhook: Post '
                        f'"https://127.0.0.1:{hooks.port}/slow?timeout=1s": context deadline exceeded')  # fmt: skip
    server.kubectl("delete", "validatingwebhookconfiguration", f"slow-{ns}", check=True)


def test_selectors_and_match_conditions_skip_a_webhook(server, hooks, ns):
    other = f"{ns}-other"
    server.create_namespace(other)
    deny_all = url(hooks, "/deny-all")
    server.apply(
          validating(f"sel-{ns}", ns, deny_all, objectSelector={"matchLabels": {"checked": "yes"}},
                     matchConditions=[{"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"}]))  # fmt: skip
    err = eventually(refused(server, ns, "checked", labels={"checked": "yes"}))
    assert err.endswith(f'admission webhook "sel-{ns}.pyk8s.test" denied the request: no objects here')
    assert err.startswith("Error from server: ")  # the webhook's status has no reason
    # the objectSelector: not labelled checked=yes
    assert create_configmap(server, ns, "unchecked").returncode == 0
    # the matchCondition: the exempt name
    assert create_configmap(server, ns, "exempt", labels={"checked": "yes"}).returncode == 0
    # the namespaceSelector: another namespace
    assert create_configmap(server, other, "elsewhere", labels={"checked": "yes"}).returncode == 0
    server.kubectl("delete", "validatingwebhookconfiguration", f"sel-{ns}", check=True)


def test_dry_run_reaches_a_webhook_without_side_effects(server, hooks, ns):
    server.apply(validating(f"dry-{ns}", ns, url(hooks, "/warn"), sideEffects="NoneOnDryRun"))

    def check() -> None:
        name = f"dry-{next(_names)}"
        res = create_configmap(server, ns, name, "--dry-run=server")
        assert res.returncode == 0, res.stderr
        assert "Warning: this configmap is looked at closely" in res.stderr
        req = hooks.seen("/warn", name)[-1]
        assert req["dryRun"] is True and req["options"]["dryRun"] == ["All"]

    eventually(check)
    # upstream's v1 API refuses webhooks with side effects at create
    res = server.kubectl("apply", "-f", "-", input=json.dumps(validating(f"dry-{ns}", ns, url(hooks, "/warn"),
                                                                         sideEffects="Unknown")))  # fmt: skip
    assert res.returncode != 0
    assert ('webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"'
            in res.stderr)  # fmt: skip
    server.kubectl("delete", "validatingwebhookconfiguration", f"dry-{ns}", check=True)


# -- the configurations ---------------------------------------------------------------------------------------------


def test_configurations_are_defaulted_validated_and_listed(server, hooks, ns):
    config = mutating(f"defaults-{ns}", ns, service(hooks, "/label/x"))
    del config["webhooks"][0]["namespaceSelector"]
    server.apply(config)
    stored = get(server, "mutatingwebhookconfiguration", f"defaults-{ns}")
    hook = stored["webhooks"][0]
    assert hook["failurePolicy"] == "Fail" and hook["matchPolicy"] == "Equivalent"
    assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
    assert hook["timeoutSeconds"] == 10 and hook["reinvocationPolicy"] == "Never"
    assert hook["rules"][0]["scope"] == "*" and hook["clientConfig"]["service"]["port"] == 443
    assert stored["metadata"]["generation"] == 1
    out = server.kubectl("get", "mutatingwebhookconfigurations", f"defaults-{ns}", check=True).stdout
    assert out.split("\n")[0].split() == ["NAME", "WEBHOOKS", "AGE"] and out.split("\n")[1].split()[1] == "1"
    status, headers, body = server.raw_request(
        "GET", f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/defaults-{ns}",
        headers={"Accept": "application/vnd.kubernetes.protobuf"},
    )  # fmt: skip
    assert status == 200 and headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
    assert b"MutatingWebhookConfiguration" in body and f"defaults-{ns}.pyk8s.test".encode() in body
    resources = server.kubectl("api-resources", "--api-group=admissionregistration.k8s.io", check=True).stdout
    assert "mutatingwebhookconfigurations" in resources and "validatingwebhookconfigurations" in resources
    server.kubectl("delete", "mutatingwebhookconfiguration", f"defaults-{ns}", check=True)

    bad = validating(f"bad-{ns}", ns, {"url": "http://example.com/x?y=1"}, timeoutSeconds=31)
    hook = bad["webhooks"][0]
    hook["name"] = "short"
    del hook["sideEffects"], hook["admissionReviewVersions"]
    res = server.kubectl("create", "-f", "-", input=json.dumps(bad))
    assert res.returncode != 0
    for detail in (
        'webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots',
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        'webhooks[0].clientConfig.url: Invalid value: "y=1": query parameters are not permitted in the URL',
        "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
    ):
        assert detail in res.stderr, res.stderr


# -- units ----------------------------------------------------------------------------------------------------------


def _hook(**fields: Any) -> WebhookAccessor:
    hook = {"name": "x.pyk8s.test", "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://127.0.0.1:1/"},
            **fields}  # fmt: skip
    return WebhookAccessor("c/x.pyk8s.test/0", "c", hook, mutating=False)


def test_a_dry_run_request_is_refused_by_a_webhook_with_side_effects():
    configmaps = next(r for r in RESOURCES if r.plural == "configmaps")
    a = Attributes("CREATE", configmaps, "", "ns", "n", {"metadata": {"name": "n"}}, None, UserInfo("u"), dry_run=True)
    va = VersionedAttributes(a, configmaps, GVK("", "v1", "ConfigMap"), a.object, None)

    def call(hook: WebhookAccessor) -> None:
        asyncio.run(call_hook(Webhook.__new__(Webhook), hook, Invocation(hook, configmaps, va.kind), va, False,
                              CallResult()))  # fmt: skip

    for side_effects in ("Unknown", "Some"):
        with pytest.raises(errors.StatusError) as exc:
            call(_hook(sideEffects=side_effects))
        assert exc.value.code == 400
        assert exc.value.message == 'admission webhook "x.pyk8s.test" does not support dry run'
    with pytest.raises(webhook_errors.CallingWebhookError, match="Webhook SideEffects is nil"):
        call(_hook())


@pytest.mark.parametrize(
    ("mutating", "response", "message"),
    [
        (False, {"uid": "other", "allowed": True}, 'expected response.uid="u1", got "other"'),
        (True, {"uid": "u1", "allowed": True, "patch": "W10="}, "webhook returned response.patch but not response.patchType"),
        (True, {"uid": "u1", "allowed": True, "patchType": "JSONPatch"}, "webhook returned response.patchType but not response.patch"),
        (False, {"uid": "u1", "allowed": True, "patch": "W10="}, "validating webhook may not return response.patch"),
        (False, {"uid": "u1", "allowed": True, "patchType": "JSONPatch"}, "validating webhook may not return response.patchType"),
    ],
)  # fmt: skip
def test_the_checks_made_on_an_answer(mutating, response, message):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    with pytest.raises(InvalidResponse) as exc:
        verify_admission_response("u1", mutating, review, "v1")
    assert str(exc.value) == message
    with pytest.raises(InvalidResponse) as exc:
        verify_admission_response("u1", False, {"response": {"uid": "u1"}}, "v1")
    assert str(exc.value) == "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="


def test_a_denial_keeps_the_webhooks_status():
    err = webhook_errors.to_status_error("x.io", {"code": 201, "reason": "NotAllowed"})
    assert (err.code, err.message) == (400, 'admission webhook "x.io" denied the request: NotAllowed')
    err = webhook_errors.to_status_error("x.io", None)
    assert err.message == 'admission webhook "x.io" denied the request without explanation'
    err = webhook_errors.to_status_error("x.io", {"code": 422, "reason": "Invalid", "message": "bad"})
    assert (err.code, err.reason, err.message) == (422, "Invalid", 'admission webhook "x.io" denied the request: bad')
