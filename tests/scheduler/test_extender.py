"""HTTP scheduler extenders (pyk8s/scheduler/extender.py and their part of schedule_one.py), against a fake
extender served by aiohttp in the test: filtering narrows the feasible nodes and its failures reach the FitError,
weighted priorities move the choice, a binder extender binds, ignorable failures are skipped and others fail the
cycle, managedResources decide interest, TLS settings are honoured."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web

from pyk8s.apiserver.certs import ensure_pki
from pyk8s.scheduler import schedule_one
from pyk8s.scheduler.config import Extender, ExtenderManagedResource, default_config
from pyk8s.scheduler.extender import (
    EXTENDER_NAME,
    ExtenderError,
    HTTPExtender,
    apply_ignored_resources,
    build_extenders,
    call_extenders_for_preemption,
    extenders_binding,
    make_ssl_context,
)
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import Code, CycleState, FitError
from pyk8s.scheduler.framework.preemption import Candidate, Victims
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.registry import build_framework
from pyk8s.scheduler.schedule_one import ScheduleAlgorithm, ScheduleError

from .wrappers import make_node, make_pod

Handler = Callable[[dict[str, Any]], Any]


class FakeExtender:
    """An extender web service: each verb answers with what its handler returns (a JSON value, or an int
    taken as an HTTP status to fail with), and every request body is kept."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        body = await request.json()
        assert request.headers["Content-Type"] == "application/json"
        self.requests.setdefault(verb, []).append(body)
        handler = self.handlers.get(verb)
        if handler is None:
            return web.Response(status=404)
        out = handler(body)
        if isinstance(out, int):
            return web.Response(status=out, text="broken")
        if isinstance(out, float):  # a slow reply
            await asyncio.sleep(out)
            return web.json_response({})
        return web.json_response(out)


async def serve(fake: FakeExtender, ssl_context: ssl.SSLContext | None = None) -> web.AppRunner:
    app = web.Application()
    app.router.add_post("/ext/{verb}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}/ext"
    return runner


@pytest.fixture
async def fake() -> AsyncIterator[FakeExtender]:
    f = FakeExtender()
    runner = await serve(f)
    yield f
    await runner.cleanup()


@pytest.fixture
async def fake2() -> AsyncIterator[FakeExtender]:
    f = FakeExtender()
    runner = await serve(f)
    yield f
    await runner.cleanup()


def ext(url: str, **kw: Any) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url, **kw))


def node_names(body: dict[str, Any]) -> list[str]:
    """The candidate nodes an ExtenderArgs names, in either form."""
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [n["metadata"]["name"] for n in body["Nodes"]["items"]]


class Harness:
    """The default profile's framework and a ScheduleAlgorithm over a static snapshot, with extenders."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        self.snapshot = Snapshot.from_objects(nodes, pods)
        self.fw = build_framework(default_config(), "default-scheduler", FrameworkHandle(self.snapshot))
        self.algo = ScheduleAlgorithm(None, self.snapshot)
        self.extenders: list[HTTPExtender] = []

    async def schedule(self, pod: dict[str, Any], *extenders: HTTPExtender) -> schedule_one.ScheduleResult:
        self.algo.extenders = list(extenders)
        self.extenders.extend(extenders)
        return await self.algo.schedule_pod_async(self.fw, CycleState(), pod)

    async def close(self) -> None:
        for e in self.extenders:
            await e.close()


@pytest.fixture
async def harness() -> AsyncIterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> Harness:  # type: ignore[assignment]
        h = Harness(nodes, pods)
        made.append(h)
        return h

    yield make
    for h in made:
        await h.close()


def three_nodes() -> list[dict[str, Any]]:
    return [make_node(f"n{i}") for i in (1, 2, 3)]


# -- filter ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache_capable", [False, True])
async def test_filter_narrows_feasible_nodes(fake: FakeExtender, harness: Any, cache_capable: bool) -> None:
    def keep_n3(body: dict[str, Any]) -> dict[str, Any]:
        names = node_names(body)
        failed = {n: "extender says no" for n in names if n != "n3"}
        if cache_capable:
            return {"NodeNames": ["n3"], "FailedNodes": failed}
        nodes = [n for n in body["Nodes"]["items"] if n["metadata"]["name"] == "n3"]
        return {"Nodes": {"items": nodes}, "FailedNodes": failed}

    fake.handlers["filter"] = keep_n3
    h = harness(three_nodes())
    pod = make_pod("p", cpu="100m")
    res = await h.schedule(pod, ext(fake.url, filter_verb="filter", node_cache_capable=cache_capable))
    assert res.suggested_host == "n3"
    assert res.feasible_nodes == 1
    body = fake.requests["filter"][0]
    assert body["Pod"]["metadata"]["name"] == "p"
    assert sorted(node_names(body)) == ["n1", "n2", "n3"]
    # Only one of the two node forms is sent, the other is null, as Go's encoder writes a nil pointer.
    assert (body["Nodes"] is None) == cache_capable and (body["NodeNames"] is None) != cache_capable


async def test_extender_failures_reach_the_fit_error(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["filter"] = lambda body: {
        "Nodes": {"items": []},
        "FailedNodes": {"n1": "no GPU left", "n3": "both maps"},
        "FailedAndUnresolvableNodes": {"n2": "wrong rack", "n3": "wrong rack"},
    }
    # n4 is rejected by the framework itself (too little cpu): its reason must be in the message as well.
    h = harness([*three_nodes(), make_node("n4", cpu="100m")])
    pod = make_pod("p", cpu="1")
    with pytest.raises(FitError) as ei:
        await h.schedule(pod, ext(fake.url, filter_verb="filter"))
    fit = ei.value
    assert fit.message() == "0/4 nodes are available: 1 Insufficient cpu, 1 no GPU left, 2 wrong rack."
    st = fit.diagnosis.node_to_status
    assert st["n1"].code == Code.UNSCHEDULABLE
    assert st["n2"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st["n3"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # the unresolvable map wins
    assert st["n4"].code == Code.UNSCHEDULABLE
    assert EXTENDER_NAME in fit.diagnosis.unschedulable_plugins
    assert "NodeResourcesFit" in fit.diagnosis.unschedulable_plugins


async def test_extenders_run_in_order_on_what_the_previous_left(
    fake: FakeExtender, fake2: FakeExtender, harness: Any
) -> None:
    fake.handlers["filter"] = lambda body: {"NodeNames": [n for n in node_names(body) if n != "n1"]}
    fake2.handlers["filter"] = lambda body: {"NodeNames": [n for n in node_names(body) if n != "n2"]}
    h = harness(three_nodes())
    a = ext(fake.url, filter_verb="filter", node_cache_capable=True)
    b = ext(fake2.url, filter_verb="filter", node_cache_capable=True)
    res = await h.schedule(make_pod("p"), a, b)
    assert res.suggested_host == "n3"
    assert sorted(fake2.requests["filter"][0]["NodeNames"]) == ["n2", "n3"]


async def test_uninterested_extender_is_not_called(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["filter"] = lambda body: {"NodeNames": []}
    h = harness(three_nodes())
    e = ext(fake.url, filter_verb="filter", managed_resources=[ExtenderManagedResource("example.com/gpu")])
    res = await h.schedule(make_pod("p"), e)
    assert res.feasible_nodes == 3
    assert "filter" not in fake.requests


async def test_cache_capable_extender_naming_an_unknown_node_fails(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["filter"] = lambda body: {"NodeNames": ["n1", "ghost"]}
    h = harness(three_nodes())
    with pytest.raises(ScheduleError) as ei:
        await h.schedule(make_pod("p"), ext(fake.url, filter_verb="filter", node_cache_capable=True))
    assert ei.value.status.code == Code.ERROR
    assert ei.value.status.message() == (
        f'extender "{fake.url}" claims a filtered node "ghost" which is not found in the input node list'
    )


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (500, "failed filter with extender at URL {url}/filter, code 500"),
        ({"Error": "extender is sad"}, "extender is sad"),
        ({"error": "lower-case keys match too"}, "lower-case keys match too"),
        ([1, 2], "json: cannot unmarshal array into Go value of type v1.ExtenderFilterResult"),
    ],
)
async def test_filter_errors(fake: FakeExtender, harness: Any, reply: Any, message: str) -> None:
    fake.handlers["filter"] = lambda body: reply
    h = harness(three_nodes())
    # Not ignorable: the cycle fails with the extender's error.
    with pytest.raises(ScheduleError) as ei:
        await h.schedule(make_pod("p"), ext(fake.url, filter_verb="filter"))
    assert ei.value.status.code == Code.ERROR
    assert ei.value.status.message() == message.format(url=fake.url)
    # Ignorable: the extender is skipped and all nodes stay feasible.
    res = await h.schedule(make_pod("p"), ext(fake.url, filter_verb="filter", ignorable=True))
    assert res.feasible_nodes == 3


async def test_unreachable_and_slow_extenders(fake: FakeExtender, harness: Any) -> None:
    h = harness(three_nodes())
    dead = "http://127.0.0.1:1/ext"
    with pytest.raises(ScheduleError) as ei:
        await h.schedule(make_pod("p"), ext(dead, filter_verb="filter"))
    assert ei.value.status.message().startswith(f'Post "{dead}/filter": ')
    res = await h.schedule(make_pod("p"), ext(dead, filter_verb="filter", ignorable=True))
    assert res.feasible_nodes == 3

    fake.handlers["filter"] = lambda body: 0.5
    with pytest.raises(ScheduleError) as ei:
        await h.schedule(make_pod("p"), ext(fake.url, filter_verb="filter", http_timeout=0.1))
    assert ei.value.status.message() == (
        f'Post "{fake.url}/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    )


async def test_nominated_node_rejected_by_extender_falls_back_to_all_nodes(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["filter"] = lambda body: {
        "NodeNames": [n for n in node_names(body) if n != "n1"],
        "FailedNodes": {"n1": "not here"} if "n1" in node_names(body) else {},
    }
    h = harness(three_nodes())
    pod = make_pod("p")
    pod["status"] = {"nominatedNodeName": "n1"}
    res = await h.schedule(pod, ext(fake.url, filter_verb="filter", node_cache_capable=True))
    assert res.suggested_host in ("n2", "n3")
    assert [sorted(r["NodeNames"]) for r in fake.requests["filter"]] == [["n1"], ["n1", "n2", "n3"]]


# -- prioritize -----------------------------------------------------------------------------------------------


def prefer(node: str, score: int = 10) -> Handler:
    return lambda body: [{"Host": n, "Score": score if n == node else 0} for n in node_names(body)]


@pytest.mark.parametrize(("weight_a", "weight_b", "expected"), [(1, 2, "n2"), (3, 1, "n1"), (1, 1, None)])
async def test_prioritize_weights_decide(
    fake: FakeExtender, fake2: FakeExtender, harness: Any, weight_a: int, weight_b: int, expected: str | None
) -> None:
    fake.handlers["prioritize"] = prefer("n1")
    fake2.handlers["prioritize"] = prefer("n2")
    h = harness(three_nodes())
    a = ext(fake.url, prioritize_verb="prioritize", weight=weight_a)
    b = ext(fake2.url, prioritize_verb="prioritize", weight=weight_b)
    chosen = {(await h.schedule(make_pod("p"), a, b)).suggested_host for _ in range(8)}
    if expected is None:  # a tie between n1 and n2, n3 never wins
        assert chosen <= {"n1", "n2"}
    else:
        assert chosen == {expected}


async def test_extender_scores_are_scaled_and_summed(fake: FakeExtender, fake2: FakeExtender, harness: Any) -> None:
    fake.handlers["prioritize"] = lambda body: [{"Host": "n1", "Score": 3}, {"Host": "n2", "Score": 7}]
    fake2.handlers["prioritize"] = lambda body: [{"host": "n2", "score": 1}, {"Host": "elsewhere", "Score": 9}]
    h = harness(three_nodes())
    h.algo.extenders = [
        ext(fake.url, prioritize_verb="prioritize", weight=2),
        ext(fake2.url, prioritize_verb="prioritize", weight=5),
    ]
    h.extenders.extend(h.algo.extenders)
    scores = await h.algo.extender_scores(make_pod("p"), [0, 1, 2])
    # score * weight * (100 // 10), summed over the extenders; hosts not among the nodes are ignored.
    assert scores.tolist() == [3 * 2 * 10, 7 * 2 * 10 + 1 * 5 * 10, 0]


async def test_failing_prioritizer_gives_no_score(fake: FakeExtender, fake2: FakeExtender, harness: Any) -> None:
    fake.handlers["prioritize"] = lambda body: 500
    fake2.handlers["prioritize"] = prefer("n3", 4)
    h = harness(three_nodes())
    a = ext(fake.url, prioritize_verb="prioritize", weight=10)
    b = ext(fake2.url, prioritize_verb="prioritize", weight=1)
    res = await h.schedule(make_pod("p"), a, b)  # not ignorable, still no error: upstream ignores score errors
    assert res.suggested_host == "n3"


async def test_prioritize_args_and_no_score_plugins(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["prioritize"] = prefer("n2")
    h = harness(three_nodes())
    e = ext(fake.url, prioritize_verb="prioritize", weight=1, node_cache_capable=True)
    h.algo.extenders = [e]
    h.extenders.append(e)
    # A profile with no Score plugins still adds up the extenders' scores.
    h.fw.points["score"] = []
    total = await h.algo.prioritize_nodes_async(h.fw, CycleState(), make_pod("p"), [0, 1, 2])
    assert total.tolist() == [0, 100, 0]
    assert fake.requests["prioritize"][0]["NodeNames"] == ["n1", "n2", "n3"]


# -- bind -----------------------------------------------------------------------------------------------------


async def test_extenders_binding(fake: FakeExtender, fake2: FakeExtender) -> None:
    fake.handlers["bind"] = lambda body: {"Error": ""}
    fake2.handlers["bind"] = lambda body: {"Error": "no room at the inn"}
    pod = make_pod("p", namespace="ns1")
    pod["metadata"]["uid"] = "uid-p"
    plain = ext(fake.url, filter_verb="filter")
    binder = ext(fake.url, bind_verb="bind")
    failing = ext(fake2.url, bind_verb="bind")
    picky = ext(fake2.url, bind_verb="bind", managed_resources=[ExtenderManagedResource("example.com/gpu")])
    try:
        assert await extenders_binding([], pod, "n1") == (False, None)
        assert await extenders_binding([plain, picky], pod, "n1") == (False, None)
        assert await extenders_binding([plain, binder, failing], pod, "n2") == (True, None)
        assert fake.requests["bind"] == [{"PodName": "p", "PodNamespace": "ns1", "PodUID": "uid-p", "Node": "n2"}]
        bound, st = await extenders_binding([failing, binder], pod, "n1")
        assert bound and st is not None and st.code == Code.ERROR and st.message() == "no room at the inn"
        # An ignorable binder's failure hands the pod to the next binder.
        failing.ignorable = True
        assert await extenders_binding([failing, binder], pod, "n3") == (True, None)
        assert fake.requests["bind"][-1]["Node"] == "n3"
    finally:
        for e in (plain, binder, failing, picky):
            await e.close()


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.done: list[str] = []


async def test_binding_cycle_uses_the_binder_extender(fake: FakeExtender, harness: Any) -> None:
    fake.handlers["bind"] = lambda body: {}
    h = harness(three_nodes())
    binder = ext(fake.url, bind_verb="bind")
    h.algo.extenders = [binder]
    h.extenders.append(binder)
    pod = make_pod("p")
    pod["metadata"]["uid"] = "uid-p"
    # The scheduling cycle first, so the plugins' cycle state (VolumeBinding's) is there for PreBind.
    state = CycleState()
    result = await h.algo.schedule_pod_async(h.fw, state, pod)
    assumed = {**pod, "spec": {**pod["spec"], "nodeName": result.suggested_host}}
    assert h.fw.run_reserve_plugins_reserve(state, assumed, result.suggested_host) is None
    rec = _Recorder()
    sched = SimpleNamespace(
        algorithm=h.algo,
        cache=SimpleNamespace(finish_binding=lambda p: None),
        queue=SimpleNamespace(done=rec.done.append),
        queue_clock=lambda: 0.0,
        api_slot=lambda: asyncio.Semaphore(1),
        record_event=lambda fw, p, type_, reason, action, note: rec.events.append((reason, note)),
    )
    qpi = SimpleNamespace(attempts=1, initial_attempt_timestamp=None)
    # The default profile's DefaultBinder has no client here: only the extender can have bound the pod.
    await schedule_one.binding_cycle(sched, h.fw, state, result, assumed, qpi, 0.0, 0)  # type: ignore[arg-type]
    host = result.suggested_host
    assert fake.requests["bind"] == [{"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p", "Node": host}]
    assert rec.events == [("Scheduled", f"Successfully assigned default/p to {host}")]
    assert rec.done == ["uid-p"]


# -- interest, building, preemption, TLS ----------------------------------------------------------------------


def _container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": "c", "image": "pause", "resources": res}


@pytest.mark.parametrize(
    ("managed", "spec", "interested"),
    [
        ([], {"containers": [_container()]}, True),
        (["example.com/gpu"], {"containers": [_container({"cpu": "1"})]}, False),
        (["example.com/gpu"], {"containers": [_container({"cpu": "1"}), _container({"example.com/gpu": "1"})]}, True),
        (["example.com/gpu"], {"containers": [_container(limits={"example.com/gpu": "1"})]}, True),
        (["example.com/gpu"], {"containers": [], "initContainers": [_container({"example.com/gpu": "1"})]}, True),
        (["example.com/gpu", "example.com/fpga"], {"containers": [_container(limits={"example.com/fpga": "2"})]}, True),
        (["example.com/gpu"], {"containers": [_container({"example.com/fpga": "1"})]}, False),
        # Ephemeral containers and pod overhead do not count, as upstream.
        (["example.com/gpu"], {"containers": [], "overhead": {"example.com/gpu": "1"}}, False),
    ],
)
def test_is_interested(managed: list[str], spec: dict[str, Any], interested: bool) -> None:
    e = ext("http://x", managed_resources=[ExtenderManagedResource(m) for m in managed])
    assert e.is_interested({"metadata": {"name": "p"}, "spec": spec}) is interested


def test_build_extenders_orders_and_registers_requeueing() -> None:
    cfgs = [
        Extender(url_prefix="http://a", ignorable=True),
        Extender(url_prefix="http://b"),
        Extender(url_prefix="http://c", ignorable=True),
        Extender(url_prefix="http://d"),
    ]
    queue = SimpleNamespace(queueing_hint_map={"default-scheduler": [], "other": []})
    built = build_extenders(cfgs, queue)
    assert [e.name for e in built] == ["http://b", "http://d", "http://a", "http://c"]
    for entries in queue.queueing_hint_map.values():
        ((event, plugin, hint),) = entries
        assert plugin == EXTENDER_NAME and hint is None and event.resource == "*"
    assert build_extenders([], queue) == []
    assert built[0].timeout == 5.0  # upstream's DefaultExtenderTimeout


def test_apply_ignored_resources() -> None:
    cfg = default_config()
    cfg.extenders = [
        Extender(
            url_prefix="http://a",
            managed_resources=[ExtenderManagedResource("example.com/gpu", True), ExtenderManagedResource("x/y")],
        )
    ]
    apply_ignored_resources(cfg)
    assert cfg.profiles[0].plugin_args["NodeResourcesFit"]["ignoredResources"] == ["example.com/gpu"]


async def test_process_preemption(fake: FakeExtender) -> None:
    victim1, victim2 = make_pod("v1", node_name="n1"), make_pod("v2", node_name="n2")
    victim1["metadata"]["uid"], victim2["metadata"]["uid"] = "uid-v1", "uid-v2"
    snapshot = Snapshot.from_objects([make_node("n1"), make_node("n2")], [victim1, victim2])
    fake.handlers["preempt"] = lambda body: {
        "NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "uid-v2"}], "NumPDBViolations": 1}}
    }
    e = ext(fake.url, preempt_verb="preempt", node_cache_capable=True)
    try:
        cands = [Candidate("n1", Victims([victim1])), Candidate("n2", Victims([victim2]))]
        got, st = await call_extenders_for_preemption([e], make_pod("p"), cands, snapshot)
        assert st is None
        assert [
            (c.name, [p["metadata"]["name"] for p in c.victims.pods], c.victims.num_pdb_violations) for c in got
        ] == [("n2", ["v2"], 1)]
        sent = fake.requests["preempt"][0]
        assert sent["NodeNameToVictims"] is None
        assert sent["NodeNameToMetaVictims"]["n1"] == {"Pods": [{"UID": "uid-v1"}], "NumPDBViolations": 0}
        # A victim the scheduler does not know is an error.
        fake.handlers["preempt"] = lambda body: {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "nope"}]}}}
        with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: &\{nope\}\) on node: n1"):
            await e.process_preemption(make_pod("p"), {"n1": Victims([victim1])}, snapshot)
    finally:
        await e.close()


def test_ssl_context_rules(tmp_path: Path) -> None:
    assert make_ssl_context(False, None) is None
    # HTTPS without a CA: the server's certificate is not verified (upstream sets Insecure).
    ctx = make_ssl_context(True, None)
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE
    with pytest.raises(ValueError, match="specifying a root certificates file with the insecure flag is not allowed"):
        make_ssl_context(False, {"insecure": True, "caFile": "/nonexistent"})
    pki = ensure_pki(tmp_path, ["127.0.0.1"])
    ctx = make_ssl_context(True, {"caData": base64.b64encode(pki.ca_cert.read_bytes()).decode()})
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED


async def test_https_extender_with_client_certificate(tmp_path: Path, harness: Any) -> None:
    pki = ensure_pki(tmp_path, ["extender.example"])
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_cert))
    server_ctx.load_cert_chain(pki.serving_cert, pki.serving_key)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    f = FakeExtender()
    f.handlers["filter"] = lambda body: {"NodeNames": ["n2"]}
    runner = await serve(f, server_ctx)
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode()  # noqa: E731
    tls = {
        "caData": b64(pki.ca_cert),
        "certData": b64(pki.admin_cert),
        "keyFile": str(pki.admin_key),
        "serverName": "extender.example",
    }
    try:
        h = harness(three_nodes())
        good = ext(f.url, filter_verb="filter", node_cache_capable=True, enable_https=True, tls_config=tls)
        assert (await h.schedule(make_pod("p"), good)).suggested_host == "n2"
        # Without serverName the certificate does not name 127.0.0.1: the TLS handshake fails.
        bad = ext(
            f.url,
            filter_verb="filter",
            node_cache_capable=True,
            enable_https=True,
            tls_config={k: v for k, v in tls.items() if k != "serverName"},
        )
        with pytest.raises(ScheduleError, match=r'^Post "https://127\.0\.0\.1'):
            await h.schedule(make_pod("p"), bad)
        assert len(f.requests["filter"]) == 1
    finally:
        await runner.cleanup()
