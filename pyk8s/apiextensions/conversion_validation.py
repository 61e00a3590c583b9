"""Validation of a CRD's spec.conversion: the strategy, the webhook's client config (its URL, its service
reference, its CA bundle) and the ConversionReview versions (upstream: apiextensions-apiserver
pkg/apis/apiextensions/validation and k8s.io/apiserver pkg/util/webhook/validation.go, with Go's net/url
parsing and client-go's CA loading, whose error texts reach the user).

Paths name the internal fields upstream validates: `spec.conversion.webhookClientConfig` for v1's
`spec.conversion.webhook.clientConfig`, `spec.conversion.conversionReviewVersions` for
`spec.conversion.webhook.conversionReviewVersions`."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from ..api import errors as e
from ..api import validation as v
from ..api.errors import FieldError, GoStrings
from .gofmt import GoValue, go_bytes

ACCEPTED_CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")

_URL_FORM = "; desired format: https://host[/path]"
# Characters Go accepts in a host name besides letters and digits (net/url shouldEscape, encodeHost).
_HOST_OK = set("-_.~!$&'()*+,;=:[]<>\"%")
_USERINFO_OK = set("-._:~!$&'()*+,;=%@")


class URLError(ValueError):
    """A URL Go's url.Parse refuses; the message is Go's."""


@dataclass
class ParsedURL:
    scheme: str = ""
    host: str = ""
    user: str | None = None  # the userinfo as Go's Userinfo.String() prints it
    fragment: str = ""
    raw_query: str = ""


def _unescape(s: str, host: bool = False) -> str:
    out = bytearray()
    i = 0
    raw = s.encode()
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # %
            esc = raw[i : i + 3].decode(errors="replace")
            if len(esc) < 3 or not all(ch in "0123456789abcdefABCDEF" for ch in esc[1:]):
                raise URLError(f"invalid URL escape {e.go_quote(esc)}")
            out.append(int(esc[1:], 16))
            i += 3
            continue
        if host and c < 0x80 and not (chr(c).isalnum() or chr(c) in _HOST_OK):
            raise URLError(f"invalid character {e.go_quote(chr(c))} in host name")
        out.append(c)
        i += 1
    return out.decode(errors="replace")


def _scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _host(authority: str) -> str:
    if authority.startswith("["):
        end = authority.rfind("]")
        if end < 0:
            raise URLError("missing ']' in host")
        port = authority[end + 1 :]
    else:
        colon = authority.rfind(":")
        port = authority[colon:] if colon >= 0 else ""
    if port and (port[0] != ":" or not all("0" <= ch <= "9" for ch in port[1:])):
        raise URLError(f"invalid port {e.go_quote(port)} after host")
    return _unescape(authority, host=True)


def parse_url(raw: str, *, via_request: bool = False) -> ParsedURL:
    """Go's url.Parse (or url.ParseRequestURI with `via_request`), as far as the webhook checks look."""
    u = ParsedURL()
    target = raw
    if not via_request:
        target, _, frag = raw.partition("#")
        try:
            u.fragment = _unescape(frag)
        except URLError as exc:
            raise URLError(f"parse {e.go_quote(raw)}: {exc}") from None
    try:
        _parse(target, u, via_request)
    except URLError as exc:
        raise URLError(f"parse {e.go_quote(target)}: {exc}") from None
    return u


def _parse(raw: str, u: ParsedURL, via_request: bool) -> None:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise URLError("empty url")
    if raw == "*":
        return
    scheme, rest = _scheme(raw)
    u.scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        rest = rest[:-1]
    else:
        rest, _, u.raw_query = rest.partition("?")
    if not rest.startswith("/"):
        if u.scheme:
            return  # an opaque URL: no host
        if via_request:
            raise URLError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if (u.scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        at = authority.rfind("@")
        u.host = _host(authority[at + 1 :])
        if at >= 0:
            userinfo = authority[:at]
            if not all(c.isalnum() or c in _USERINFO_OK for c in userinfo):
                raise URLError("net/url: invalid userinfo")
            u.user = userinfo
    _unescape(rest)


def validate_webhook_url(path: str, url: str, force_https: bool) -> list[FieldError]:
    try:
        u = parse_url(url)
    except URLError as exc:
        return [e.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errs: list[FieldError] = []
    if force_https and u.scheme != "https":
        errs.append(e.invalid(path, u.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not u.host:
        errs.append(e.invalid(path, u.host, "host must be specified" + _URL_FORM))
    if u.user is not None:
        errs.append(e.invalid(path, u.user, "user information is not permitted in the URL"))
    if u.fragment:
        errs.append(e.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.raw_query:
        errs.append(e.invalid(path, u.raw_query, "query parameters are not permitted in the URL"))
    return errs


def validate_webhook_service(path: str, namespace: str, name: str, url_path: str | None, port: int) -> list[FieldError]:
    """Upstream's ValidateWebhookService(namespace, name, ...); note the CRD validation passes the service's
    name as `namespace` and its namespace as `name`, and so do we."""
    errs: list[FieldError] = []
    if not name:
        errs.append(e.required(f"{path}.name", "service name is required"))
    if not namespace:
        errs.append(e.required(f"{path}.namespace", "service namespace is required"))
    if not 1 <= port <= 65535:
        errs.append(e.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    if url_path is None or url_path in ("", "/"):
        return errs
    if url_path == "//":
        return [*errs, e.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(e.invalid(f"{path}.path", url_path, "must start with a '/'"))
    to_check = url_path[1:]
    if to_check.endswith("/"):
        to_check = to_check[:-1]
    for i, step in enumerate(to_check.split("/")):
        if not step:
            errs.append(e.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        errs.extend(e.invalid(f"{path}.path", url_path, f"segment[{i}]: {msg}") for msg in v.is_dns1123_subdomain(step))
    return errs


def ca_bundle_bytes(value: object) -> bytes:
    """A caBundle as the bytes Go decodes from its base64 JSON form."""
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode()


_PEM_BLOCK = re.compile(rb"^-----BEGIN ([^\n]*?)-----[ \t\r]*\n(.*?)^-----END \1-----[ \t\r]*(?:\n|\Z)", re.M | re.S)


def _pem_payload(body: bytes) -> tuple[bool, bytes]:
    """(has headers, base64 text) of a PEM block's body: `Key: value` lines may open it."""
    lines = body.split(b"\n")
    n = 0
    while n < len(lines) and b":" in lines[n]:
        n += 1
    if n and n < len(lines) and not lines[n].strip():
        n += 1
    return n > 0, b"".join(b"".join(lines[n:]).split())


def ca_bundle_error(data: bytes) -> str | None:
    """Why client-go would not load `data` as root certificates, in its words, or None when it would."""
    if not data:
        return None
    from cryptography import x509

    failure: str | None = None
    found = False
    rest_at = 0
    for m in _PEM_BLOCK.finditer(data):
        has_headers, payload = _pem_payload(m.group(2))
        try:
            der = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            continue  # Go's decoder skips a malformed block and looks further
        found, rest_at = True, m.end()
        if m.group(1) != b"CERTIFICATE" or has_headers:
            continue
        try:
            x509.load_der_x509_certificate(der)
            return None  # one good certificate is enough
        except ValueError:
            failure = failure or "failed to parse certificate: x509: malformed certificate"
    if failure:
        return f"unable to load root certificates: {failure}"
    if not found or data[rest_at:]:
        return "unable to load root certificates: unable to parse bytes as PEM block"
    return "unable to load root certificates: no valid certificate authority data seen"


def validate_ca_bundle(path: str, data: bytes) -> list[FieldError]:
    msg = ca_bundle_error(data)
    return [e.invalid(path, GoValue(go_bytes(data)), msg)] if msg else []


def _s(x: Any) -> str:
    return x if isinstance(x, str) else ""


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def conversion_errors(
    conv: dict[str, Any] | None, require_recognized_review_version: bool, allow_invalid_ca_bundle: bool
) -> list[FieldError]:
    """`conv` is the internal form: {strategy, webhookClientConfig, conversionReviewVersions}."""
    if conv is None:
        return []
    path = "spec.conversion"
    strategy = conv["strategy"]
    errs: list[FieldError] = []
    if not strategy:
        errs.append(e.required(f"{path}.strategy", ""))
    elif strategy not in ("None", "Webhook"):
        errs.append(e.not_supported(f"{path}.strategy", strategy, ("None", "Webhook")))
    cc = conv["webhookClientConfig"]
    reviews = conv["conversionReviewVersions"]
    if conv["strategy"] != "Webhook":
        if cc is not None:
            errs.append(e.forbidden(f"{path}.webhookClientConfig", "should not be set when strategy is not set to Webhook"))  # fmt: skip
        if _l(reviews):
            errs.append(e.forbidden(f"{path}.conversionReviewVersions", "should not be set when strategy is not set to Webhook"))  # fmt: skip
        return errs
    cc_path = f"{path}.webhookClientConfig"
    if cc is None:
        errs.append(e.required(cc_path, "required when strategy is set to Webhook"))
    else:
        url, service = cc.get("url"), cc.get("service")
        if (url is None) == (service is None):
            errs.append(e.required(cc_path, "exactly one of url or service is required"))
        elif url is not None:
            errs += validate_webhook_url(f"{cc_path}.url", _s(url), True)
        else:
            svc = _d(service)
            port = svc.get("port") if isinstance(svc.get("port"), int) else 0
            path_value = svc.get("path") if isinstance(svc.get("path"), str) else None
            # Upstream passes the name where the namespace goes and the namespace where the name goes.
            errs += validate_webhook_service(f"{cc_path}.service", _s(svc.get("name")), _s(svc.get("namespace")), path_value, port)  # fmt: skip
        ca_bundle = ca_bundle_bytes(cc.get("caBundle"))
        if ca_bundle and not allow_invalid_ca_bundle:
            errs += validate_ca_bundle(f"{cc_path}.caBundle", ca_bundle)
    errs += _review_versions_errors(reviews, require_recognized_review_version)
    return errs


def _review_versions_errors(versions: Any, require_recognized: bool) -> list[FieldError]:
    path = "spec.conversion.conversionReviewVersions"
    versions = [_s(x) for x in _l(versions)]
    if not versions:
        return [e.required(path, "")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ver in enumerate(versions):
        if ver in seen:
            errs.append(e.invalid(f"{path}[{i}]", ver, "duplicate version"))
            continue
        seen.add(ver)
        errs += [e.invalid(f"{path}[{i}]", ver, msg) for msg in v.is_dns1035_label(ver)]
    if require_recognized and not seen & set(ACCEPTED_CONVERSION_REVIEW_VERSIONS):
        accepted = ", ".join(ACCEPTED_CONVERSION_REVIEW_VERSIONS)
        errs.append(e.invalid(path, GoStrings(versions), f"must include at least one of {accepted}"))
    return errs
