"""The service-account issuer's OIDC discovery documents (upstream: pkg/serviceaccount/openidmetadata.go and
pkg/routes/openidmetadata.go): `/.well-known/openid-configuration` and the key set at `/openid/v1/jwks`, with
which anything outside the cluster can verify the service-account tokens this server issues.

They are served only when the issuer is an https URL without query or fragment, as upstream (which logs why
otherwise and serves neither)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import orjson
from aiohttp import web

from .authn.jwt import StaticPublicKeys, algorithm, jwk

log = logging.getLogger("pyk8s.apiserver")

OPENID_CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
JWKS_CONTENT_TYPE = "application/jwk-set+json"
CACHE_CONTROL = "public, max-age=3600"  # the keys' cache age (StaticPublicKeysGetter.GetCacheAgeMaxSeconds)


class OpenIDMetadata:
    """The two documents, rendered once (the keys do not change while the server runs)."""

    def __init__(self, issuer: str, jwks_uri: str, external_address: str, keys: StaticPublicKeys) -> None:
        if not issuer:
            raise ValueError("empty issuer URL")
        if not jwks_uri and not external_address:
            raise ValueError("either the JWKS URI or the default external address, or both, must be set")
        iss = urlsplit(issuer)
        if iss.scheme != "https":
            raise ValueError(f"issuer URL must use https scheme, got: {issuer}")
        if iss.query:
            raise ValueError(f"issuer URL may not include a query, got: {issuer}")
        if iss.fragment:
            raise ValueError(f"issuer URL may not include a fragment, got: {issuer}")
        if not jwks_uri:
            jwks_uri = f"https://{external_address}{JWKS_PATH}"
        elif urlsplit(jwks_uri).scheme != "https":
            raise ValueError(f"jwksURI requires https scheme, parsed as: {jwks_uri}")
        if not keys.keys:
            raise ValueError("no keys provided for validating keyset")
        jwks = [jwk(k) for k in keys.keys]
        self.config_json = orjson.dumps({
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": sorted({algorithm(k) for k in keys.keys}),
        })  # fmt: skip
        self.keyset_json = orjson.dumps({"keys": jwks})

    def serve(self, path: str) -> web.Response | None:
        """The document at `path`, None for any other path."""
        if path == OPENID_CONFIG_PATH:
            body, content_type = self.config_json, "application/json"
        elif path == JWKS_PATH:
            body, content_type = self.keyset_json, JWKS_CONTENT_TYPE
        else:
            return None
        return web.Response(body=body, headers={"Content-Type": content_type, "Cache-Control": CACHE_CONTROL})


def build(issuer: str, jwks_uri: str, external_address: str, keys: StaticPublicKeys) -> OpenIDMetadata | None:
    """The documents, or None (logged) when the issuer cannot have them."""
    try:
        return OpenIDMetadata(issuer, jwks_uri, external_address, keys)
    except ValueError as err:
        log.info("not serving the service account issuer discovery documents: %s", err)
        return None
