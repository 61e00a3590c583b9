"""The HTTPS client a CRD's conversion webhook is called with: where the ConversionReview is POSTed (a URL, or a
Service resolved by the caller), TLS verified against the CRD's caBundle, and every way the call can fail put in
the words client-go and Go's net/http use, since those reach users verbatim (upstream: k8s.io/apiserver
pkg/util/webhook client.go and authentication.go, client-go's rest.Request/Result for the response handling).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime as dt
import errno
import ipaddress
import posixpath
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from cryptography import x509

from ..api.errors import go_quote
from .conversion_validation import ca_bundle_bytes, ca_bundle_error

# The webhook client's timeout (upstream: setGlobalDefaults in pkg/util/webhook/authentication.go).
DEFAULT_TIMEOUT = 30.0
USER_AGENT = "kube-apiserver-admission"
# client-go keeps at most this much of a non-Status error body for its message.
_MAX_ERROR_BODY = 2048
# The name Go gives the webhook client's runtime.Scheme: the call site of runtime.NewScheme in client.go.
_SCHEME_NAME = "k8s.io/apiserver/pkg/util/webhook/client.go:71"
# The anonymous struct apimachinery reads apiVersion and kind into, as Go's reflect prints its type.
_FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)

ServiceResolver = Callable[[str, str, int], str]  # (namespace, name, port) -> https://host:port
"""(namespace, name, port) -> `https://host:port` of an endpoint serving that Service port."""


class WebhookCallError(Exception):
    """The webhook could not be called or answered something that does not decode as a ConversionReview; the
    message is the error text upstream wraps into `conversion webhook for ... failed: ...`."""


class ConverterSetupError(ValueError):
    """A converter cannot be built from the CRD (a CA bundle that does not load, no webhook destination, an
    unknown strategy); upstream fails to serve the CRD's resources then."""


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String() prints it (`30s`, `200ms`, `1m30s`)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return _trim(ns / size) + unit
    h, rest = divmod(ns, 3_600_000_000_000)
    m, rest = divmod(rest, 60_000_000_000)
    out = f"{h}h" if h else ""
    if h or m:
        out += f"{m}m"
    return out + _trim(rest / 1e9) + "s"


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


def go_type(value: Any) -> str:
    """What Go's %T prints for a value decoded from JSON into interface{} (unstructured's number handling)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def json_kind(value: Any) -> str:
    """The JSON type name Go's json.UnmarshalTypeError reports."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def go_json_syntax_error(exc: ValueError, text: bytes) -> str:
    """Go's encoding/json wording for a body that is not JSON (close to it: the context words are approximate)."""
    msg = str(exc)
    pos = getattr(exc, "pos", None)
    if pos is None:  # orjson: "... : line 1 column 5 (char 4)"
        m = re.search(r"\(char (\d+)\)", msg)
        pos = int(m.group(1)) if m else len(text)
    stripped = text.rstrip()
    if pos >= len(stripped):
        return "unexpected end of JSON input"
    ch = text[pos : pos + 1].decode("latin-1")
    quoted = "'\\''" if ch == "'" else ("'\\\"'" if ch == '"' else f"'{ch}'")
    if "Extra data" in msg or "trailing" in msg:
        where = "after top-level value"
    elif "':'" in msg or "colon" in msg:
        where = "after object key"
    elif "property name" in msg or "key must be a string" in msg:
        where = "looking for beginning of object key string"
    elif "','" in msg or "comma" in msg:
        where = "after object key:value pair"
    else:
        where = "looking for beginning of value"
    return f"invalid character {quoted} {where}"


# -- TLS ---------------------------------------------------------------------------------------------------------

_CERT_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----\s*\n(.*?)-----END CERTIFICATE-----", re.S)


def ssl_context_for(ca_bundle: object) -> ssl.SSLContext:
    """The client TLS context for a caBundle (base64 PEM as in the CRD): only its certificates are trusted, as
    client-go's CAData; with none, the system trust store. ConverterSetupError with client-go's text when the
    bundle does not load."""
    data = ca_bundle_bytes(ca_bundle)
    if not data:
        return ssl.create_default_context()
    problem = ca_bundle_error(data)
    if problem:
        raise ConverterSetupError(problem)
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
        raise ConverterSetupError(f"unable to load root certificates: {exc}") from None
    return ctx


async def _peer_certificate(host: str, port: int, server_name: str) -> x509.Certificate | None:
    """The certificate a server presents, read over an unverified handshake to explain a verification failure
    the way Go does (which keeps the certificate it rejected)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(5):
            _, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=server_name)
    except (OSError, TimeoutError, ssl.SSLError):
        return None
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    try:
        return x509.load_der_x509_certificate(der) if der else None
    except ValueError:
        return None


def _hostname_error(cert: x509.Certificate, host: str) -> str:
    """Go's x509.HostnameError text."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = None
    if sans is None:
        cns = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        if cns and str(cns[0].value).lower() == host.lower():
            return "x509: certificate relies on legacy Common Name field, use SANs instead"
    try:
        ipaddress.ip_address(host)
        ips = [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] if sans else []
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        valid = ", ".join(ips)
    except ValueError:
        valid = ", ".join(sans.get_values_for_type(x509.DNSName)) if sans else ""
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def _rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _verification_error(err: ssl.SSLCertVerificationError, host: str, port: int, server_name: str) -> str:
    code = getattr(err, "verify_code", 0)
    detail = "x509: certificate signed by unknown authority"
    if code in (9, 10, 62, 64):  # not yet valid, expired, host name or IP mismatch
        cert = await _peer_certificate(host, port, server_name)
        if cert is not None and code in (62, 64):
            detail = _hostname_error(cert, server_name)
        elif cert is not None:
            now = dt.datetime.now(dt.UTC)
            if now > cert.not_valid_after_utc:
                when = f"current time {_rfc3339(now)} is after {_rfc3339(cert.not_valid_after_utc)}"
            else:
                when = f"current time {_rfc3339(now)} is before {_rfc3339(cert.not_valid_before_utc)}"
            detail = f"x509: certificate has expired or is not yet valid: {when}"
        else:
            detail = f"x509: {getattr(err, 'verify_message', err)}"
    return f"tls: failed to verify certificate: {detail}"


# -- the client --------------------------------------------------------------------------------------------------


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
    """POSTs ConversionReviews to one webhook (a CRD's spec.conversion.webhook.clientConfig) over one keep-alive
    session per event loop."""

    def __init__(
        self,
        client_config: dict[str, Any],
        webhook_name: str,
        *,
        service_resolver: ServiceResolver | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.timeout = timeout
        self._resolver = service_resolver
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
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
            self._dial = (self.server_name, u.port or 443)
        else:
            raise ConverterSetupError(
                f"failed calling webhook {go_quote(webhook_name)}: webhook configuration must have either service or URL"
            )
        self.ssl_context = ssl_context_for(client_config.get("caBundle"))

    async def _target(self) -> _Target:
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*", "User-Agent": USER_AGENT}
        if self._service is None:
            return _Target(self.url, self.url, self._dial, None, headers)
        ns, name, port = self._service
        if self._resolver is None:
            raise WebhookCallError(f"Post {go_quote(self.url)}: no service resolver for {self.server_name}")
        try:
            base = self._resolver(ns, name, port)
        except Exception as exc:  # a resolver failure is a dial failure to Go's client
            raise WebhookCallError(f"Post {go_quote(self.url)}: {exc}") from None
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

    async def call(self, review: dict[str, Any], expected_api_version: str) -> dict[str, Any]:
        """POST `review`, and return the decoded answer; WebhookCallError carries client-go's error text."""
        t = await self._target()
        body = orjson.dumps(review)
        got_headers = False
        try:
            async with self._client().post(
                t.connect_url, data=body, headers=t.headers, server_hostname=t.server_name
            ) as resp:
                got_headers = True
                data = await resp.read()
                status, ctype = resp.status, resp.headers.get("Content-Type", "")
        except TimeoutError:
            if got_headers:
                raise WebhookCallError(
                    "unexpected error when reading response body. Please retry. Original error: "
                    "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
                ) from None
            why = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
            raise WebhookCallError(f"Post {go_quote(t.url)}: {why}") from None
        except aiohttp.ClientPayloadError:
            raise WebhookCallError(
                "unexpected error when reading response body. Please retry. Original error: unexpected EOF"
            ) from None
        except aiohttp.ClientError as exc:
            why = await self._transport_error(exc, t)
            raise WebhookCallError(f"Post {go_quote(t.url)}: {why}") from None
        return decode_review(status, ctype, data, expected_api_version)

    async def _transport_error(self, exc: aiohttp.ClientError, t: _Target) -> str:
        host, port = t.dial
        addr = _host_port(host, port)
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            err = exc.certificate_error
            if isinstance(err, ssl.SSLCertVerificationError):
                return await _verification_error(err, host, port, t.server_name or host)
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
        return str(exc)


# -- the answer, as client-go's Result.Into reads it ---------------------------------------------------------


def _generic_response_message(code: int, server_message: str) -> str:
    """apimachinery's NewGenericServerResponse message for a POST with no resource."""
    fixed = {
        409: "the server reported a conflict",
        404: "the server could not find the requested resource",
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        403: server_message,
        415: server_message,
        405: "the server does not allow this method on the requested resource",
        422: "the server rejected our request due to an error in our request",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still be processing the request",
        429: "the server has received too many requests and has asked us to try again later",
    }
    if code == 406:
        if not server_message or server_message == "unknown":
            return "the server was unable to respond with a content type that the client supports"
        return server_message
    if code in fixed:
        return fixed[code]
    if code >= 500:
        return f"an error on the server ({go_quote(server_message)}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


def _error_answer(status: int, content_type: str, body: bytes) -> WebhookCallError:
    # A Status object with status Failure is preferred to the generic text.
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
        return WebhookCallError(doc.get("message") or "")
    media = content_type.split(";", 1)[0].strip().lower()
    message = body[:_MAX_ERROR_BODY].decode("utf-8", "replace").strip() if media.startswith("text/") else "unknown"
    return WebhookCallError(_generic_response_message(status, message))


def _parse_api_version(api_version: str) -> tuple[str, str] | None:
    """(group, version) as schema.ParseGroupVersion reads it, or None when it does not parse."""
    if api_version in ("", "/"):
        return "", ""
    n = api_version.count("/")
    if n == 0:
        return "", api_version
    if n == 1:
        g, _, v = api_version.partition("/")
        return g, v
    return None


# Types the webhook client's scheme knows by kind whatever their version (metav1's unversioned types).
_UNVERSIONED = {"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"}
_APIEXTENSIONS_KINDS = {"ConversionReview", "CustomResourceDefinition", "CustomResourceDefinitionList"}


def _registered_type(group: str, version: str, kind: str) -> str | None:
    """The Go type (as reflect prints it) the webhook client's scheme decodes this kind into, if any."""
    if kind in _UNVERSIONED:
        return f"v1.{kind}"
    if group == "apiextensions.k8s.io" and version in ("v1", "v1beta1") and kind in _APIEXTENSIONS_KINDS:
        return f"{version}.{kind}"
    return None


def decode_review(status: int, content_type: str, body: bytes, expected_api_version: str) -> dict[str, Any]:
    """The webhook's answer decoded into a ConversionReview of `expected_api_version`, failing where client-go's
    decoder would; the result keeps the answer's own apiVersion and kind (possibly empty) for the caller's check."""
    if not 200 <= status <= 206:
        raise _error_answer(status, content_type, body)
    if not body:
        ctype = content_type or "application/json"
        raise WebhookCallError(f"0-length response with status code: {status} and content type: {ctype}")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WebhookCallError(
            f"couldn't get version/kind; json parse error: {go_json_syntax_error(exc, body)}"
        ) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        why = f"json: cannot unmarshal {json_kind(doc)} into Go value of type {_FIND_KIND_TYPE}"
        raise WebhookCallError(f"couldn't get version/kind; json parse error: {why}")
    for key in ("apiVersion", "kind"):
        v = doc.get(key)
        if v is not None and not isinstance(v, str):
            why = f"json: cannot unmarshal {json_kind(v)} into Go struct field .{key} of type string"
            raise WebhookCallError(f"couldn't get version/kind; json parse error: {why}")
    api_version, kind = doc.get("apiVersion") or "", doc.get("kind") or ""
    gv = _parse_api_version(api_version)
    if gv is None:
        raise WebhookCallError(f"unexpected GroupVersion string: {api_version}")
    # Missing parts are taken from the type decoded into (the serializer's gvkWithDefaults).
    want_group, _, want_version = expected_api_version.partition("/")
    group, version = gv
    kind = kind or "ConversionReview"
    if not version and not group:
        group, version = want_group, want_version
    elif not version and group == want_group:
        version = want_version
    if (group, version, kind) != (want_group, want_version, "ConversionReview"):
        registered = _registered_type(group, version, kind)
        if registered is None:
            gv_text = f"{group}/{version}" if group else version
            raise WebhookCallError(
                f"no kind {go_quote(kind)} is registered for version {go_quote(gv_text)} in scheme {go_quote(_SCHEME_NAME)}"
            )
        raise WebhookCallError(f"converting ({registered}) to ({want_version}.ConversionReview): unknown conversion")
    problem = _review_type_error(doc, want_version)
    if problem:
        raise WebhookCallError(problem)
    return doc


def _review_type_error(doc: dict[str, Any], version: str) -> str | None:
    """The first json.UnmarshalTypeError decoding `doc` into the ConversionReview struct would report (for the
    fields the converter reads), in the document's key order as Go's decoder meets them."""

    def bad(value: Any, struct: str, path: str, go: str) -> str:
        return f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{path} of type {go}"

    for key, value in doc.items():
        if value is None:
            continue
        if key in ("request", "response") and not isinstance(value, dict):
            what = "ConversionRequest" if key == "request" else "ConversionResponse"
            return bad(value, "ConversionReview", key, f"{version}.{what}")
        if key != "response":
            continue
        for rkey, rvalue in value.items():
            if rvalue is None:
                continue
            path = f"response.{rkey}"
            if rkey == "uid" and not isinstance(rvalue, str):
                return bad(rvalue, "ConversionResponse", path, "types.UID")
            if rkey == "convertedObjects" and not isinstance(rvalue, list):
                return bad(rvalue, "ConversionResponse", path, "[]runtime.RawExtension")
            if rkey == "result":
                if not isinstance(rvalue, dict):
                    return bad(rvalue, "ConversionResponse", path, "v1.Status")
                problem = _status_type_error(rvalue, bad)
                if problem:
                    return problem
    return None


def _status_type_error(result: dict[str, Any], bad: Callable[[Any, str, str, str], str]) -> str | None:
    for key, value in result.items():
        if value is None:
            continue
        path = f"response.result.{key}"
        if key in ("status", "message") and not isinstance(value, str):
            return bad(value, "Status", path, "string")
        if key == "reason" and not isinstance(value, str):
            return bad(value, "Status", path, "v1.StatusReason")
        if key == "code":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return bad(value, "Status", path, "int32")
            if isinstance(value, float) or not -(2**31) <= value < 2**31:
                shown = orjson.dumps(value).decode()
                return f"json: cannot unmarshal number {shown} into Go struct field Status.{path} of type int32"
    return None
