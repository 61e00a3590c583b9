"""Signed service-account JWTs (upstream: pkg/serviceaccount/jwt.go): the keys, signing a token, and the
authenticator that checks a token's issuer, signature and audiences before its validator (`claims` for bound
tokens, `legacy` for secret-based ones) checks what it says.

Tokens are compact JWS, signed RS256 with an RSA key or ES256/384/512 with a P-256/384/521 key; the header
names the key by `kid`, the unpadded base64url SHA-256 of the public key's PKIX DER. This is written on
`cryptography` alone: the few JOSE rules it needs are here, with no JWT library between us and them.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.x509 import load_pem_x509_certificate

from . import InvalidCredentials, aggregate_message
from .bearertoken import Response, intersect
from .serviceaccount import ServiceAccountInfo

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

LEEWAY = 60  # seconds of clock skew allowed on exp, nbf and iat (go-jose's DefaultLeeway)
LEGACY_TOKEN_ANNOTATION = "authentication.k8s.io/legacy-token"
# go-jose's messages, which upstream passes on when no key verifies a token
_CRYPTO_ERROR = "square/go-jose: error in cryptographic primitive"
_UNSUPPORTED_ALG = "square/go-jose: unknown/unsupported algorithm"
_EC_ALGS = {"secp256r1": ("ES256", hashes.SHA256(), 32), "secp384r1": ("ES384", hashes.SHA384(), 48),
            "secp521r1": ("ES512", hashes.SHA512(), 66)}  # fmt: skip


class KeyFileError(ValueError):
    """A key file that cannot be used (the API server does not start)."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Unpadded base64url, strictly (Go's RawURLEncoding): padding or other alphabets are refused."""
    if "=" in text or len(text) % 4 == 1:
        raise ValueError("illegal base64 data")
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def key_id(public: PublicKey) -> str:
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


def algorithm(public: PublicKey) -> str:
    if isinstance(public, rsa.RSAPublicKey):
        return "RS256"
    curve = _EC_ALGS.get(public.curve.name)
    if curve is None:
        raise KeyFileError("unknown private key curve, must be 256, 384, or 521")
    return curve[0]


def _int_bytes(n: int, size: int = 0) -> bytes:
    return n.to_bytes(max(size, (n.bit_length() + 7) // 8), "big")


def jwk(public: PublicKey) -> dict[str, str]:
    """The key as a public JWK, its members in go-jose's order."""
    alg = algorithm(public)
    if isinstance(public, rsa.RSAPublicKey):
        nums = public.public_numbers()
        return {"use": "sig", "kty": "RSA", "kid": key_id(public), "alg": alg, "n": b64url(_int_bytes(nums.n)),
                "e": b64url(_int_bytes(nums.e))}  # fmt: skip
    size = _EC_ALGS[public.curve.name][2]
    pts = public.public_numbers()
    crv = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg]
    return {"use": "sig", "kty": "EC", "kid": key_id(public), "crv": crv, "alg": alg,
            "x": b64url(_int_bytes(pts.x, size)), "y": b64url(_int_bytes(pts.y, size))}  # fmt: skip


# -- key files -------------------------------------------------------------------------------------------


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, rest = [], data
    while True:
        start = rest.find(b"-----BEGIN ")
        if start < 0:
            return blocks
        end_marker = rest.find(b"-----END ", start)
        end = rest.find(b"-----", end_marker + 9) if end_marker >= 0 else -1
        if end < 0:
            return blocks
        blocks.append(rest[start : end + 5])
        rest = rest[end + 5 :]


def read_public_keys(path: str | Path) -> list[PublicKey]:
    """The RSA and ECDSA public keys in a PEM file: public keys, the public halves of private keys, and the
    keys of certificates (upstream: keyutil.PublicKeysFromFile)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise KeyFileError(f"failed to read service account key file {path!s}: {err}") from None
    keys: list[PublicKey] = []
    for block in _pem_blocks(data):
        key: Any = None
        try:
            if b"CERTIFICATE" in block[:40]:
                key = load_pem_x509_certificate(block).public_key()
            elif b"PRIVATE KEY" in block[:40]:
                key = serialization.load_pem_private_key(block, password=None).public_key()
            else:
                key = serialization.load_pem_public_key(block)
        except (ValueError, TypeError):
            continue
        if isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
            keys.append(key)
    if not keys:
        raise KeyFileError(
            f"failed to read service account key file {path!s}: data does not contain any valid RSA or ECDSA "
            "public keys"
        )
    return keys


def read_signing_key(path: str | Path) -> PrivateKey:
    """The private key of `--service-account-signing-key-file`."""
    try:
        data = Path(path).read_bytes()
        key = serialization.load_pem_private_key(data, password=None)
    except (OSError, ValueError, TypeError) as err:
        raise KeyFileError(f"failed to parse service-account-issuer-key-file: {err}") from None
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise KeyFileError(
            f"failed to parse service-account-issuer-key-file: unknown private key type {type(key).__name__}, "
            "must be RSA or ECDSA"
        )
    if isinstance(key, ec.EllipticCurvePrivateKey):
        algorithm(key.public_key())  # the curve must be one JOSE names
    return key


# -- signing and verifying -------------------------------------------------------------------------------


def _sign(key: PrivateKey, alg: str, data: bytes) -> bytes:
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    _, digest, size = _EC_ALGS[key.curve.name]
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
    return _int_bytes(r, size) + _int_bytes(s, size)  # JOSE's fixed-size r || s, not DER


def _verify(key: PublicKey, alg: str, data: bytes, signature: bytes) -> None:
    """Raises InvalidSignature (the signature is wrong) or ValueError (the algorithm does not fit the key)."""
    if isinstance(key, rsa.RSAPublicKey):
        if alg != "RS256":
            raise ValueError(_UNSUPPORTED_ALG)
        key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        return
    name, digest, size = _EC_ALGS.get(key.curve.name, ("", hashes.SHA256(), 0))
    if alg != name:
        raise ValueError(_UNSUPPORTED_ALG)
    if len(signature) != 2 * size:
        raise InvalidSignature()
    r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
    key.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest))


class JWTTokenGenerator:
    """Signs tokens as `issuer` with `key` (upstream: JWTTokenGenerator)."""

    def __init__(self, issuer: str, key: PrivateKey) -> None:
        self.issuer = issuer
        self.key = key
        public = key.public_key()
        self.alg = algorithm(public)
        self._header = b64url(orjson.dumps({"alg": self.alg, "kid": key_id(public)}))

    def generate_token(self, claims: dict[str, Any], private_claims: dict[str, Any]) -> str:
        """A compact JWS of the private claims, overridden by the registered ones, and the issuer. The payload's
        members are in key order, as Go's encoding of the merged claims map writes them."""
        payload = {**private_claims, **claims, "iss": self.issuer}
        signing_input = self._header + "." + b64url(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS))
        return signing_input + "." + b64url(_sign(self.key, self.alg, signing_input.encode()))


class StaticPublicKeys:
    """The verification keys, by key id (upstream: StaticPublicKeysGetter)."""

    CACHE_MAX_AGE = 3600  # seconds clients may keep the published keys (and OIDC documents)

    def __init__(self, keys: Iterable[PublicKey]) -> None:
        self.keys = list(keys)
        self.by_id: dict[str, list[PublicKey]] = {}
        for k in self.keys:
            self.by_id.setdefault(key_id(k), []).append(k)

    def get(self, kid: str) -> list[PublicKey]:
        return self.by_id.get(kid, []) if kid else self.keys


@dataclass(frozen=True)
class PublicClaims:
    """The registered claims of a verified token."""

    issuer: str = ""
    subject: str = ""
    audiences: tuple[str, ...] = ()
    expiry: float | None = None
    not_before: float | None = None
    issued_at: float | None = None
    jti: str = ""


@dataclass
class Validation:
    """A validator's answer: the service account, and the warnings and audit annotations its use adds."""

    info: ServiceAccountInfo
    warnings: tuple[str, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()


class Validator(Protocol):
    def validate(self, token: str, public: PublicClaims, payload: dict[str, Any]) -> Validation:
        """Raises InvalidCredentials with upstream's message when the token is no good."""
        ...


def _numeric_date(payload: dict[str, Any], name: str) -> float | None:
    v = payload.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"json: cannot unmarshal {type(v).__name__} into Go struct field Claims.{name}")
    return float(v)


def public_claims(payload: dict[str, Any]) -> PublicClaims:
    aud = payload.get("aud")
    if aud is None:
        audiences: tuple[str, ...] = ()
    elif isinstance(aud, str):
        audiences = (aud,)
    elif isinstance(aud, list) and all(isinstance(a, str) for a in aud):
        audiences = tuple(aud)
    else:
        raise ValueError("square/go-jose/jwt: expected string or array value to unmarshal to Audience")
    strings = {k: payload.get(k, "") for k in ("iss", "sub", "jti")}
    if not all(isinstance(v, str) for v in strings.values()):
        raise ValueError("json: cannot unmarshal into Go struct field Claims of type string")
    return PublicClaims(strings["iss"], strings["sub"], audiences, _numeric_date(payload, "exp"),
                        _numeric_date(payload, "nbf"), _numeric_date(payload, "iat"), strings["jti"])  # fmt: skip


def unverified_payload(token: str) -> dict[str, Any] | None:
    """The claims of a compact JWS, before anything about it is verified (None: not one, or not an object)."""
    if token.strip().startswith("{"):
        return None
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = orjson.loads(b64url_decode(parts[1]))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def go_quote_list(values: Iterable[str]) -> str:
    """A []string as Go's %q prints it: ["a" "b"]."""
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"


class JWTTokenAuthenticator:
    """Tokens of the accepted `issuers` signed by one of `keys` (upstream: JWTTokenAuthenticator). A token of
    another issuer, or that is no JWT at all, is not this authenticator's (None); one of its issuers that
    fails a check is refused with the check's message."""

    def __init__(self, issuers: Iterable[str], keys: StaticPublicKeys, implicit_audiences: tuple[str, ...],
                 validator: Validator) -> None:  # fmt: skip
        self.issuers = frozenset(issuers)
        self.keys = keys
        self.implicit_audiences = implicit_audiences
        self.validator = validator

    def _unverified_payload(self, token: str) -> dict[str, Any] | None:
        """The payload, when the token is a compact JWS naming one of our issuers (not yet trusted)."""
        payload = unverified_payload(token)
        if payload is None or payload.get("iss") not in self.issuers:
            return None
        return payload

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        payload = self._unverified_payload(token)
        if payload is None:
            return None
        head, body, sig = token.split(".")
        try:
            header = orjson.loads(b64url_decode(head))
            signature = b64url_decode(sig)
        except ValueError:
            return None
        if not isinstance(header, dict):
            return None
        kid = header.get("kid") if isinstance(header.get("kid"), str) else ""
        alg = header.get("alg") if isinstance(header.get("alg"), str) else ""
        keys = self.keys.get(kid or "")
        if not keys:
            raise InvalidCredentials("invalid signature, no keys found")
        failures: list[Exception] = []
        for key in keys:
            try:
                _verify(key, alg or "", f"{head}.{body}".encode(), signature)
                break
            except InvalidSignature:
                failures.append(ValueError(_CRYPTO_ERROR))
            except ValueError as err:
                failures.append(err)
        else:
            raise InvalidCredentials(aggregate_message(failures))
        try:
            public = public_claims(payload)
        except ValueError as err:
            raise InvalidCredentials(str(err)) from None
        if public.issuer not in self.issuers:
            raise InvalidCredentials(f"token issuer {orjson.dumps(public.issuer).decode()} is invalid")
        annotations: list[tuple[str, str]] = []
        token_audiences = public.audiences
        if not token_audiences:
            # a legacy token: meant for the API server itself
            annotations.append((LEGACY_TOKEN_ANNOTATION, public.subject))
            token_audiences = self.implicit_audiences
        requested = audiences or self.implicit_audiences
        auds = intersect(token_audiences, requested)
        if not auds and self.implicit_audiences:
            raise InvalidCredentials(
                f"token audiences {go_quote_list(token_audiences)} is invalid for the target audiences "
                f"{go_quote_list(requested)}"
            )
        v = self.validator.validate(token, public, payload)
        return Response(v.info.user_info(), auds, v.warnings, (*annotations, *v.annotations))
