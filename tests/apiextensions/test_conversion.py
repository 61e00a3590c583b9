"""CRD conversion (apiextensions-apiserver pkg/apiserver/conversion): strategy None's apiVersion rewrite, and
strategy Webhook against a real HTTPS webhook on 127.0.0.1 converting a CronTab between v1 (`spec.cronSpec`) and
v2 (`spec.schedule`), with upstream's checks of the answer and their messages."""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from pyk8s.apiextensions.conversion import (
    ConversionError,
    ConverterSetupError,
    CRConverter,
    needs_conversion,
)
from pyk8s.apiextensions.conversion_webhook import go_duration
from pyk8s.testing.webhook_server import tls_server_context

GROUP = "stable.example.com"
V1, V2 = f"{GROUP}/v1", f"{GROUP}/v2"
GVK1 = "stable.example.com/v1, Kind=CronTab"


def make_crd(conversion: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "group": GROUP,
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
        "scope": "Namespaced",
        "versions": [
            {"name": "v1", "served": True, "storage": True},
            {"name": "v2", "served": True, "storage": False},
        ],
    }
    if conversion is not None:
        spec["conversion"] = conversion
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"crontabs.{GROUP}"}, "spec": spec}  # fmt: skip


def webhook_crd(client_config: dict[str, Any], review_versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return make_crd(
        {"strategy": "Webhook",
         "webhook": {"clientConfig": client_config, "conversionReviewVersions": list(review_versions)}}
    )  # fmt: skip


def crontab(name: str, version: str = "v1", **meta: Any) -> dict[str, Any]:
    spec = {"cronSpec": "* * * * */5"} if version == "v1" else {"schedule": "* * * * */5"}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "7", **meta},
        "spec": {**spec, "image": "my-awesome-cron-image"},
    }


# -- the webhook -------------------------------------------------------------------------------------------------


def convert_one(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    out = {**obj, "apiVersion": desired, "spec": dict(obj["spec"])}
    spec = out["spec"]
    if desired == V2 and "cronSpec" in spec:
        spec["schedule"] = spec.pop("cronSpec")
    elif desired == V1 and "schedule" in spec:
        spec["cronSpec"] = spec.pop("schedule")
    return out


def good_answer(review: dict[str, Any]) -> dict[str, Any]:
    req = review["request"]
    return {
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": {
            "uid": req["uid"],
            "convertedObjects": [convert_one(o, req["desiredAPIVersion"]) for o in req["objects"]],
            "result": {"status": "Success"},
        },
    }


def answer_with(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A webhook that converts, then lets `change` spoil its answer."""

    def respond(review: dict[str, Any]) -> dict[str, Any]:
        out = good_answer(review)
        change(out)
        return out

    return respond


class Webhook:
    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.hosts: list[str] = []
        self.respond: Callable[[dict[str, Any]], Any] = good_answer
        self.delay = 0.0
        self.url = ""
        self.port = 0
        self.ca_bundle = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path_qs)
        self.hosts.append(request.headers.get("Host", ""))
        review = await request.json()
        self.reviews.append(review)
        if self.delay:
            await asyncio.sleep(self.delay)
        out = self.respond(review)
        return out if isinstance(out, web.StreamResponse) else web.json_response(out)


def server_context(names: list[str]) -> tuple[ssl.SSLContext, str]:
    """A TLS server context for a fresh self-signed certificate, and that certificate as a CRD caBundle."""
    ctx, cert = tls_server_context(names)
    return ctx, base64.b64encode(cert).decode()


@pytest.fixture
async def start_webhook():
    runners: list[web.AppRunner] = []

    async def start(names: tuple[str, ...] = ("127.0.0.1",)) -> Webhook:
        hook = Webhook()
        app = web.Application()
        app.router.add_post("/{tail:.*}", hook.handle)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        ctx, hook.ca_bundle = server_context(list(names))
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        runners.append(runner)
        hook.port = runner.addresses[0][1]
        hook.url = f"https://127.0.0.1:{hook.port}/convert"
        return hook

    yield start
    for r in runners:
        await r.cleanup()


@pytest.fixture
async def webhook(start_webhook) -> Webhook:
    return await start_webhook()


@pytest.fixture
async def converter(webhook):
    conv = CRConverter.for_crd(webhook_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}))
    yield conv
    await conv.close()


# -- strategy None -----------------------------------------------------------------------------------------------


async def test_strategy_none_rewrites_api_version_only():
    conv = CRConverter.for_crd(make_crd())
    assert conv.is_noop and not needs_conversion(make_crd())
    a, b = crontab("a"), crontab("b", "v2")
    out = await conv.convert([a, b], V2)
    assert out[0] == {**a, "apiVersion": V2}
    assert out[0]["spec"] == {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}  # no field renamed
    assert out[1] is b  # already there: the same object
    assert a["apiVersion"] == V1  # the input is left alone


def test_needs_conversion_only_for_webhooks():
    assert not needs_conversion(make_crd({"strategy": "None"}))
    assert needs_conversion(webhook_crd({"url": "https://127.0.0.1/convert"}))


# -- strategy Webhook: conversions -------------------------------------------------------------------------------


async def test_round_trip_through_the_webhook(webhook, converter):
    original = crontab("a", labels={"app": "cron"})
    (v2,) = await converter.convert([original], V2)
    assert v2["apiVersion"] == V2 and v2["kind"] == "CronTab"
    assert v2["spec"] == {"schedule": "* * * * */5", "image": "my-awesome-cron-image"}
    assert v2["metadata"] == original["metadata"]
    (back,) = await converter.convert([v2], V1)
    assert back == original
    review = webhook.reviews[0]
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["desiredAPIVersion"] == V2
    assert str(uuid.UUID(review["request"]["uid"])) == review["request"]["uid"]
    assert webhook.reviews[1]["request"]["uid"] != review["request"]["uid"]  # a fresh uid per review
    assert webhook.paths[0] == "/convert?timeout=30s"  # client-go adds the client timeout to the URL


async def test_many_objects_in_one_review_and_those_at_the_version_untouched(webhook, converter):
    objs = [crontab("a"), crontab("b", "v2"), crontab("c"), crontab("d")]
    out = await converter.convert(objs, V2)
    assert len(webhook.reviews) == 1
    assert [o["metadata"]["name"] for o in webhook.reviews[0]["request"]["objects"]] == ["a", "c", "d"]
    assert out[1] is objs[1]
    assert [o["metadata"]["name"] for o in out] == ["a", "b", "c", "d"]
    assert all(o["apiVersion"] == V2 and "schedule" in o["spec"] for o in out)
    assert objs[0]["apiVersion"] == V1 and "cronSpec" in objs[0]["spec"]


async def test_nothing_to_convert_calls_no_webhook(webhook, converter):
    objs = [crontab("a", "v2"), crontab("b", "v2")]
    out = await converter.convert(objs, V2)
    assert out[0] is objs[0] and out[1] is objs[1]
    assert webhook.reviews == []


async def test_an_empty_object_is_converted_without_the_webhook(webhook, converter):
    assert await converter.convert([{"apiVersion": V1, "kind": "CronTab"}], V2) == [
        {"apiVersion": V2, "kind": "CronTab"}
    ]
    assert webhook.reviews == []


@pytest.mark.parametrize(
    ("versions", "sent"),
    [(("v1beta1", "v1"), "v1beta1"), (("v1", "v1beta1"), "v1"), (("v2", "v1beta1"), "v1beta1"), (("v1",), "v1")],
)
async def test_review_version_is_the_first_supported_one(start_webhook, versions, sent):
    hook = await start_webhook()
    conv = CRConverter.for_crd(webhook_crd({"url": hook.url, "caBundle": hook.ca_bundle}, versions))
    try:
        await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert hook.reviews[0]["apiVersion"] == f"apiextensions.k8s.io/{sent}"


async def test_v1beta1_answers_are_not_checked_for_kind_or_uid(start_webhook):
    hook = await start_webhook()

    def careless(review):
        out = good_answer(review)
        del out["apiVersion"], out["kind"]
        out["response"]["uid"] = "whatever"
        return out

    hook.respond = careless
    conv = CRConverter.for_crd(webhook_crd({"url": hook.url, "caBundle": hook.ca_bundle}, ("v1beta1",)))
    try:
        (out,) = await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert out["spec"]["schedule"] == "* * * * */5"


async def test_service_reference_is_resolved_and_verified_by_service_name(start_webhook):
    hook = await start_webhook(("convert.webhooks.svc",))
    calls = []

    def resolve(namespace: str, name: str, port: int) -> str:
        calls.append((namespace, name, port))
        return f"https://127.0.0.1:{hook.port}"

    service = {"namespace": "webhooks", "name": "convert", "path": "/crontab/convert/", "port": 8443}
    conv = CRConverter.for_crd(webhook_crd({"service": service, "caBundle": hook.ca_bundle}), service_resolver=resolve)
    try:
        (out,) = await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert out["spec"]["schedule"] == "* * * * */5"
    assert calls == [("webhooks", "convert", 8443)]
    assert hook.paths == ["/crontab/convert?timeout=30s"]
    assert hook.hosts == ["convert.webhooks.svc:8443"]


async def test_service_port_defaults_to_443(start_webhook):
    hook = await start_webhook(("convert.webhooks.svc",))
    ports = []

    def resolve(namespace: str, name: str, port: int) -> str:
        ports.append(port)
        return f"https://127.0.0.1:{hook.port}"

    service = {"namespace": "webhooks", "name": "convert"}
    conv = CRConverter.for_crd(webhook_crd({"service": service, "caBundle": hook.ca_bundle}), service_resolver=resolve)
    try:
        await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert ports == [443] and hook.paths == ["/?timeout=30s"]


# -- metadata restore --------------------------------------------------------------------------------------------


def _meta(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def spoil(out: dict[str, Any]) -> None:
        for obj in out["response"]["convertedObjects"]:
            obj["metadata"] = {**obj["metadata"]}
            change(obj["metadata"])

    return spoil


async def test_labels_and_annotations_from_the_webhook_are_kept_the_rest_restored(webhook, converter):
    def change(md: dict[str, Any]) -> None:
        md["labels"] = {"app": "cron", "converted": "yes"}
        md.pop("annotations", None)
        md["resourceVersion"] = "999"
        md["finalizers"] = ["example.com/added"]
        md["generation"] = 42

    webhook.respond = answer_with(_meta(change))
    original = crontab("a", labels={"app": "cron"}, annotations={"note": "x"})
    (out,) = await converter.convert([original], V2)
    expected = {**original["metadata"], "labels": {"app": "cron", "converted": "yes"}}
    del expected["annotations"]
    assert out["metadata"] == expected
    assert original["metadata"]["labels"] == {"app": "cron"}


ERROR_CASES = [
    pytest.param(
        answer_with(lambda out: out["response"].update(uid="not-the-uid")),
        re.escape(f'conversion webhook for {GVK1} failed: expected response.uid="')
        + r"[0-9a-f-]{36}"
        + re.escape('", got "not-the-uid"'),
        id="wrong-uid",
    ),
    pytest.param(
        answer_with(lambda out: out["response"].update(result={"status": "Failure", "message": "cannot convert"})),
        re.escape(f"conversion webhook for {GVK1} failed: cannot convert"),
        id="failed-with-message",
    ),
    pytest.param(
        answer_with(lambda out: out["response"].update(result={"status": "Failure"})),
        re.escape(f"conversion webhook for {GVK1} failed: response.result.status was 'Failure', not 'Success'"),
        id="failed-without-message",
    ),
    pytest.param(
        answer_with(lambda out: out["response"].update(result={})),
        re.escape(f"conversion webhook for {GVK1} failed: response.result.status was '', not 'Success'"),
        id="no-result",
    ),
    pytest.param(
        answer_with(lambda out: out["response"]["convertedObjects"].pop()),
        re.escape(f"conversion webhook for {GVK1} returned 1 objects, expected 2"),
        id="wrong-count",
    ),
    pytest.param(
        answer_with(lambda out: out.pop("response")),
        re.escape(f"conversion webhook for {GVK1} failed: no response provided"),
        id="no-response",
    ),
    pytest.param(
        answer_with(lambda out: (out.pop("apiVersion"), out.pop("kind"))),
        re.escape(
            f"conversion webhook for {GVK1} failed: expected webhook response of "
            "apiextensions.k8s.io/v1, Kind=ConversionReview, got /, Kind="
        ),
        id="v1-answer-without-type",
    ),
    pytest.param(
        answer_with(lambda out: out.update(apiVersion="apiextensions.k8s.io/v1beta1")),
        re.escape(
            f"conversion webhook for {GVK1} failed: converting (v1beta1.ConversionReview) to "
            "(v1.ConversionReview): unknown conversion"
        ),
        id="v1beta1-answer-to-v1-review",
    ),
    pytest.param(
        answer_with(lambda out: out["response"].update(uid=5)),
        re.escape(
            f"conversion webhook for {GVK1} failed: json: cannot unmarshal number into Go struct field "
            "ConversionResponse.response.uid of type types.UID"
        ),
        id="uid-not-a-string",
    ),
    pytest.param(
        answer_with(lambda out: out["response"]["convertedObjects"][1].update(kind="CronJob")),
        re.escape(
            f"conversion webhook for {GVK1} returned invalid object at index 1: "
            "invalid kind (expected CronTab, received CronJob)"
        ),
        id="changed-kind",
    ),
    pytest.param(
        answer_with(lambda out: out["response"]["convertedObjects"][0].update(apiVersion=V1)),
        re.escape(
            f"conversion webhook for {GVK1} returned invalid object at index 0: "
            f"invalid groupVersion (expected {V2}, received {V1})"
        ),
        id="not-converted",
    ),
    pytest.param(
        answer_with(lambda out: out["response"]["convertedObjects"][0].pop("kind")),
        r"^Object 'Kind' is missing in '\{.*\"apiVersion\":\"stable.example.com/v2\".*\}'$",
        id="missing-kind",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.update(name="renamed"))),
        re.escape(f"conversion webhook for {GVK1} returned invalid object: must have the same name: a != renamed"),
        id="changed-name",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.update(namespace="other"))),
        re.escape(
            f"conversion webhook for {GVK1} returned invalid object: must have the same namespace: default != other"
        ),
        id="changed-namespace",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.pop("uid"))),
        re.escape(f"conversion webhook for {GVK1} returned invalid object: must have the same UID: uid-a != "),
        id="dropped-uid",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.update(labels={"app": "-bad"}))),
        re.escape(
            f'conversion webhook for {GVK1} returned invalid metadata: metadata.labels: Invalid value: "-bad": '
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
            "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ),
        id="invalid-label",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.update(annotations={"bad key": "x"}))),
        re.escape(
            f'conversion webhook for {GVK1} returned invalid metadata: metadata.annotation: Invalid value: "bad key": '
        )
        + "name part must consist of",
        id="invalid-annotation",
    ),
    pytest.param(
        answer_with(_meta(lambda md: md.update(labels={"replicas": 3}))),
        re.escape(
            f"conversion webhook for {GVK1} returned invalid metadata: "
            "metadata.labels[replicas] must be a string, but is int64 in converted object"
        ),
        id="label-not-a-string",
    ),
    pytest.param(
        answer_with(lambda out: [o.update(metadata="x") for o in out["response"]["convertedObjects"]]),
        re.escape(f"conversion webhook for {GVK1} returned invalid object: must have the same name: a != "),
        id="metadata-not-an-object",
    ),
    pytest.param(
        lambda review: web.Response(status=500, text="boom", content_type="text/plain"),
        re.escape(
            f'conversion webhook for {GVK1} failed: an error on the server ("boom") has prevented the request '
            "from succeeding"
        ),
        id="http-500",
    ),
    pytest.param(
        lambda review: web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "denied by policy", "code": 403},
            status=403,
        ),
        re.escape(f"conversion webhook for {GVK1} failed: denied by policy"),
        id="http-status-object",
    ),
    pytest.param(
        lambda review: web.Response(status=404),
        re.escape(f"conversion webhook for {GVK1} failed: the server could not find the requested resource"),
        id="http-404",
    ),
    pytest.param(
        lambda review: web.Response(status=200, body=b"", content_type="application/json"),
        re.escape(
            f"conversion webhook for {GVK1} failed: 0-length response with status code: 200 "
            "and content type: application/json"
        ),
        id="empty-body",
    ),
    pytest.param(
        lambda review: web.Response(status=200, text="<html>oops</html>", content_type="text/html"),
        re.escape(
            f"conversion webhook for {GVK1} failed: couldn't get version/kind; json parse error: "
            "invalid character '<' looking for beginning of value"
        ),
        id="not-json",
    ),
]


@pytest.mark.parametrize(("respond", "message"), ERROR_CASES)
async def test_webhook_answer_errors(webhook, converter, respond, message):
    webhook.respond = respond
    with pytest.raises(ConversionError) as info:
        await converter.convert([crontab("a"), crontab("b")], V2)
    assert re.search(message, info.value.message), info.value.message
    status = info.value.status()
    assert status["code"] == 500 and "reason" not in status and status["message"] == info.value.message


async def test_bad_ca_is_a_tls_error(start_webhook):
    hook = await start_webhook()
    _, other_ca = server_context(["127.0.0.1"])
    conv = CRConverter.for_crd(webhook_crd({"url": hook.url, "caBundle": other_ca}))
    try:
        with pytest.raises(ConversionError) as info:
            await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert info.value.message == (
        f'conversion webhook for {GVK1} failed: Post "{hook.url}?timeout=30s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )


async def test_certificate_for_another_host_is_refused(start_webhook):
    hook = await start_webhook(("127.0.0.1", "webhook.example"))
    url = f"https://localhost:{hook.port}/convert"
    conv = CRConverter.for_crd(webhook_crd({"url": url, "caBundle": hook.ca_bundle}))
    try:
        with pytest.raises(ConversionError) as info:
            await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert info.value.message == (
        f'conversion webhook for {GVK1} failed: Post "{url}?timeout=30s": '
        "tls: failed to verify certificate: x509: certificate is valid for webhook.example, not localhost"
    )


async def test_timeout(webhook):
    webhook.delay = 1.0
    conv = CRConverter.for_crd(webhook_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}), timeout=0.2)
    try:
        with pytest.raises(ConversionError) as info:
            await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert info.value.message == (
        f'conversion webhook for {GVK1} failed: Post "{webhook.url}?timeout=200ms": '
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    )


async def test_connection_refused(webhook):
    url = "https://127.0.0.1:1/convert"
    conv = CRConverter.for_crd(webhook_crd({"url": url, "caBundle": webhook.ca_bundle}))
    try:
        with pytest.raises(ConversionError) as info:
            await conv.convert([crontab("a")], V2)
    finally:
        await conv.close()
    assert info.value.message == (
        f'conversion webhook for {GVK1} failed: Post "{url}?timeout=30s": '
        "dial tcp 127.0.0.1:1: connect: connection refused"
    )


# -- requests the converter refuses before calling anything --------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "to", "message"),
    [
        (crontab("a"), f"{GROUP}/v9", "request to convert CR to an invalid group/version: stable.example.com/v9"),
        ({**crontab("a"), "apiVersion": f"{GROUP}/v0"}, V2,
         "request to convert CR from an invalid group/version: stable.example.com/v0"),
        ({**crontab("a"), "apiVersion": "other.example.com/v1"}, V2,
         'other.example.com/v1, Kind=CronTab is unstructured and is not suitable for converting to "stable.example.com/v2"'),
    ],
)  # fmt: skip
async def test_invalid_versions(webhook, converter, obj, to, message):
    with pytest.raises(ConversionError) as info:
        await converter.convert([obj], to)
    assert info.value.message == message
    assert webhook.reviews == []


async def test_no_supported_review_version(webhook):
    conv = CRConverter.for_crd(webhook_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}, ("v2",)))
    with pytest.raises(ConversionError, match=r"^no supported conversion review versions$"):
        await conv.convert([crontab("a")], V2)


def test_setup_errors():
    with pytest.raises(
        ConverterSetupError, match=r'^unknown conversion strategy "Magic" for CRD crontabs\.stable\.example\.com$'
    ):
        CRConverter.for_crd(make_crd({"strategy": "Magic"}))
    with pytest.raises(ConverterSetupError) as info:
        CRConverter.for_crd(webhook_crd({}))
    assert str(info.value) == (
        'failed calling webhook "conversion_webhook_for_crontabs.stable.example.com": '
        "webhook configuration must have either service or URL"
    )
    bad = base64.b64encode(b"not a certificate").decode()
    with pytest.raises(
        ConverterSetupError, match=r"^unable to load root certificates: unable to parse bytes as PEM block$"
    ):
        CRConverter.for_crd(webhook_crd({"url": "https://127.0.0.1/convert", "caBundle": bad}))


def test_up_to_date_follows_the_conversion_settings():
    crd = webhook_crd({"url": "https://127.0.0.1/convert"})
    conv = CRConverter.for_crd(crd)
    assert conv.up_to_date(crd)
    changed = webhook_crd({"url": "https://127.0.0.1/other"})
    assert not conv.up_to_date(changed)


async def test_close_releases_the_session(webhook, converter):
    await converter.convert([crontab("a")], V2)
    session = converter.webhook._session
    assert session is not None and not session.closed
    await converter.close()
    assert session.closed


@pytest.mark.parametrize(
    ("seconds", "text"), [(30, "30s"), (0.2, "200ms"), (90, "1m30s"), (1.5, "1.5s"), (3600, "1h0m0s")]
)
def test_go_duration(seconds, text):
    assert go_duration(seconds) == text
