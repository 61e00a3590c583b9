"""How the aggregator talks to extension API servers: HTTPS that verifies the backend with the APIService's
`caBundle` against the name `<service>.<namespace>.svc` (or not at all with `insecureSkipTLSVerify`), presents
the front-proxy client certificate, and says who the user is in the front-proxy headers (upstream: kube-aggregator
handler_proxy.go `updateAPIService`, client-go transport/round_trippers.go `SetAuthProxyHeaders`).

Connections go to loopback addresses only: pyk8s has no cluster network, and a proxy that followed a Service to
any address would let a user of the API reach anything the API server's host can.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import ipaddress
import ssl
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict

from ..apiserver.authn import UserInfo
from .apiservice import service_of, spec_of
from .options import EXTRA_HEADER_PREFIX, GROUP_HEADER, UID_HEADER, USERNAME_HEADER

# Hop-by-hop headers a proxy does not pass on (Go's httputil.ReverseProxy), and what the API server consumed.
HOP_BY_HOP = frozenset(
    h.lower()
    for h in ("Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te",
              "Trailer", "Transfer-Encoding", "Upgrade")
)  # fmt: skip
_CONSUMED = frozenset({"authorization", "host"})
_IMPERSONATE_PREFIX = "impersonate-"
# The characters an HTTP header name may hold as they are (RFC 7230 tchar), '%' aside: it escapes the others.
_TOKEN = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_CONTEXT_CACHE_SIZE = 64


class DialError(Exception):
    """A connection the aggregator will not open (not to a loopback address)."""


def escape_header_key(key: str) -> str:
    """An extra's key as a header name part: bytes outside the token characters, and '%', %-escaped
    (upstream headerKeyEscape)."""
    out = []
    for b in key.encode():
        out.append(chr(b) if b in _TOKEN else f"%{b:02X}")
    return "".join(out)


def set_auth_proxy_headers(headers: CIMultiDict[str], user: UserInfo) -> None:
    """Replace any identity headers the client sent with the user's (upstream SetAuthProxyHeaders; the UID
    header is only sent with the RemoteRequestHeaderUID gate, off in 1.32)."""
    for name in (USERNAME_HEADER, UID_HEADER, GROUP_HEADER):
        headers.popall(name, None)
    for name in [k for k in headers if k.lower().startswith(EXTRA_HEADER_PREFIX.lower())]:
        headers.popall(name, None)
    headers[USERNAME_HEADER] = user.name
    for group in user.groups:
        headers.add(GROUP_HEADER, group)
    for key, values in user.extra.items():
        for value in values:
            headers.add(EXTRA_HEADER_PREFIX + escape_header_key(key), value)


def forwarded_headers(incoming: Iterable[tuple[str, str]], user: UserInfo, client_ip: str) -> CIMultiDict[str]:
    """The headers of a proxied request: the client's, without hop-by-hop ones, credentials and impersonation
    (the server has acted on them), with the identity headers and X-Forwarded-For."""
    out: CIMultiDict[str] = CIMultiDict()
    connection_named: set[str] = set()
    pairs = list(incoming)
    for k, v in pairs:
        if k.lower() == "connection":
            connection_named.update(t.strip().lower() for t in v.split(","))
    for k, v in pairs:
        low = k.lower()
        if low in HOP_BY_HOP or low in _CONSUMED or low in connection_named or low.startswith(_IMPERSONATE_PREFIX):
            continue
        out.add(k, v)
    set_auth_proxy_headers(out, user)
    if client_ip:
        prior = ", ".join(out.popall("X-Forwarded-For", []))
        out["X-Forwarded-For"] = f"{prior}, {client_ip}" if prior else client_ip
    return out


def response_headers(incoming: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """A backend's response headers as passed on: without hop-by-hop ones and the length (the server frames
    the body itself)."""
    items = incoming.items() if isinstance(incoming, Mapping) else incoming
    return [(k, v) for k, v in items if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"]


def check_loopback(url: str) -> None:
    """DialError unless `url`'s host is a loopback address (or `localhost`)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise DialError(f"dial tcp {parts.netloc}: pyk8s connects to loopback addresses only")


def describe(err: BaseException, url: str) -> str:
    """An error reaching `url`, worded as Go's client words it (users compare the two)."""
    netloc = urlsplit(url).netloc
    if isinstance(err, DialError):
        return str(err)
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        cert_err = err.certificate_error
        code = getattr(cert_err, "verify_code", 0)
        if code in (2, 18, 19, 20, 21):  # no issuer, self-signed, untrusted root: Go's "unknown authority"
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        return f"tls: failed to verify certificate: x509: {getattr(cert_err, 'verify_message', cert_err)}"
    if isinstance(err, aiohttp.ClientConnectorError):
        if err.os_error.errno == errno.ECONNREFUSED:
            return f"dial tcp {netloc}: connect: connection refused"
        return f"dial tcp {netloc}: {err.os_error.strerror or err.os_error}"
    if isinstance(err, aiohttp.ServerDisconnectedError):
        return "EOF"
    if isinstance(err, asyncio.TimeoutError | TimeoutError):
        return "context deadline exceeded"
    return str(err) or type(err).__name__


def ca_bundle_of(obj: Any) -> bytes:
    raw = spec_of(obj).get("caBundle")
    if not isinstance(raw, str) or not raw:
        return b""
    try:
        return base64.b64decode(raw)
    except (binascii.Error, ValueError):
        return b""


class ProxyTransport:
    """The client connections to extension servers, shared by the proxy, the availability checks and the
    discovery downloads; one TLS context per distinct `caBundle` / `insecureSkipTLSVerify`."""

    def __init__(self, client_cert: tuple[Path, Path] | None) -> None:
        self.client_cert = client_cert
        self._contexts: dict[tuple[bytes, bool], ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # Bodies pass through as the backend encoded them; every timeout is the caller's.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=False),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def tls(self, ca_bundle: bytes, insecure: bool) -> ssl.SSLContext:
        key = (ca_bundle, insecure)
        ctx = self._contexts.get(key)
        if ctx is not None:
            return ctx
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_bundle:
            # The bundle replaces the system roots, as Go's RootCAs does.
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            try:
                ctx.load_verify_locations(cadata=ca_bundle.decode("ascii", "replace"))
            except ssl.SSLError:
                pass  # an unreadable bundle trusts nothing: every handshake fails verification
        if self.client_cert is not None:
            ctx.load_cert_chain(*self.client_cert)
        ctx.set_alpn_protocols(["http/1.1"])
        if len(self._contexts) >= _CONTEXT_CACHE_SIZE:
            self._contexts.clear()
        self._contexts[key] = ctx
        return ctx

    def tls_for(self, apiservice: Any) -> tuple[ssl.SSLContext, str]:
        """The TLS context and the name the backend's certificate must have, for an APIService's Service."""
        service = service_of(apiservice) or {}
        insecure = spec_of(apiservice).get("insecureSkipTLSVerify") is True
        name = f"{service.get('name', '')}.{service.get('namespace', '')}.svc"
        return self.tls(ca_bundle_of(apiservice), insecure), name
