"""Authorization's cost: GETs/s and creates/s of ConfigMaps as a service account under `--authorization-mode=
Node,RBAC` with 10,000 Roles, 10,000 RoleBindings and 1,000 ServiceAccounts stored, beside the same requests
against a server with `--authorization-mode=AlwaysAllow` holding the same objects, in the same run (issue 18's
target: RBAC at least 0.9 of AlwaysAllow); the cost of one RBAC decision in µs (memoised and not), measured in
this process on an index of the same objects; and the cost of a validating admission webhook that allows
everything (an HTTPS server in another process on loopback), as the ratio of creates/s in a namespace it
watches to creates/s in one it does not.

Beside requests/s, the servers' CPU per request (from /proc: steadier than requests/s on a busy machine).

Both API servers run in their own processes (`pyk8s apiserver`, SQLite in a temporary directory); the load
comes from an aiohttp client in this process. Rounds alternate between the servers and the median is shown.

Run: python bench/authz.py [--quick] [--rounds N] [--plot out.png]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apiserver import Client  # bench/apiserver.py: an HTTPS session to the server under test

from pyk8s.testing.cluster import APIServerProcess

console = Console()
NAMESPACES = 100
SA_PER_NS = 10  # 1,000 service accounts
ROLES_PER_NS = 100  # 10,000 Roles and as many RoleBindings
CONC = 64


def objects() -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) for every namespace, ServiceAccount, Role and RoleBinding of the run. Each
    Role allows one verb set on one resource (some with resourceNames); each RoleBinding binds one Role to
    one ServiceAccount of its namespace, so every account has ten bindings. The account the load runs as is
    `ns-0/sa-0`, whose last binding (the hundredth of its namespace) grants ConfigMaps."""
    out: list[tuple[str, dict[str, Any]]] = []
    for n in range(NAMESPACES):
        ns = f"ns-{n}"
        out.append(("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
    resources = ["pods", "services", "secrets", "deployments", "jobs", "leases", "endpoints", "events"]
    for n in range(NAMESPACES):
        ns = f"ns-{n}"
        base = f"/api/v1/namespaces/{ns}"
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
        for i in range(SA_PER_NS):
            out.append((f"{base}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                     "metadata": {"name": f"sa-{i}", "namespace": ns}}))  # fmt: skip
        for i in range(ROLES_PER_NS):
            last = i == ROLES_PER_NS - 1
            rule: dict[str, Any] = {"apiGroups": [""], "verbs": ["get", "list", "watch"],
                                    "resources": [resources[i % len(resources)]]}  # fmt: skip
            if i % 3 == 0:
                rule["resourceNames"] = [f"thing-{i}"]
            if last:
                rule = {"apiGroups": [""], "verbs": ["get", "create"], "resources": ["configmaps"]}
            out.append((f"{rbac}/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                          "metadata": {"name": f"role-{i}", "namespace": ns}, "rules": [rule]}))  # fmt: skip
            out.append((f"{rbac}/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": f"binding-{i}", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{i}"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa-0" if last else f"sa-{i % SA_PER_NS}", "namespace": ns}],
            }))  # fmt: skip
    return out


async def fill(client: Client, objs: list[tuple[str, dict[str, Any]]], progress: Progress, what: str) -> None:
    task = progress.add_task(f"storing {len(objs):,} objects ({what})", total=len(objs))
    async with client.session() as s:
        # namespaces first (everything else is in one), then the rest concurrently
        head = [o for o in objs if o[1]["kind"] == "Namespace"]
        rest = [o for o in objs if o[1]["kind"] != "Namespace"]
        for batch in (head, rest):
            it = iter(batch)

            async def worker(it: Any = it) -> None:
                for path, obj in it:
                    async with s.post(client.server.url + path, data=orjson.dumps(obj)) as r:
                        await r.read()
                        assert r.status == 201, (r.status, await r.text())
                    progress.advance(task)

            await asyncio.gather(*(worker() for _ in range(32)))


async def token_for(client: Client, namespace: str, name: str) -> str:
    async with client.session() as s:
        url = f"{client.server.url}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
        async with s.post(url, data=orjson.dumps(body)) as r:
            doc = await r.json()
            assert r.status == 201, doc
            return str(doc["status"]["token"])


def session_as(client: Client, token: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CONC, ssl=client.ctx),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=aiohttp.ClientTimeout(total=None),
    )


def cpu_ns(pid: int) -> int:
    """CPU time (ns) the process's threads have run so far (/proc/PID/task/*/schedstat), exact to the
    nanosecond where /proc/PID/stat counts 10 ms ticks."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            total += int(stat.read_text().split()[0])
    return total


async def rate(
    session: aiohttp.ClientSession,
    requests: list[tuple[str, str, bytes | None]],
    expect: int,
    pid: int = 0,
) -> tuple[float, float]:
    """Requests/s and, given the server's `pid`, the server's CPU µs per request: throughput depends on what
    else the machine runs, CPU per request much less so."""
    it = iter(requests)

    async def worker() -> None:
        for method, url, body in it:
            async with session.request(method, url, data=body) as r:
                await r.read()
                assert r.status == expect, (r.status, await r.text())

    c0 = cpu_ns(pid) if pid else 0
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONC)))
    wall = time.perf_counter() - t0
    cpu = (cpu_ns(pid) - c0) / 1e3 / len(requests) if pid else 0.0
    return len(requests) / wall, cpu


async def gets_and_creates(client: Client, token: str, n: int, prefix: str) -> tuple[float, float, float, float]:
    """GETs/s, creates/s, and the server's CPU µs per GET and per create."""
    base = f"{client.server.url}/api/v1/namespaces/ns-0/configmaps"
    async with session_as(client, token) as s:
        creates = [("POST", base, orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": f"{prefix}-{i}"}, "data": {"k": str(i)}}))
                   for i in range(n)]  # fmt: skip
        pid = client.server.proc.pid if client.server.proc else 0
        c, c_cpu = await rate(s, creates, 201, pid)
        g, g_cpu = await rate(s, [("GET", f"{base}/{prefix}-{i % n}", None) for i in range(n)], 200, pid)
    return g, c, g_cpu, c_cpu


def decision_cost(objs: list[tuple[str, dict[str, Any]]]) -> tuple[float, float]:
    """µs per RBAC decision over an index of `objs`: memoised, and evaluated (the decision memo cleared each
    time; the user's resolved rules kept, as between two different requests of one user)."""
    from pyk8s.apiserver.authn import UserInfo
    from pyk8s.apiserver.authz import Attributes
    from pyk8s.apiserver.authz.rbac import RBACAuthorizer

    authorizer = RBACAuthorizer(lambda gv, plural: None)  # type: ignore[arg-type,return-value]  # fed below
    for _, obj in objs:
        kind = {"Role": "roles", "RoleBinding": "rolebindings"}.get(obj["kind"])
        if kind is not None:
            authorizer.observe(kind, "ADDED", obj)
    user = UserInfo("system:serviceaccount:ns-0:sa-0", "", ("system:serviceaccounts", "system:serviceaccounts:ns-0",
                                                            "system:authenticated"))  # fmt: skip
    attrs = [Attributes(user, "get", True, "ns-0", "", "v1", "configmaps", "", f"cm-{i}") for i in range(1000)]
    assert authorizer.authorize(attrs[0]).allowed
    n = 100_000
    t0 = time.perf_counter()
    for i in range(n):
        authorizer.authorize(attrs[i % 1000])
    memo = (time.perf_counter() - t0) / n * 1e6
    n = 10_000
    t0 = time.perf_counter()
    for i in range(n):
        authorizer._memo.clear()
        authorizer.authorize(attrs[i % 1000])
    evaluated = (time.perf_counter() - t0) / n * 1e6
    return memo, evaluated


WEBHOOK_SERVER = """
import asyncio, sys, ssl, tempfile, orjson
from pathlib import Path
from aiohttp import web
from pyk8s.apiserver.certs import self_signed_serving_pair

async def review(request):
    doc = orjson.loads(await request.read())
    return web.Response(body=orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": doc["request"]["uid"], "allowed": True}}), content_type="application/json")

async def main():
    cert, key = self_signed_serving_pair(["localhost", "127.0.0.1"])
    d = Path(tempfile.mkdtemp())
    (d / "tls.crt").write_bytes(cert); (d / "tls.key").write_bytes(key)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(d / "tls.crt", d / "tls.key")
    app = web.Application(); app.router.add_post("/allow", review)
    runner = web.AppRunner(app, access_log=None); await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx); await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(port, cert.hex(), flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def start_webhook_server() -> subprocess.Popen[str]:
    """The allow-all webhook server, in its own process (so that it does not share this client's CPU)."""
    return subprocess.Popen([sys.executable, "-c", WEBHOOK_SERVER], stdout=subprocess.PIPE, text=True,
                            cwd=str(Path(__file__).resolve().parent.parent))  # fmt: skip


async def webhook_cost(client: Client, n: int, rounds: int, progress: Progress) -> tuple[float, float]:
    """Creates/s of ConfigMaps (as the admin) in a namespace a validating webhook that allows everything
    watches, and in one it does not, alternating; the medians."""
    proc = start_webhook_server()
    try:
        assert proc.stdout is not None
        port, cert_hex = proc.stdout.readline().split()
        url = client.server.url
        async with client.session() as s:
            for ns in ("hooked", "plain"):
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"hook": ns}}}
                async with s.post(f"{url}/api/v1/namespaces", data=orjson.dumps(body)) as r:
                    assert r.status == 201, await r.text()
            config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                      "metadata": {"name": "allow-all"}, "webhooks": [{
                          "name": "allow.bench.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                          "clientConfig": {"url": f"https://127.0.0.1:{port}/allow",
                                           "caBundle": base64.b64encode(bytes.fromhex(cert_hex)).decode()},
                          "namespaceSelector": {"matchLabels": {"hook": "hooked"}},
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}]}]}  # fmt: skip
            path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
            async with s.post(url + path, data=orjson.dumps(config)) as r:
                assert r.status == 201, await r.text()
        await asyncio.sleep(2)  # the configuration reaches the plugin through the watch cache
        results: dict[str, list[float]] = {"hooked": [], "plain": []}
        task = progress.add_task("webhook rounds", total=rounds * 2)
        async with client.session() as s:
            for r in range(rounds + 1):
                for ns in ("hooked", "plain"):
                    creates = [("POST", f"{url}/api/v1/namespaces/{ns}/configmaps",
                                orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": f"w{r}-{i}"}, "data": {"k": str(i)}}))
                               for i in range(n)]  # fmt: skip
                    rate_, _ = await rate(s, creates, 201)
                    if r:  # the first round warms the webhook's connections
                        results[ns].append(rate_)
                        progress.advance(task)
        return statistics.median(results["plain"]), statistics.median(results["hooked"])
    finally:
        proc.kill()
        proc.wait()


def plot(rows: list[tuple[str, float, float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r[1] for r in rows], width=0.4, label="AlwaysAllow")
    ax.bar([i + 0.2 for i in x], [r[2] for r in rows], width=0.4, label="Node,RBAC")
    ax.set_xticks(list(x), [r[0] for r in rows])
    ax.set_ylabel("requests/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    console.print(f"plot written to {path}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per server (the median is shown)")
    ap.add_argument("--plot", metavar="PNG", help="draw the figures")
    args = ap.parse_args()
    n, rounds = (300, 1) if args.quick else (3000, max(1, args.rounds))
    objs = objects()
    with APIServerProcess(extra_args=("--authorization-mode=Node,RBAC",)) as rbac_server, \
            APIServerProcess(extra_args=("--authorization-mode=AlwaysAllow",)) as open_server:  # fmt: skip
        servers = {"rbac": Client(rbac_server), "open": Client(open_server)}
        with Progress(console=console, transient=True) as progress:
            for what, client in servers.items():
                await fill(client, objs, progress, what)
            tokens = {what: await token_for(c, "ns-0", "sa-0") for what, c in servers.items()}
            for what, client in servers.items():  # warm both (caches, memos, connections)
                await gets_and_creates(client, tokens[what], 200, "warm")
            results: dict[str, list[tuple[float, float, float, float]]] = {"rbac": [], "open": []}
            task = progress.add_task("alternating rounds", total=rounds * 2)
            for r in range(rounds):
                for what, client in servers.items():
                    results[what].append(await gets_and_creates(client, tokens[what], n, f"r{r}"))
                    progress.advance(task)
            # Last: the webhook configuration stays on that server, and every create then asks its selector.
            hook = await webhook_cost(servers["open"], n, rounds, progress)
    rows = []
    for i, label in enumerate(("GETs/s", "creates/s")):
        rows.append((label, statistics.median(x[i] for x in results["open"]),
                     statistics.median(x[i] for x in results["rbac"])))  # fmt: skip
    table = Table(title=f"a service account's requests, {NAMESPACES * ROLES_PER_NS:,} Roles + RoleBindings, "
                        f"{NAMESPACES * SA_PER_NS:,} ServiceAccounts; median of {rounds} alternating rounds")  # fmt: skip
    for col in ("", "AlwaysAllow", "Node,RBAC", "RBAC/AlwaysAllow (target >= 0.9)"):
        table.add_column(col, justify="right")
    for label, open_rate, rbac_rate in rows:
        table.add_row(label, f"{open_rate:,.0f}", f"{rbac_rate:,.0f}", f"{rbac_rate / open_rate:.2f}")
    # The server's CPU per request, as a throughput ratio (AlwaysAllow's µs over RBAC's): what the server could
    # serve on a core of its own, which other processes on the machine disturb much less than requests/s.
    for i, label in ((2, "server CPU µs/GET"), (3, "server CPU µs/create")):
        open_cpu = statistics.median(x[i] for x in results["open"])
        rbac_cpu = statistics.median(x[i] for x in results["rbac"])
        table.add_row(label, f"{open_cpu:,.1f}", f"{rbac_cpu:,.1f}", f"{open_cpu / rbac_cpu:.2f}")
    console.print(table)
    hooks = Table(title=f"creates/s with a validating admission webhook (allows all); median of {rounds} rounds")
    for col in ("without", "with the webhook", "ratio"):
        hooks.add_column(col, justify="right")
    hooks.add_row(f"{hook[0]:,.0f}", f"{hook[1]:,.0f}", f"{hook[1] / hook[0]:.2f}")
    console.print(hooks)
    memo, evaluated = decision_cost(objs)
    console.print(f"one RBAC decision: {memo:.2f} µs memoised, {evaluated:.1f} µs evaluated")
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    asyncio.run(main())
