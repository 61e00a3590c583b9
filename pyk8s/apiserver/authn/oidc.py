"""The OpenID Connect token authenticator of kube-apiserver's `--oidc-*` flags (upstream: apiserver plugin/pkg/
authenticator/token/oidc, built on coreos/go-oidc v2, and pkg/kubeapiserver/options authentication.go, which
turns the flags into one JWT authenticator).

- The provider is discovered in the background: `<issuer>/.well-known/openid-configuration` must name the
  issuer exactly; its `jwks_uri` gives the signing keys. Discovery is tried again every 10 s until it works;
  until then a token of the issuer is refused with `oidc: authenticator not initialized`.
- A token is this authenticator's only when its (unverified) `iss` is the issuer, so service-account JWTs
  go on to their own authenticators. Then, in go-oidc's order: its claims must decode, `aud` must hold the
  client id, `exp` must not be past (no leeway; go-oidc v2 has none there), `nbf` not more than a minute
  ahead, the `alg` one of `--oidc-signing-algs`, and the signature one of the provider's keys'. `iat` is not
  checked, as upstream does not.
- The keys are kept in memory. A token no cached key verifies makes them be fetched again when they are stale
  (the JWKS response's Cache-Control max-age, less 30 s; without one, at once): requests at the same time share
  one fetch, and one request fetches at most once. The fetch goes through `deferred`, as the token webhook's
  call does, so the authenticator stays synchronous.
- The user: the username claim (for `email`, `email_verified` must be true when present) with its prefix,
  the groups claim (a string or a list) with its prefix, no uid (the flags map none), and the token's `jti`
  as the credential id. Then the required claims must be present with their values.

Errors are upstream's strings; a TokenReview reports them in `status.error`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from ...api.types.codec import json_kind
from .. import deferred
from ..webhook import ssl_context_for
from . import CREDENTIAL_ID_KEY, InvalidCredentials, UserInfo, aggregate_message
from .bearertoken import Response
from .jwt import PublicKey, b64url_decode, go_quote_list, unverified_payload
from .serviceaccount import credential_id_for_jti

log = logging.getLogger("pyk8s.apiserver.authn.oidc")

WELL_KNOWN_PATH = "/.well-known/openid-configuration"
# oidc.AllValidSigningAlgorithms(), sorted as upstream lists them
ALL_SIGNING_ALGS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512")
DEFAULT_SIGNING_ALGS = ("RS256",)
NO_USERNAME_PREFIX = "-"
NBF_LEEWAY = 60.0  # go-oidc v2: nbf may be up to a minute ahead; exp has no leeway
KEYS_EXPIRY_DELTA = 30.0  # go-oidc: keys are fetched again this long before they expire
HTTP_TIMEOUT = 30.0  # upstream's client timeout
NOT_INITIALIZED = "oidc: authenticator not initialized"
NO_VERIFIED_KEY = "failed to verify id token signature"
_GOOGLE = ("https://accounts.google.com", "accounts.google.com")
_HASHES: dict[str, type[hashes.HashAlgorithm]] = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_EC_CURVES = {"ES256": ("secp256r1", 32), "ES384": ("secp384r1", 48), "ES512": ("secp521r1", 66)}
_JWK_CURVES: dict[str, ec.EllipticCurve] = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}


def discovery_retry_interval() -> float:
    """Seconds between discovery attempts (upstream: 10 s). Tests shorten it with PYK8S_OIDC_DISCOVERY_RETRY."""
    raw = os.environ.get("PYK8S_OIDC_DISCOVERY_RETRY")
    return float(raw) if raw else 10.0


def _q(text: str) -> str:
    """Go's %q of a string."""
    return orjson.dumps(text).decode()


def _go_time(epoch: float, fraction: bool = False) -> str:
    """A time as Go's %v prints it (in UTC, as a kube-apiserver container's local zone is)."""
    if epoch == 0 and not fraction:
        return "0001-01-01 00:00:00 +0000 UTC"  # the zero time: the token had no exp
    at = datetime.fromtimestamp(epoch, UTC)
    text = at.strftime("%Y-%m-%d %H:%M:%S")
    if fraction and at.microsecond:
        text += f".{at.microsecond:06d}".rstrip("0")
    return text + " +0000 UTC"


@dataclass
class OIDCOptions:
    """The `--oidc-*` flags (upstream: OIDCAuthenticationOptions)."""

    issuer_url: str = ""
    client_id: str = ""
    ca_file: str = ""
    username_claim: str = "sub"
    username_prefix: str = ""
    groups_claim: str = ""
    groups_prefix: str = ""
    signing_algs: tuple[str, ...] = DEFAULT_SIGNING_ALGS
    required_claims: tuple[str, ...] = ()  # key=value, as given on the command line

    @property
    def enabled(self) -> bool:
        return bool(self.issuer_url and self.client_id)

    @property
    def flags_set(self) -> bool:
        return self != OIDCOptions()

    @property
    def effective_username_prefix(self) -> str:
        """The issuer URL and `#` for claims other than email when no prefix is given; none for "-"."""
        if self.username_prefix == NO_USERNAME_PREFIX:
            return ""
        if not self.username_prefix and self.username_claim != "email":
            return self.issuer_url + "#"
        return self.username_prefix

    def parsed_required_claims(self) -> dict[str, str]:
        """The required claims by name (a later flag for the same claim wins, as pflag's map does)."""
        claims: dict[str, str] = {}
        for pair in self.required_claims:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(
                    f'invalid argument {_q(pair)} for "--oidc-required-claim" flag: malformed pair, expect string=string'
                )
            claims[key.strip()] = value.strip()
        return claims

    def ca_bundle(self) -> bytes:
        try:
            return Path(self.ca_file).read_bytes() if self.ca_file else b""
        except OSError as err:
            raise ValueError(f"open {self.ca_file}: {err.strerror.lower() if err.strerror else err}") from None

    def validate(self, service_account_issuers: tuple[str, ...]) -> list[str]:
        """Upstream's messages for flags that cannot make an authenticator."""
        if not self.flags_set:
            return []
        if not self.enabled:
            return ["oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set"]
        try:
            self.parsed_required_claims()
            bundle = self.ca_bundle()
        except ValueError as err:
            return [str(err)]
        field = "jwt[0].issuer"
        errs = _url_problems(self.issuer_url, f"{field}.url")
        if bundle and not _certificates(bundle):
            errs.append(f'{field}.certificateAuthority: Invalid value: "<omitted>": data does not contain any valid '
                        "RSA or ECDSA certificates")  # fmt: skip
        if errs:
            return [f"invalid authentication configuration: {aggregate_message(errs)}"]
        for alg in self.signing_algs:
            if alg not in ALL_SIGNING_ALGS:
                return [f"oidc: unsupported signing alg: {_q(alg)}"]
        if self.issuer_url in service_account_issuers:  # checked when the authenticator is made, without a path
            listed = "[" + " ".join(sorted(set(service_account_issuers))) + "]"
            return [f"issuer.url: Invalid value: {_q(self.issuer_url)}: URL must not overlap with disallowed "
                    f"issuers: {listed}"]  # fmt: skip
        return []


def _url_problems(url: str, path: str) -> list[str]:
    try:
        u = urlsplit(url)
    except ValueError as err:
        return [f"{path}: Invalid value: {_q(url)}: {err}"]
    errs = []
    if u.scheme != "https":
        errs.append(f"{path}: Invalid value: {_q(url)}: URL scheme must be https")
    if "@" in u.netloc:
        errs.append(f"{path}: Invalid value: {_q(url)}: URL must not contain a username or password")
    if u.query:
        errs.append(f"{path}: Invalid value: {_q(url)}: URL must not contain a query")
    if u.fragment:
        errs.append(f"{path}: Invalid value: {_q(url)}: URL must not contain a fragment")
    return errs


def _certificates(bundle: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(bundle)
    except ValueError:
        return []


def untrusted_issuer(token: str) -> str | None:
    """The `iss` a compact JWT claims, before anything about it is verified (None: no JWT, or no string)."""
    payload = unverified_payload(token)
    iss = payload.get("iss", "") if payload is not None else None
    if not isinstance(iss, str):
        return None
    return _GOOGLE[0] if iss == _GOOGLE[1] else iss


def public_key_of(jwk: dict[str, Any]) -> tuple[str, PublicKey] | None:
    """(kid, key) of a public RSA or EC JWK; None for another kind of key (it is left out)."""

    def num(name: str) -> int:
        value = jwk.get(name)
        if not isinstance(value, str):
            raise ValueError(name)
        return int.from_bytes(b64url_decode(value), "big")

    kid = jwk.get("kid") if isinstance(jwk.get("kid"), str) else ""
    try:
        if jwk.get("kty") == "RSA":
            return str(kid), rsa.RSAPublicNumbers(num("e"), num("n")).public_key()
        if jwk.get("kty") == "EC" and jwk.get("crv") in _JWK_CURVES:
            return str(kid), ec.EllipticCurvePublicNumbers(num("x"), num("y"), _JWK_CURVES[jwk["crv"]]).public_key()
    except ValueError:
        return None
    return None


def verify_signature(key: PublicKey, alg: str, data: bytes, signature: bytes) -> bool:
    """Whether `signature` is `key`'s over `data` with JOSE algorithm `alg` (a key of another kind: no)."""
    digest = _HASHES.get(alg[2:])
    try:
        if isinstance(key, rsa.RSAPublicKey) and digest is not None and alg[:2] in ("RS", "PS"):
            if alg.startswith("RS"):
                key.verify(signature, data, padding.PKCS1v15(), digest())
            else:  # go-jose verifies PSS with any salt length
                key.verify(signature, data, padding.PSS(padding.MGF1(digest()), padding.PSS.AUTO), digest())
            return True
        if isinstance(key, ec.EllipticCurvePublicKey) and alg in _EC_CURVES and digest is not None:
            curve, size = _EC_CURVES[alg]
            if key.curve.name != curve or len(signature) != 2 * size:
                return False
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest()))
            return True
    except (InvalidSignature, ValueError):
        return False
    return False


class _Unverified(Exception):
    """The token is refused; the message is go-oidc's (the caller adds `oidc: verify token: `)."""


class OIDCAuthenticator:
    """Tokens of one OpenID provider, as the module docstring describes. `run()` discovers the provider and
    holds the HTTP client until cancelled."""

    def __init__(self, opts: OIDCOptions) -> None:
        self.opts = opts
        self.issuer = opts.issuer_url
        self.username_prefix = opts.effective_username_prefix
        self.required_claims = opts.parsed_required_claims()
        bundle = opts.ca_bundle()
        if not bundle:
            log.info("OIDC: No x509 certificates provided, will use host's root CA set")
        self.ssl_context: ssl.SSLContext = ssl_context_for(bundle) if bundle else ssl.create_default_context()
        self.jwks_uri: str | None = None  # set once discovery succeeds
        self.keys: list[tuple[str, PublicKey]] = []
        self.keys_expiry = 0.0  # wall-clock seconds
        self._session: aiohttp.ClientSession | None = None
        self._fetching: asyncio.Task[str] | None = None

    # -- the background ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Discover the provider (again every 10 s until it works), then keep the client until cancelled."""
        try:
            while True:
                try:
                    await self.discover()
                    break
                except (aiohttp.ClientError, TimeoutError, ValueError) as err:
                    log.error("oidc authenticator: initializing plugin: %s", err)
                await asyncio.sleep(discovery_retry_interval())
            await asyncio.Event().wait()
        finally:
            if self._session is not None:
                await self._session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl_context),
                                                  timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT))  # fmt: skip
        return self._session

    async def discover(self) -> None:
        """Read the provider's discovery document (go-oidc NewProvider), then its keys; ValueError or a client
        error with go-oidc's words when it cannot be used."""
        url = self.issuer.rstrip("/") + WELL_KNOWN_PATH
        async with self._client().get(url) as resp:
            body = await resp.read()
            if resp.status != 200:
                raise ValueError(f"{resp.status} {resp.reason}: {body.decode(errors='replace')}")
        try:
            doc = orjson.loads(body)
            if not isinstance(doc, dict):
                raise ValueError(f"json: cannot unmarshal {json_kind(doc)} into Go value of type oidc.providerJSON")
        except ValueError as err:
            raise ValueError(f"oidc: failed to decode provider discovery object: {err}") from None
        if doc.get("issuer") != self.issuer:
            got = doc.get("issuer") if isinstance(doc.get("issuer"), str) else ""
            raise ValueError(f"oidc: issuer did not match the issuer returned by provider, expected {_q(self.issuer)} "
                             f"got {_q(str(got))}")  # fmt: skip
        jwks_uri = doc.get("jwks_uri")
        self.jwks_uri = jwks_uri if isinstance(jwks_uri, str) else ""
        # go-oidc fetches the keys with the first token; fetching them now spares that token the wait.
        problem = await self.refresh_keys()
        if problem:
            log.warning("oidc authenticator: fetching keys of %s: %s", self.issuer, problem)

    async def refresh_keys(self) -> str:
        """Fetch the keys again: "" when that worked, else why not. Callers at the same time share one fetch."""
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.ensure_future(self._fetch_keys())
        return await asyncio.shield(self._fetching)

    async def _fetch_keys(self) -> str:
        try:
            async with self._client().get(self.jwks_uri or "") as resp:
                body = await resp.read()
                if resp.status != 200:
                    return f"oidc: get keys failed: {resp.status} {resp.reason} {body.decode(errors='replace')}"
                expiry = _expiry(resp.headers)
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            return f"oidc: get keys failed {err}"
        try:
            doc = orjson.loads(body)
            listed = doc.get("keys") if isinstance(doc, dict) else None
            if not isinstance(listed, list):
                raise ValueError("json: cannot unmarshal into Go value of type jose.JSONWebKeySet")
        except ValueError as err:
            return f"oidc: failed to decode keys: {err} {body.decode(errors='replace')}"
        keys = [k for k in (public_key_of(j) for j in listed if isinstance(j, dict)) if k is not None]
        self.keys, self.keys_expiry = keys, expiry
        return ""

    # -- a token ----------------------------------------------------------------------------------------------

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        if untrusted_issuer(token) != self.issuer:
            return None
        if self.jwks_uri is None:
            raise InvalidCredentials(NOT_INITIALIZED)
        try:
            claims = self._verify(token)
        except _Unverified as err:
            raise InvalidCredentials(f"oidc: verify token: {err}") from None
        return Response(self._user(claims))

    def _verify(self, token: str) -> dict[str, Any]:
        """The token's claims once go-oidc's verifier accepts it."""
        head, body, sig = token.split(".")
        try:
            header = orjson.loads(b64url_decode(head))
            signature = b64url_decode(sig)
            if not isinstance(header, dict):
                raise ValueError("square/go-jose: invalid protected header")
        except ValueError as err:
            raise _Unverified(f"oidc: malformed jwt: {err}") from None
        claims: dict[str, Any] = orjson.loads(b64url_decode(body))  # untrusted_issuer decoded it already
        try:
            token_auds, expiry, not_before = _registered_claims(claims)
        except ValueError as err:
            raise _Unverified(f"oidc: failed to unmarshal claims: {err}") from None
        iss = claims.get("iss", "")
        if iss != self.issuer and not (self.issuer == _GOOGLE[0] and iss == _GOOGLE[1]):
            raise _Unverified(
                f"oidc: id token issued by a different provider, expected {_q(self.issuer)} got {_q(iss)}"
            )
        if self.opts.client_id not in token_auds:
            raise _Unverified(f"oidc: expected audience {_q(self.opts.client_id)} got {go_quote_list(token_auds)}")
        now = time.time()
        if expiry < now:
            raise _Unverified(f"oidc: token is expired (Token Expiry: {_go_time(expiry)})")
        if not_before is not None and now + NBF_LEEWAY < not_before:
            raise _Unverified(f"oidc: current time {_go_time(now, True)} before the nbf (not before) time: "
                              f"{_go_time(not_before)}")  # fmt: skip
        alg = header.get("alg") if isinstance(header.get("alg"), str) else ""
        if alg not in self.opts.signing_algs:
            raise _Unverified(f"oidc: id token signed with unsupported algorithm, expected "
                              f"{go_quote_list(self.opts.signing_algs)} got {_q(str(alg))}")  # fmt: skip
        kid = header.get("kid") if isinstance(header.get("kid"), str) else ""
        data = f"{head}.{body}".encode()
        if not self._signed(kid, str(alg), data, signature):
            problem = self._after_refresh(kid, str(alg), data, signature)
            if problem:
                raise _Unverified(f"failed to verify signature: {problem}")
        return claims

    def _signed(self, kid: str, alg: str, data: bytes, signature: bytes) -> bool:
        return any(verify_signature(k, alg, data, signature) for key_kid, k in self.keys if not kid or key_kid == kid)

    def _after_refresh(self, kid: str, alg: str, data: bytes, signature: bytes) -> str:
        """Why no key verifies the token, once the keys are fetched again if they are stale (raising Pending
        for that fetch); "" when a fetched key verifies it after all."""
        if time.time() + KEYS_EXPIRY_DELTA <= self.keys_expiry:
            return NO_VERIFIED_KEY  # the keys are fresh: none of them signed it
        found, problem = deferred.answer((id(self), "keys"))
        if not found:
            if deferred.deferrable():
                raise deferred.Pending((id(self), "keys"), self.refresh_keys)
            self._refresh_in_background()
            return NO_VERIFIED_KEY
        if problem:
            return f"fetching keys {problem}"
        return "" if self._signed(kid, alg, data, signature) else NO_VERIFIED_KEY

    def _refresh_in_background(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._fetching is None or self._fetching.done():
            self._fetching = loop.create_task(self._fetch_keys())

    def _user(self, claims: dict[str, Any]) -> UserInfo:
        claim = self.opts.username_claim
        if claim not in claims:
            raise InvalidCredentials(f"oidc: parse username claims {_q(claim)}: claim not present")
        username = claims[claim]
        if username is not None and not isinstance(username, str):
            raise InvalidCredentials(f"oidc: parse username claims {_q(claim)}: {_type_error(username, 'string')}")
        if claim == "email" and "email_verified" in claims:
            verified = claims["email_verified"]
            if verified is not None and not isinstance(verified, bool):
                raise InvalidCredentials(f"oidc: parse 'email_verified' claim: {_type_error(verified, 'bool')}")
            if not verified:
                raise InvalidCredentials("oidc: email not verified")
        name = self.username_prefix + (username or "")
        groups: tuple[str, ...] = ()
        groups_claim = self.opts.groups_claim
        if groups_claim and groups_claim in claims:
            value = claims[groups_claim]
            if isinstance(value, str):
                groups = (value,)
            elif isinstance(value, list) and all(isinstance(g, str) for g in value):
                groups = tuple(value)
            elif value is not None:
                raise InvalidCredentials(f"oidc: parse groups claim {_q(groups_claim)}: {_type_error(value, 'string')}")
            groups = tuple(self.opts.groups_prefix + g for g in groups)
        extra: dict[str, tuple[str, ...]] = {}
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = (credential_id_for_jti(jti),)
        for required, want in self.required_claims.items():
            if required not in claims:
                raise InvalidCredentials(f"oidc: required claim {required} not present in ID token")
            got = claims[required]
            if got is not None and not isinstance(got, str):
                raise InvalidCredentials(f"oidc: parse claim {required}: {_type_error(got, 'string')}")
            if (got or "") != want:
                raise InvalidCredentials(
                    f"oidc: required claim {required} value does not match. Got = {got or ''}, want = {want}"
                )
        return UserInfo(name, "", groups, extra)


def _type_error(value: Any, go_type: str) -> str:
    return f"json: cannot unmarshal {json_kind(value)} into Go value of type {go_type}"


def _registered_claims(claims: dict[str, Any]) -> tuple[tuple[str, ...], float, float | None]:
    """(audiences, expiry, not-before) as go-oidc's idToken decodes them; ValueError with Go's words when a
    claim has the wrong type. A missing exp is the zero time, which has long passed."""
    for name in ("iss", "sub", "nonce", "at_hash"):
        value = claims.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(
                f"json: cannot unmarshal {json_kind(value)} into Go struct field idToken.{name} of type string"
            )
    aud = claims.get("aud")
    if aud is None:
        auds: tuple[str, ...] = ()
    elif isinstance(aud, str):
        auds = (aud,)
    elif isinstance(aud, list) and all(isinstance(a, str) for a in aud):
        auds = tuple(aud)
    else:
        raise ValueError(_type_error(aud, "[]string"))

    def seconds(name: str) -> float | None:
        value = claims.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"json: invalid number literal, trying to unmarshal {_q(orjson.dumps(value).decode())} "
                             "into Number")  # fmt: skip
        return float(int(value))  # go-oidc keeps whole seconds

    seconds("iat")
    return auds, seconds("exp") or 0.0, seconds("nbf")


def _expiry(headers: Any) -> float:
    """When fetched keys go stale, from the response's caching headers (go-oidc: at once without them)."""
    now = time.time()
    for directive in (headers.get("Cache-Control") or "").split(","):
        name, _, value = directive.strip().partition("=")
        if name.lower() in ("no-store", "no-cache"):
            return now
        if name.lower() == "max-age":
            try:
                return now + max(0, int(value.strip('"')))
            except ValueError:
                return now
    expires = headers.get("Expires")
    if expires:
        try:
            return max(now, parsedate_to_datetime(expires).timestamp())
        except (TypeError, ValueError):
            return now
    return now
