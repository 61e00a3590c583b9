"""The HTTPS client the API server calls its webhooks with (upstream: k8s.io/apiserver pkg/util/webhook: client.go,
authentication.go, webhook.go; and client-go's rest.Request/Result for how an answer is read).

A webhook is reached one of two ways:
- from a clientConfig (`url`, or a `service` resolved to one of its endpoints, and a `caBundle`), as admission
  and CRD conversion webhooks are configured: `WebhookClient(client_config, name, ...)`;
- from a kubeconfig file, as the authorization, token authentication and audit webhooks are: the cluster's
  `server` is the URL the reviews are POSTed to (its path kept), `certificate-authority(-data)` what the
  server is verified against, and the user's client certificate or token how the API server identifies
  itself: `WebhookClient.from_kubeconfig(path)`.

Every way a call can fail is put in the words client-go and Go's net/http use, since those reach users verbatim
(webhook_errors.py holds those words).
`with_exponential_backoff` retries the failures upstream retries (the authorization and token webhooks use it).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import logging
import platform
import posixpath
import random
import re
import ssl
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import orjson
from cryptography import x509

from ..api.errors import go_quote
from ..api.meta import parse_group_version
from ..apiextensions.conversion_validation import ca_bundle_bytes, ca_bundle_error
from .webhook_errors import (
    GENERIC_REASONS,
    generic_response_message,
    go_duration,
    go_json_syntax_error,
    go_type,
    json_kind,
    verification_error,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "Answer",
    "Backoff",
    "CallError",
    "ServiceResolver",
    "SetupError",
    "WebhookClient",
    "decode_object",
    "error_answer",
    "go_duration",
    "go_json_syntax_error",
    "go_type",
    "json_kind",
    "should_retry",
    "ssl_context_for",
    "with_exponential_backoff",
]

log = logging.getLogger("pyk8s.apiserver.webhook")

# The webhook client's timeout (upstream: defaultRequestTimeout in webhook.go, setGlobalDefaults in
# authentication.go).
DEFAULT_TIMEOUT = 30.0
# What admission and conversion webhooks see (the API server's loopback client name for its webhook clients).
ADMISSION_USER_AGENT = "kube-apiserver-admission"
# client-go keeps at most this much of a non-Status error body for its message.
MAX_ERROR_BODY = 2048
# The name Go gives the webhook client's runtime.Scheme: the call site of runtime.NewScheme in client.go.
SCHEME_NAME = "k8s.io/apiserver/pkg/util/webhook/client.go:71"
# The anonymous struct apimachinery reads apiVersion and kind into, as Go's reflect prints its type.
FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)
# Types every scheme knows by kind whatever their version (metav1's unversioned types).
UNVERSIONED_KINDS = frozenset({"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"})

ServiceResolver = Callable[[str, str, int], str]
"""(namespace, name, port) -> `https://host:port` of an endpoint serving that Service port."""


class CallError(Exception):
    """The webhook could not be called, or its answer does not decode; `str()` is client-go's error text.

    `code` and `reason` are those of the API error client-go makes of an error answer (0 and "" for a
    transport failure); `retry_after` is the answer's Retry-After, in seconds; `connection_reset` marks a
    connection the peer reset. They decide whether a call is worth retrying (`should_retry`)."""

    def __init__(
        self, message: str, *, code: int = 0, reason: str = "", retry_after: int | None = None,
        connection_reset: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.retry_after = retry_after
        self.connection_reset = connection_reset


class SetupError(ValueError):
    """No client can be built from the configuration (a CA bundle that does not load, no destination, a
    kubeconfig that cannot be used); the message is upstream's."""


# -- API versions ----------------------------------------------------------------------------------------------


# -- TLS ---------------------------------------------------------------------------------------------------------

_CERT_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----\s*\n(.*?)-----END CERTIFICATE-----", re.S)


def ssl_context_for(ca_bundle: object) -> ssl.SSLContext:
    """The client TLS context for a caBundle (base64 PEM, as in a webhook's clientConfig): only its certificates
    are trusted, as client-go's CAData; with none, the system trust store. SetupError with client-go's text when
    the bundle does not load."""
    data = ca_bundle_bytes(ca_bundle)
    if not data:
        return ssl.create_default_context()
    problem = ca_bundle_error(data)
    if problem:
        raise SetupError(problem)
    ders: list[bytes] = []
    for m in _CERT_BLOCK.finditer(data):  # Go keeps the good certificates of a bundle and skips the rest
        try:
            der = base64.b64decode(b"".join(m.group(1).split()), validate=True)
            x509.load_der_x509_certificate(der)
        except (binascii.Error, ValueError):
            continue
        ders.append(der)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name, trusts nothing yet
    try:
        for der in ders:
            ctx.load_verify_locations(cadata=der)
    except ssl.SSLError as exc:
        raise SetupError(f"unable to load root certificates: {exc}") from None
    return ctx


# -- the client --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the webhook answered, before it is decoded."""

    status: int
    content_type: str
    body: bytes
    retry_after: int | None = None


@dataclass(frozen=True)
class _Target:
    url: str  # the URL upstream's errors show
    connect_url: str  # where the request goes (a Service's resolved endpoint)
    dial: tuple[str, int]
    server_name: str | None  # TLS SNI and verified name when it differs from connect_url's host
    headers: dict[str, str]


def _clean_path(p: str) -> str:
    """path.Join("/", p) as Go's rest client builds a request path (cleaned, no trailing slash)."""
    return posixpath.normpath("/" + p.lstrip("/"))


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class WebhookClient:
    """POSTs JSON reviews to one webhook over one keep-alive session per event loop.

    `client_config` is a webhook's clientConfig (`url` or `service`, `caBundle`). `context_deadline` says whose
    deadline the timeout is: the HTTP client's own (conversion, kubeconfig clients: Go reports
    `Client.Timeout exceeded`) or the request context's (admission's timeoutSeconds: `context deadline
    exceeded`)."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        webhook_name: str,
        *,
        service_resolver: ServiceResolver | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        context_deadline: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        tls_server_name: str | None = None,
        headers: Mapping[str, str] | None = None,
        user_agent: str = ADMISSION_USER_AGENT,
    ) -> None:
        self.timeout = timeout
        self.context_deadline = context_deadline
        self._resolver = service_resolver
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json, */*",
                         "User-Agent": user_agent, **(headers or {})}  # fmt: skip
        self._tls_server_name = tls_server_name
        query = "?timeout=" + go_duration(timeout)
        service = client_config.get("service")
        url = client_config.get("url")
        self._service: tuple[str, str, int] | None = None
        if isinstance(service, dict):
            ns, name = str(service.get("namespace") or ""), str(service.get("name") or "")
            port = int(service.get("port") or 443)
            self._service = (ns, name, port)
            self.server_name = f"{name}.{ns}.svc"
            self._path = _clean_path(str(service.get("path") or "")) + query
            self.url = f"https://{_host_port(self.server_name, port)}{self._path}"
        elif isinstance(url, str) and url:
            u = urlsplit(url)
            self.server_name = u.hostname or ""
            self._path = _clean_path(u.path) + query
            host = u.netloc.rpartition("@")[2]
            self.url = f"{u.scheme}://{host}{self._path}"
            self._dial = (self.server_name, u.port or (443 if u.scheme == "https" else 80))
        else:
            raise SetupError(
                f"failed calling webhook {go_quote(webhook_name)}: webhook configuration must have either service or URL"
            )
        self.ssl_context = ssl_context if ssl_context is not None else ssl_context_for(client_config.get("caBundle"))

    @classmethod
    def from_kubeconfig(cls, path: str, *, timeout: float = DEFAULT_TIMEOUT) -> WebhookClient:
        """The client a webhook kubeconfig file describes (upstream: LoadKubeconfig): the current context's
        cluster server is the URL; its CA, the user's client certificate, token or basic credentials are used.
        SetupError when the file cannot be used."""
        from ..client.kubeconfig import ConfigError, load_kubeconfig

        try:
            cfg = load_kubeconfig(path)
            ctx = cfg.ssl_context()
            headers = cfg.auth_headers()
        except ConfigError as err:
            raise SetupError(f"invalid configuration: {err}") from None
        return cls({"url": cfg.server}, path, timeout=timeout, ssl_context=ctx, tls_server_name=cfg.tls_server_name,
                   headers=headers, user_agent=kube_apiserver_user_agent())  # fmt: skip

    async def _target(self) -> _Target:
        headers = dict(self._headers)
        if self._service is None:
            return _Target(self.url, self.url, self._dial, self._tls_server_name, headers)
        ns, name, port = self._service
        if self._resolver is None:
            raise CallError(f"Post {go_quote(self.url)}: no service resolver for {self.server_name}")
        try:
            base = self._resolver(ns, name, port)
        except Exception as exc:  # a resolver failure is a dial failure to Go's client
            raise CallError(f"Post {go_quote(self.url)}: {exc}") from None
        b = urlsplit(base)
        headers["Host"] = _host_port(self.server_name, port)
        return _Target(
            self.url, base.rstrip("/") + self._path, (b.hostname or "", b.port or 443), self.server_name, headers
        )

    def _client(self) -> aiohttp.ClientSession:
        # A session cannot outlive or cross its event loop.
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self.ssl_context),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                skip_auto_headers=("Accept-Encoding",),
            )
            self._loop = loop
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()

    async def post_json(self, review: Any) -> Answer:
        """POST `review` as JSON; see `post`."""
        return await self.post(orjson.dumps(review))

    async def post(self, body: bytes) -> Answer:
        """POST `body` and read the whole answer, whatever its status; CallError (client-go's text) when no
        answer could be had."""
        t = await self._target()
        got_headers = False
        try:
            async with self._client().post(
                t.connect_url, data=body, headers=t.headers, server_hostname=t.server_name
            ) as resp:
                got_headers = True
                data = await resp.read()
                return Answer(resp.status, resp.headers.get("Content-Type", ""), data,
                              _retry_after(resp.headers.get("Retry-After")))  # fmt: skip
        except TimeoutError:
            raise self._deadline_error(t, got_headers) from None
        except aiohttp.ClientPayloadError:
            raise CallError(
                "unexpected error when reading response body. Please retry. Original error: unexpected EOF"
            ) from None
        except aiohttp.ClientError as exc:
            why = await self._transport_error(exc, t)
            reset = isinstance(exc, aiohttp.ClientOSError) and exc.errno == errno.ECONNRESET
            raise CallError(f"Post {go_quote(t.url)}: {why}", connection_reset=reset) from None

    def _deadline_error(self, t: _Target, got_headers: bool) -> CallError:
        if self.context_deadline:  # the request context's deadline, not the HTTP client's own
            if got_headers:
                return CallError(
                    "unexpected error when reading response body. Please retry. Original error: context deadline exceeded"
                )
            return CallError(f"Post {go_quote(t.url)}: context deadline exceeded")
        if got_headers:
            return CallError(
                "unexpected error when reading response body. Please retry. Original error: "
                "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
            )
        why = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        return CallError(f"Post {go_quote(t.url)}: {why}")

    async def _transport_error(self, exc: aiohttp.ClientError, t: _Target) -> str:
        host, port = t.dial
        addr = _host_port(host, port)
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            err = exc.certificate_error
            if isinstance(err, ssl.SSLCertVerificationError):
                return await verification_error(err, host, port, t.server_name or host)
            return f"tls: {err}"
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return f"dial tcp: lookup {host}: no such host"
        if isinstance(exc, aiohttp.ClientSSLError):
            return f"tls: {exc}"
        if isinstance(exc, aiohttp.ClientConnectorError):
            os_err = exc.os_error
            if os_err.errno == errno.ECONNREFUSED:
                return f"dial tcp {addr}: connect: connection refused"
            if os_err.errno:
                return f"dial tcp {addr}: connect: {(os_err.strerror or str(os_err)).lower()}"
            return f"dial tcp {addr}: {os_err}"
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return "EOF"
        if isinstance(exc, aiohttp.ClientOSError) and exc.errno == errno.ECONNRESET:
            return f"read tcp {addr}: read: connection reset by peer"
        return str(exc)


def kube_apiserver_user_agent() -> str:
    """What a kubeconfig-built client sends: client-go's DefaultKubernetesUserAgent for kube-apiserver
    (`<command>/<version> (<os>/<arch>) kubernetes/<commit>`; pyk8s has no commit to name: `unknown`)."""
    from .health import version_info

    version = version_info()["gitVersion"].split("-", 1)[0]
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"kube-apiserver/{version} ({sys.platform}/{arch}) kubernetes/unknown"


def _retry_after(value: str | None) -> int | None:
    if not value:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


# -- the answer, as client-go's Result.Into reads it ---------------------------------------------------------


def error_answer(status: int, content_type: str, body: bytes, retry_after: int | None = None) -> CallError:
    """The error client-go makes of an answer with a status outside 200-206: the Status it carries when it is
    one with status Failure, else the generic text for the code."""
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if (
        isinstance(doc, dict)
        and doc.get("kind") == "Status"
        and doc.get("status") == "Failure"
        and isinstance(doc.get("message", ""), str)
    ):
        details = doc.get("details") if isinstance(doc.get("details"), dict) else {}
        after = details.get("retryAfterSeconds")
        code = doc.get("code")
        return CallError(
            doc.get("message") or "",
            code=code if isinstance(code, int) and not isinstance(code, bool) and code else status,
            reason=str(doc.get("reason") or ""),
            retry_after=after if isinstance(after, int) and after > 0 else None,
        )
    media = content_type.split(";", 1)[0].strip().lower()
    message = body[:MAX_ERROR_BODY].decode("utf-8", "replace").strip() if media.startswith("text/") else "unknown"
    reason = GENERIC_REASONS.get(status, "InternalError" if status >= 500 else "Unknown")
    return CallError(generic_response_message(status, message), code=status, reason=reason, retry_after=retry_after)


def read_document(answer: Answer) -> tuple[dict[str, Any], tuple[str, str], str]:
    """The answer's JSON object, its apiVersion as (group, version) and its kind ("" when missing), checked as
    client-go reads an answer before decoding it: an error answer, an empty body, a body that is not a JSON
    object, or a type meta of the wrong types is a CallError with client-go's text."""
    if not 200 <= answer.status <= 206:
        raise error_answer(answer.status, answer.content_type, answer.body, answer.retry_after)
    body = answer.body
    if not body:
        ctype = answer.content_type or "application/json"
        raise CallError(f"0-length response with status code: {answer.status} and content type: {ctype}")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise CallError(f"couldn't get version/kind; json parse error: {go_json_syntax_error(exc, body)}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        why = f"json: cannot unmarshal {json_kind(doc)} into Go value of type {FIND_KIND_TYPE}"
        raise CallError(f"couldn't get version/kind; json parse error: {why}")
    for key in ("apiVersion", "kind"):
        v = doc.get(key)
        if v is not None and not isinstance(v, str):
            why = f"json: cannot unmarshal {json_kind(v)} into Go struct field .{key} of type string"
            raise CallError(f"couldn't get version/kind; json parse error: {why}")
    try:
        gv = parse_group_version(doc.get("apiVersion") or "")
    except ValueError as err:
        raise CallError(str(err)) from None
    return doc, gv, doc.get("kind") or ""


def decode_object(answer: Answer, api_version: str, kind: str, known_versions: tuple[str, ...] = ()) -> dict[str, Any]:
    """The answer decoded as client-go's Into does into an object of `api_version` and `kind`, for the
    authorization and token webhooks: what `read_document` refuses, or an object of another kind or version, is
    a CallError with client-go's text. A missing apiVersion or kind is taken to be the expected one (the
    serializer's defaults). `known_versions` are the other versions of the kind the client's scheme knows (they
    fail as an unknown conversion)."""
    doc, gv, got_kind = read_document(answer)
    want_group, _, want_version = api_version.partition("/")
    group, version = gv
    got_kind = got_kind or kind
    if not version and not group:
        group, version = want_group, want_version
    elif not version and group == want_group:
        version = want_version
    if (group, version, got_kind) == (want_group, want_version, kind):
        return doc
    if got_kind in UNVERSIONED_KINDS:
        raise CallError(f"converting (v1.{got_kind}) to ({want_version}.{kind}): unknown conversion")
    if group == want_group and version in known_versions and got_kind == kind:
        raise CallError(f"converting ({version}.{kind}) to ({want_version}.{kind}): unknown conversion")
    gv_text = f"{group}/{version}" if group else version
    raise CallError(f"no kind {go_quote(got_kind)} is registered for version {go_quote(gv_text)} in scheme "
                    f"{go_quote(SCHEME_NAME)}")  # fmt: skip


# -- retries -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backoff:
    """wait.Backoff: `steps` attempts at most, `duration` before the second, each wait `factor` times the last,
    plus up to `jitter` of it at random."""

    duration: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5


# upstream: DefaultRetryBackoffWithInitialDelay(500ms), the authorization and token webhooks' default
DEFAULT_RETRY_BACKOFF = Backoff()


def should_retry(err: Exception) -> bool:
    """Whether a failed call is worth another try (upstream DefaultShouldRetry): a connection reset, an internal
    error (500), a timeout (504), too many requests (429), or an answer that asked to be retried later."""
    if not isinstance(err, CallError):
        return False
    if err.connection_reset or err.reason in ("InternalError", "Timeout", "TooManyRequests", "ServerTimeout"):
        return True
    return bool(err.retry_after)


T = TypeVar("T")


async def with_exponential_backoff(
    backoff: Backoff, call: Callable[[], Awaitable[T]], retry: Callable[[Exception], bool] = should_retry
) -> T:
    """`call()` until it succeeds, fails for good (`retry` says no), or `backoff.steps` attempts are spent; the
    last error is raised (upstream: WithExponentialBackoff)."""
    delay = backoff.duration
    for attempt in range(max(1, backoff.steps)):
        try:
            return await call()
        except Exception as err:
            if not retry(err) or attempt == max(1, backoff.steps) - 1:
                raise
            log.debug("webhook call failed, retrying in %.2fs: %s", delay, err)
        await asyncio.sleep(delay * (1 + random.random() * backoff.jitter) if backoff.jitter > 0 else delay)
        delay *= backoff.factor
    raise AssertionError("unreachable")
