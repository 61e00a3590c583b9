"""A webhook for tests: an HTTPS server on 127.0.0.1 with a certificate of its own (a fresh self-signed CA), served
from a thread with its own event loop, so that it answers while a test blocks on kubectl or an API server
process calls it. Admission, conversion, authorization and token webhook tests use it; each gives the handler
that plays its webhook.

`client_config(path)` is the clientConfig an admission or conversion webhook configuration names it by;
`write_kubeconfig(...)` writes the kubeconfig file `--authorization-webhook-config-file` and
`--authentication-token-webhook-config-file` take.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from ..apiserver.certs import self_signed_serving_pair

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DEFAULT_NAMES = ("127.0.0.1", "hooks.webhooks.svc")


def tls_server_context(names: Sequence[str] = DEFAULT_NAMES) -> tuple[ssl.SSLContext, bytes]:
    """A TLS server context for a fresh self-signed certificate valid for `names`, and that certificate (PEM),
    which is the CA a client must trust."""
    cert, key = self_signed_serving_pair(list(names))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as d:
        Path(d, "tls.crt").write_bytes(cert)
        Path(d, "tls.key").write_bytes(key)
        ctx.load_cert_chain(Path(d, "tls.crt"), Path(d, "tls.key"))
    return ctx, cert


class WebhookServer:
    """`handler` answers every POST (any path), from a thread of the server's own; `start()` returns once it
    listens, `stop()` ends it (handlers still asleep are cancelled)."""

    def __init__(self, handler: Handler, names: Sequence[str] = DEFAULT_NAMES) -> None:
        self.handler = handler
        self.ctx, self.ca = tls_server_context(names)
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="webhook-server")
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        """The CA as a clientConfig's caBundle (base64 of the PEM)."""
        return base64.b64encode(self.ca).decode()

    def url(self, path: str = "/", port: int | None = None) -> str:
        return f"https://127.0.0.1:{port or self.port}{path}"

    def client_config(self, path: str, port: int | None = None) -> dict[str, Any]:
        """A clientConfig naming this server by URL (a closed `port` to play a webhook that is down)."""
        return {"url": self.url(path, port), "caBundle": self.ca_bundle}

    def write_kubeconfig(self, dest: Path, path: str = "/", *, port: int | None = None, token: str | None = None,
                         client_cert: Path | None = None, client_key: Path | None = None) -> Path:  # fmt: skip
        """A webhook kubeconfig file at `dest`: the cluster is this server at `path` (verified against its CA),
        the user the credentials the API server is to present."""
        user: dict[str, Any] = {}
        if token:
            user["token"] = token
        if client_cert and client_key:
            user["client-certificate"], user["client-key"] = str(client_cert), str(client_key)
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "webhook", "cluster": {"server": self.url(path, port),
                                                         "certificate-authority-data": self.ca_bundle}}],
            "users": [{"name": "apiserver", "user": user}],
            "contexts": [{"name": "webhook", "context": {"cluster": "webhook", "user": "apiserver"}}],
            "current-context": "webhook",
        }  # fmt: skip
        dest.write_text(yaml.safe_dump(doc))
        return dest

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handler)
        runner = self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self.ctx)
        self.loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> WebhookServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the webhook server did not start")
        return self

    def stop(self) -> None:
        async def shut_down() -> None:
            if self._runner is not None:
                await self._runner.cleanup()
            # A slow handler may still be asleep: cancel it, and let it finish, rather than drop it.
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.loop.stop()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shut_down(), self.loop)
            self._thread.join(5)
