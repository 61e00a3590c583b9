"""How client-go and Go's standard library word the failures of a webhook call, since those words reach users
verbatim: Go durations and types, encoding/json's syntax and type errors, crypto/x509's verification errors,
and apimachinery's messages for an error answer that is not a Status (upstream: apimachinery pkg/api/errors
NewGenericServerResponse, client-go rest.Result). Used by pyk8s.apiserver.webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import re
import ssl
from typing import Any

from cryptography import x509

from ..api.errors import go_quote


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


def hostname_error(cert: x509.Certificate, host: str) -> str:
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


def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def verification_error(err: ssl.SSLCertVerificationError, host: str, port: int, server_name: str) -> str:
    code = getattr(err, "verify_code", 0)
    detail = "x509: certificate signed by unknown authority"
    if code in (9, 10, 62, 64):  # not yet valid, expired, host name or IP mismatch
        cert = await _peer_certificate(host, port, server_name)
        if cert is not None and code in (62, 64):
            detail = hostname_error(cert, server_name)
        elif cert is not None:
            now = dt.datetime.now(dt.UTC)
            if now > cert.not_valid_after_utc:
                when = f"current time {rfc3339(now)} is after {rfc3339(cert.not_valid_after_utc)}"
            else:
                when = f"current time {rfc3339(now)} is before {rfc3339(cert.not_valid_before_utc)}"
            detail = f"x509: certificate has expired or is not yet valid: {when}"
        else:
            detail = f"x509: {getattr(err, 'verify_message', err)}"
    return f"tls: failed to verify certificate: {detail}"


# The reason apimachinery's NewGenericServerResponse gives each status code.
GENERIC_REASONS = {
    409: "Conflict", 404: "NotFound", 400: "BadRequest", 401: "Unauthorized", 403: "Forbidden",
    405: "MethodNotAllowed", 406: "NotAcceptable", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 503: "ServiceUnavailable", 504: "Timeout",
}  # fmt: skip


def generic_response_message(code: int, server_message: str) -> str:
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
