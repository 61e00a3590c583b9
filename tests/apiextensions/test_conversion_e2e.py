"""A CRD with a conversion webhook, end to end: the API server stores v1 and serves v2 through a real HTTPS
webhook on 127.0.0.1 (v1 `spec.cronSpec` is v2 `spec.schedule`), for kubectl's reads, writes, patches, lists
and watches; the webhook is reached by URL and through a Service whose Endpoints point at it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from aiohttp import web

from pyk8s.testing.webhook_server import WebhookServer

GROUP = "conv.example.com"


def _convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    out = {**obj, "apiVersion": desired, "spec": dict(obj.get("spec") or {})}
    spec = out["spec"]
    if desired.endswith("/v2") and "cronSpec" in spec:
        spec["schedule"] = spec.pop("cronSpec")
    elif desired.endswith("/v1") and "schedule" in spec:
        spec["cronSpec"] = spec.pop("schedule")
    return out


class Webhook(WebhookServer):
    """The conversion webhook, served from a thread of its own for the module's tests."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.calls = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.calls += 1
        review = await request.json()
        req = review["request"]
        converted = [_convert(o, req["desiredAPIVersion"]) for o in req["objects"]]
        return web.json_response({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                                  "response": {"uid": req["uid"], "convertedObjects": converted,
                                               "result": {"status": "Success"}}})  # fmt: skip


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook().start()
    yield hook
    hook.stop()


def crd(plural: str, kind: str, client_config: dict[str, Any]) -> str:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}  # fmt: skip
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                              {"name": "v2", "served": True, "storage": False, "schema": schema}],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"], "clientConfig": client_config}}},
    })  # fmt: skip


def get(cluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json", check=True).stdout)


def exercise(cluster, ns: str, plural: str, kind: str, hook: Webhook) -> None:
    before = hook.calls
    v2 = {"apiVersion": f"{GROUP}/v2", "kind": kind, "metadata": {"name": "nightly"}, "spec": {"schedule": "@daily"}}
    cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(v2), check=True)
    assert hook.calls > before  # the write went through the webhook
    # stored and served as v1 with v1's field; served as v2 with v2's
    assert get(cluster, f"{plural}.v1.{GROUP}", "nightly", "-n", ns)["spec"] == {"cronSpec": "@daily"}
    as_v2 = get(cluster, f"{plural}.v2.{GROUP}", "nightly", "-n", ns)
    assert as_v2["apiVersion"] == f"{GROUP}/v2" and as_v2["spec"] == {"schedule": "@daily"}
    cluster.kubectl("patch", f"{plural}.v2.{GROUP}", "nightly", "-n", ns, "--type=merge", "-p",
                    '{"spec":{"schedule":"@hourly"}}', check=True)  # fmt: skip
    assert get(cluster, f"{plural}.v1.{GROUP}", "nightly", "-n", ns)["spec"] == {"cronSpec": "@hourly"}
    listed = get(cluster, f"{plural}.v2.{GROUP}", "-n", ns)
    assert [o["spec"] for o in listed["items"]] == [{"schedule": "@hourly"}]
    status, _, body = cluster.raw_request(
        "GET", f"/apis/{GROUP}/v2/namespaces/{ns}/{plural}?watch=true&timeoutSeconds=1"
    )
    events = [json.loads(line) for line in body.splitlines() if line]
    assert status == 200 and events[0]["object"]["spec"] == {"schedule": "@hourly"}


def test_a_conversion_webhook_by_url(crd_cluster, crd_ns, webhook):
    config = webhook.client_config("/convert")
    crd_cluster.apply_crds(crd("crontabs", "CronTab", config), f"crontabs.{GROUP}")
    try:
        exercise(crd_cluster, crd_ns, "crontabs", "CronTab", webhook)
    finally:
        crd_cluster.kubectl("delete", "crd", f"crontabs.{GROUP}")


def test_a_conversion_webhook_behind_a_service(crd_cluster, crd_ns, webhook):
    crd_cluster.create_namespace("webhooks")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": "webhooks"},
               "spec": {"ports": [{"port": 443, "targetPort": webhook.port}]}}  # fmt: skip
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks", "namespace": "webhooks"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": webhook.port}]}]}  # fmt: skip
    for obj in (service, endpoints):
        crd_cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=True)
    config = {"service": {"namespace": "webhooks", "name": "hooks", "path": "/convert"},
              "caBundle": webhook.ca_bundle}  # fmt: skip
    crd_cluster.apply_crds(crd("schedules", "Schedule", config), f"schedules.{GROUP}")
    try:
        exercise(crd_cluster, crd_ns, "schedules", "Schedule", webhook)
    finally:
        crd_cluster.kubectl("delete", "crd", f"schedules.{GROUP}")
