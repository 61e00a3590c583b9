"""Proxying a request to the extension API server of its group version (upstream: kube-aggregator
pkg/apiserver/handler_proxy.go `proxyHandler.ServeHTTP`, k8s.io/apimachinery pkg/util/proxy
UpgradeAwareHandler).

The request has been authenticated by this server. It goes to the resolved endpoint with its path and query,
without the client's credentials and with the user in the front-proxy headers; the answer comes back as the
backend sends it, streamed both ways (a watch flows as its events come). Errors are Go's `http.Error`
plain-text answers, as upstream writes them: 503 `service unavailable` for an APIService that is not Available
or a Service that cannot be routed to, 503 with the connection error when the backend cannot be reached.
Upgrade requests (exec, attach, port-forward into an extension server) are refused.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote_plus, urlencode

import aiohttp
from aiohttp import web

from ..api.meta import Object
from ..apiserver.authn import UserInfo
from ..apiserver.service_resolver import ResolveError, ServiceResolver
from .apiservice import is_available, name_of, service_of, service_port
from .transport import DialError, ProxyTransport, check_loopback, describe, forwarded_headers, response_headers

log = logging.getLogger("pyk8s.aggregator")

DISCOVERY_TIMEOUT = 5.0  # upstream: a proxied discovery request (/apis/<group>/<version>) gets 5 s
REDIRECT_MESSAGE = "the backend attempted to redirect this request, which is not permitted"
_LIVENESS_INTERVAL = 5.0  # how often a quiet stream checks that its client is still there


def http_error(message: str, code: int) -> web.Response:
    """Go's http.Error: the message and a newline, as plain text."""
    return web.Response(
        status=code,
        body=(message + "\n").encode(),
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
    )


def _query(request: web.BaseRequest) -> str:
    # As Go's url.Values.Encode, which upstream re-encodes the query with: keys sorted, values in order.
    items = sorted(request.query.items(), key=lambda kv: kv[0])
    return urlencode(items, quote_via=quote_plus)


def _is_upgrade(request: web.BaseRequest) -> bool:
    connection = request.headers.get("Connection", "").lower()
    return "upgrade" in (t.strip() for t in connection.split(",")) and "Upgrade" in request.headers


def _is_discovery(path: str) -> bool:
    return len(path.strip("/").split("/")) == 3 and path.startswith("/apis/")


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class ProxyHandler:
    def __init__(self, transport: ProxyTransport, resolver: ServiceResolver) -> None:
        self.transport = transport
        self.resolver = resolver

    async def serve(self, request: web.Request, apiservice: Object) -> web.StreamResponse:
        if not is_available(apiservice):
            return http_error("service unavailable", 503)
        user: UserInfo | None = request.get("user")
        if user is None:
            return http_error("missing user", 500)
        service = service_of(apiservice) or {}
        try:
            base = self.resolver.resolve(service.get("namespace", ""), service.get("name", ""), service_port(service))
        except ResolveError as err:
            log.warning("error resolving %s/%s: %s", service.get("namespace"), service.get("name"), err)
            return http_error("service unavailable", 503)
        if _is_upgrade(request):
            return http_error("upgrade requests are not proxied to aggregated API servers by pyk8s", 400)

        path = request.raw_path.split("?", 1)[0]
        query = _query(request)
        url = base + path + (f"?{query}" if query else "")
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        headers = forwarded_headers(request.headers.items(), user, peer[0] if peer else "")
        ctx, server_name = self.transport.tls_for(apiservice)
        timeout = aiohttp.ClientTimeout(total=DISCOVERY_TIMEOUT if _is_discovery(path) else None, sock_connect=30)
        try:
            check_loopback(url)
            upstream = await self.transport.session.request(
                request.method, url, headers=headers, data=request.content if request.body_exists else None,
                ssl=ctx, server_hostname=server_name, allow_redirects=False, timeout=timeout,
            )  # fmt: skip
        except (aiohttp.ClientError, DialError, TimeoutError, OSError) as err:
            log.info("proxying to %s for %s: %s", url, name_of(apiservice), err)
            return http_error(describe(err, url), 503)
        try:
            return await self._relay(request, upstream)
        finally:
            if upstream.content.at_eof():
                upstream.release()  # the connection can serve another request
            else:
                upstream.close()  # a stream the client left: the backend sees it end

    async def _relay(self, request: web.Request, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
        if 300 <= upstream.status < 400:  # upstream rejects forwarding redirects by default
            return http_error(REDIRECT_MESSAGE, 502)
        resp = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in upstream.raw_headers]
        for k, v in response_headers(raw):
            resp.headers.add(k, v)
        if upstream.content_length is not None:
            resp.content_length = upstream.content_length
        await resp.prepare(request)
        content = upstream.content
        while True:
            try:
                chunk = await asyncio.wait_for(content.readany(), _LIVENESS_INTERVAL)
            except TimeoutError:
                if _client_gone(request):
                    return resp  # a watch whose client left: stop reading the backend
                continue
            except aiohttp.ClientError as err:
                log.info("proxied response from %s ended: %s", upstream.url, err)
                return resp
            if not chunk:
                break
            await resp.write(chunk)
        await resp.write_eof()
        return resp
