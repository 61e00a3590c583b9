"""A tiny extension API server for the aggregation tests, as sample-apiserver's wardle group: HTTPS on
127.0.0.1 with a certificate for `api.wardle.svc`, trusting the front proxy as an extension server does (the
client certificate must verify against `requestheader-client-ca-file` and have an allowed common name, both read
from kube-system/extension-apiserver-authentication), and serving discovery and flunders for
`wardle.example.com/v1alpha1`. It records who each request said it was for."""

from __future__ import annotations

import asyncio
import json
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from pyk8s.apiserver.certs import self_signed_serving_pair

GROUP = "wardle.example.com"
VERSION = "v1alpha1"
GV = f"{GROUP}/{VERSION}"
CREATED = "2024-01-01T00:00:00Z"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@dataclass
class Seen:
    path: str
    common_name: str
    user: str
    groups: list[str]
    authorization: bool
    query: str


@dataclass
class Wardle:
    requestheader_ca: str  # PEM
    allowed_names: list[str]
    flunders: dict[str, list[str]] = field(default_factory=lambda: {"default": ["alpha", "beta"]})
    seen: list[Seen] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        cert, key = self_signed_serving_pair(["api.wardle.svc", "127.0.0.1"])
        self.ca_bundle = cert
        d = Path(tempfile.mkdtemp())
        (d / "tls.crt").write_bytes(cert)
        (d / "tls.key").write_bytes(key)
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(d / "tls.crt", d / "tls.key")
        self.ctx.load_verify_locations(cadata=self.requestheader_ca)
        self.ctx.verify_mode = ssl.CERT_REQUIRED  # the front proxy's certificate, or no connection
        self.loop = asyncio.new_event_loop()
        self.watch_release = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> Wardle:
        if not self._thread.is_alive():
            self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/apis", self.apis)
        app.router.add_get(f"/apis/{GROUP}", self.group)
        app.router.add_get(f"/apis/{GROUP}/{{version}}", self.resources)  # any version: the availability check
        app.router.add_get(f"/apis/{GV}/namespaces/{{ns}}/flunders", self.list_flunders)
        app.router.add_post(f"/apis/{GV}/namespaces/{{ns}}/flunders", self.create_flunder)
        app.router.add_get(f"/apis/{GV}/namespaces/{{ns}}/flunders/{{name}}", self.get_flunder)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ctx)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        """Stop listening (the port stays this server's for a later `start`)."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
            self._runner = None

    def close(self) -> None:
        self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)

    # -- the front proxy -----------------------------------------------------------------------------------

    def _authenticate(self, request: web.Request) -> web.Response | None:
        cert = request.transport.get_extra_info("peercert") if request.transport else None
        cn = next((v for rdn in (cert or {}).get("subject", ()) for k, v in rdn if k == "commonName"), "")
        if self.allowed_names and cn not in self.allowed_names:
            return web.json_response({"kind": "Status", "status": "Failure", "code": 401}, status=401)
        self.seen.append(Seen(
            request.path, cn, request.headers.get("X-Remote-User", ""), request.headers.getall("X-Remote-Group", []),
            "Authorization" in request.headers, request.query_string,
        ))  # fmt: skip
        return None

    # -- discovery ------------------------------------------------------------------------------------------

    @staticmethod
    def _flunders_discovery() -> dict[str, Any]:
        return {"resource": "flunders", "responseKind": {"group": GROUP, "version": VERSION, "kind": "Flunder"},
                "scope": "Namespaced", "singularResource": "flunder", "verbs": ["get", "list", "watch"],
                "shortNames": ["fl"]}  # fmt: skip

    async def apis(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._authenticate(request)) is not None:
            return refused
        if "as=APIGroupDiscoveryList" in request.headers.get("Accept", "").replace(" ", ""):
            doc = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                   "items": [{"metadata": {"name": GROUP}, "versions": [
                       {"version": VERSION, "resources": [self._flunders_discovery()], "freshness": "Current"}]}]}  # fmt: skip
            return web.Response(body=json.dumps(doc), headers={"Content-Type": AGGREGATED})
        gv = {"groupVersion": GV, "version": VERSION}
        return web.json_response({"kind": "APIGroupList", "apiVersion": "v1",
                                  "groups": [{"name": GROUP, "versions": [gv], "preferredVersion": gv}]})  # fmt: skip

    async def group(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._authenticate(request)) is not None:
            return refused
        gv = {"groupVersion": GV, "version": VERSION}
        return web.json_response({"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [gv],
                                  "preferredVersion": gv})  # fmt: skip

    async def resources(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._authenticate(request)) is not None:
            return refused
        flunders = {"name": "flunders", "singularName": "flunder", "namespaced": True, "kind": "Flunder",
                    "verbs": ["get", "list", "watch"], "shortNames": ["fl"]}  # fmt: skip
        gv = f"{GROUP}/{request.match_info['version']}"
        return web.json_response({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                  "resources": [flunders]})  # fmt: skip

    # -- flunders -----------------------------------------------------------------------------------------------

    @staticmethod
    def flunder(ns: str, name: str) -> dict[str, Any]:
        return {"apiVersion": GV, "kind": "Flunder", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                "resourceVersion": "1", "creationTimestamp": CREATED}, "spec": {"reference": name}}  # fmt: skip

    async def list_flunders(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._authenticate(request)) is not None:
            return refused
        ns = request.match_info["ns"]
        items = [self.flunder(ns, n) for n in self.flunders.get(ns, [])]
        if request.query.get("watch") in ("true", "1"):
            return await self._watch(request, ns, items)
        if "as=Table" in request.headers.get("Accept", ""):
            return web.json_response(self._table(items))
        return web.json_response({"apiVersion": GV, "kind": "FlunderList", "metadata": {"resourceVersion": "1"},
                                  "items": items})  # fmt: skip

    async def _watch(self, request: web.Request, ns: str, items: list[dict[str, Any]]) -> web.StreamResponse:
        """The current flunders, then one more once the test releases it: what comes before must get through
        while the response is still open."""
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for obj in items:
            await resp.write(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
        await asyncio.get_running_loop().run_in_executor(None, self.watch_release.wait, 30)
        await resp.write(json.dumps({"type": "ADDED", "object": self.flunder(ns, "late")}).encode() + b"\n")
        await resp.write_eof()
        return resp

    async def create_flunder(self, request: web.Request) -> web.StreamResponse:
        """Keeps the name of the flunder sent, and answers with it as received."""
        if (refused := self._authenticate(request)) is not None:
            return refused
        obj = await request.json()
        self.flunders.setdefault(request.match_info["ns"], []).append(obj["metadata"]["name"])
        return web.json_response(obj, status=201)

    async def get_flunder(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._authenticate(request)) is not None:
            return refused
        ns, name = request.match_info["ns"], request.match_info["name"]
        if name not in self.flunders.get(ns, []):
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                      "message": f'flunders.{GROUP} "{name}" not found', "code": 404}, status=404)  # fmt: skip
        return web.json_response(self.flunder(ns, name))

    @staticmethod
    def _table(items: list[dict[str, Any]]) -> dict[str, Any]:
        columns = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
                   {"name": "Reference", "type": "string", "format": "", "description": "", "priority": 0}]  # fmt: skip
        rows = [{"cells": [o["metadata"]["name"], o["spec"]["reference"]],
                 "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}}
                for o in items]  # fmt: skip
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "1"},
                "columnDefinitions": columns, "rows": rows}  # fmt: skip
