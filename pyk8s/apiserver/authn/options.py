"""The API server's authentication flags and the chain they build (upstream: pkg/kubeapiserver/options
authentication.go `BuiltInAuthenticationOptions`, and pkg/kubeapiserver/authenticator config.go `Config.New`).

Order: a front proxy's request headers (`request_header`), client certificates, then bearer tokens — the
token file, legacy service-account tokens, bound service-account tokens, bootstrap tokens, OIDC (`oidc`), the
token webhook — then the anonymous user when allowed and nothing failed.

With no flags the API server behaves as a kubeadm control plane does: tokens are signed with `pki/sa.key`
(created on first start) and checked against `pki/sa.pub`, the issuer is
`https://kubernetes.default.svc.cluster.local`, and the API audiences are the issuers.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import orjson
from cryptography import x509

from ...api.meta import Object
from ...storage import Preconditions
from ..informers import cached
from ..registry.rest import Context, RESTStore
from . import Union, UserInfo, X509Authenticator
from .bearertoken import (
    SUCCESS_CACHE_TTL,
    AudienceAgnostic,
    BearerTokenAuthenticator,
    CachedTokenAuthenticator,
    TokenUnion,
)
from .bootstrap import NAMESPACE as BOOTSTRAP_NAMESPACE
from .bootstrap import BootstrapTokenAuthenticator
from .claims import BoundTokenValidator
from .jwt import (
    JWTTokenAuthenticator,
    JWTTokenGenerator,
    PublicKey,
    StaticPublicKeys,
    read_public_keys,
    read_signing_key,
)
from .legacy import LAST_USED_LABEL, LEGACY_ISSUER, LegacyTokenValidator
from .oidc import OIDCAuthenticator, OIDCOptions
from .request_header import RequestHeaderAuthenticator
from .token_file import TokenAuthenticator
from .webhook import CACHE_TTL as WEBHOOK_CACHE_TTL
from .webhook import DEFAULT_VERSION as WEBHOOK_DEFAULT_VERSION
from .webhook import WebhookTokenAuthenticator
from .webhook import validate as validate_webhook

log = logging.getLogger("pyk8s.apiserver.authn")

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # kubeadm's
MAX_TOKEN_EXPIRATION_BOUNDS = (3600, 1 << 32)  # --service-account-max-token-expiration: 1 h to 2^32 s


def _cache_ttl() -> float:
    # Tests that watch a token stop working at once set PYK8S_TOKEN_SUCCESS_CACHE_TTL=0 (upstream's
    # integration tests turn the cache off likewise).
    raw = os.environ.get("PYK8S_TOKEN_SUCCESS_CACHE_TTL")
    return float(raw) if raw else SUCCESS_CACHE_TTL


@dataclass
class AuthenticationOptions:
    service_account_issuers: tuple[str, ...] = ()  # empty: DEFAULT_ISSUER
    service_account_key_files: tuple[str, ...] = ()  # empty: the signing key's public half (pki/sa.pub)
    service_account_signing_key_file: str = ""  # empty: pki/sa.key
    api_audiences: tuple[str, ...] = ()  # empty: the issuers
    service_account_lookup: bool = True
    service_account_max_token_expiration: float = 0.0  # seconds; 0: no maximum
    service_account_extend_token_expiration: bool = True
    service_account_jwks_uri: str = ""
    token_auth_file: str = ""
    enable_bootstrap_token_auth: bool = False
    anonymous_auth: bool = True
    token_success_cache_ttl: float = field(default_factory=_cache_ttl)
    # --authentication-token-webhook-config-file, -version, -cache-ttl: tokens the others do not know are asked of
    # the webhook (see webhook.py)
    token_webhook_config_file: str = ""
    token_webhook_version: str = WEBHOOK_DEFAULT_VERSION
    token_webhook_cache_ttl: float = WEBHOOK_CACHE_TTL
    oidc: OIDCOptions = field(default_factory=OIDCOptions)  # the --oidc-* flags (see oidc.py)

    @property
    def issuers(self) -> tuple[str, ...]:
        return self.service_account_issuers or (DEFAULT_ISSUER,)

    @property
    def audiences(self) -> tuple[str, ...]:
        return self.api_audiences or self.issuers

    def validate(self) -> list[str]:
        """Upstream's messages for flags that cannot work together."""
        problems: list[str] = []
        seen: set[str] = set()
        for issuer in self.service_account_issuers:
            if not issuer:
                problems.append("service-account-issuer should not be an empty string")
                continue
            if ":" in issuer:
                try:
                    urlsplit(issuer)
                except ValueError as err:
                    problems.append(
                        f"service-account-issuer {_go_quote(issuer)} contained a ':' but was not a valid URL: {err}"
                    )
                    continue
            if issuer in seen:
                problems.append(f"service-account-issuer {_go_quote(issuer)} is already specified")
            seen.add(issuer)
        if self.service_account_jwks_uri:
            try:
                scheme = urlsplit(self.service_account_jwks_uri).scheme
            except ValueError as err:
                problems.append(f"service-account-jwks-uri must be a valid URL: {err}")
            else:
                if scheme != "https":
                    problems.append(
                        f"service-account-jwks-uri requires https scheme, parsed as: {self.service_account_jwks_uri}"
                    )
        # Files that cannot be read stop the server before it opens anything, as upstream's flag checks do.
        try:
            for path in self.service_account_key_files:
                read_public_keys(path)
            if self.service_account_signing_key_file:
                read_signing_key(self.service_account_signing_key_file)
            if self.token_auth_file:
                TokenAuthenticator.from_csv(self.token_auth_file)
        except ValueError as err:
            problems.append(str(err))
        problems += validate_webhook(self.token_webhook_config_file, self.token_webhook_version)
        problems += self.oidc.validate(self.issuers)
        max_exp = self.service_account_max_token_expiration
        if max_exp and not MAX_TOKEN_EXPIRATION_BOUNDS[0] <= max_exp <= MAX_TOKEN_EXPIRATION_BOUNDS[1]:
            problems.append("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds")
        return problems


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


class CachedObjects:
    """The objects tokens name, read from the API server's watch caches (upstream: a lister-backed getter)."""

    def __init__(self, rest: Callable[[str, str], RESTStore]) -> None:
        self.rest = rest

    def service_account(self, namespace: str, name: str) -> Object | None:
        return cached(self.rest("v1", "serviceaccounts"), namespace, name)

    def secret(self, namespace: str, name: str) -> Object | None:
        return cached(self.rest("v1", "secrets"), namespace, name)

    def pod(self, namespace: str, name: str) -> Object | None:
        return cached(self.rest("v1", "pods"), namespace, name)

    def node(self, name: str) -> Object | None:
        return cached(self.rest("v1", "nodes"), "", name)


class Authentication:
    """What the options build for a running API server: the request authenticator, the token signer and the
    verification keys (which the TokenRequest API and the OIDC documents use too)."""

    def __init__(
        self,
        opts: AuthenticationOptions,
        rest: Callable[[str, str], RESTStore],
        pki_dir: Path,
        static_tokens: dict[str, UserInfo] | None = None,
        system_user: UserInfo | None = None,
        front_proxy: RequestHeaderAuthenticator | None = None,
        client_cas: tuple[x509.Certificate, ...] = (),
    ) -> None:
        """`front_proxy` comes first in the chain, as upstream's request-header authenticator; the certificates
        of its CAs that are not `client_cas` too are proxies', not users'."""
        self.options = opts
        self.front_proxy = front_proxy
        self.rest = rest
        self.api_audiences = opts.audiences
        self.issuers = opts.issuers
        signing_file = opts.service_account_signing_key_file or str(pki_dir / "sa.key")
        key_files = opts.service_account_key_files or (
            (str(pki_dir / "sa.pub"),) if not opts.service_account_signing_key_file else (signing_file,)
        )
        keys: list[PublicKey] = []
        for path in key_files:
            keys.extend(read_public_keys(path))
        self.keys = StaticPublicKeys(keys)
        self.generator = JWTTokenGenerator(self.issuers[0], read_signing_key(signing_file))
        self._system_user = system_user or UserInfo("system:apiserver", groups=("system:masters",))
        self._background: set[asyncio.Task[None]] = set()
        self.token_webhook: WebhookTokenAuthenticator | None = None
        self.oidc: OIDCAuthenticator | None = None  # its run() discovers the provider

        getter = CachedObjects(rest)
        tokens = dict(static_tokens or {})
        if opts.token_auth_file:
            tokens.update(TokenAuthenticator.from_csv(opts.token_auth_file).tokens)
        auds = self.api_audiences
        chain: list[object] = [AudienceAgnostic(TokenAuthenticator(tokens), auds)]
        legacy = LegacyTokenValidator(opts.service_account_lookup, getter, self._patch_last_used)
        chain.append(JWTTokenAuthenticator([LEGACY_ISSUER], self.keys, auds, legacy))
        chain.append(JWTTokenAuthenticator(self.issuers, self.keys, auds, BoundTokenValidator(getter)))
        if opts.enable_bootstrap_token_auth:
            secrets = rest("v1", "secrets")
            bootstrap = BootstrapTokenAuthenticator(lambda name: cached(secrets, BOOTSTRAP_NAMESPACE, name))
            chain.append(AudienceAgnostic(bootstrap, auds))
        if opts.oidc.enabled:
            self.oidc = OIDCAuthenticator(opts.oidc)
            chain.append(AudienceAgnostic(self.oidc, auds))
        if opts.token_webhook_config_file:  # last, as upstream's token union orders it
            self.token_webhook = WebhookTokenAuthenticator.from_kubeconfig(
                opts.token_webhook_config_file, opts.token_webhook_version, auds, opts.token_webhook_cache_ttl
            )
            chain.append(self.token_webhook)
        tokens_union = CachedTokenAuthenticator(TokenUnion(chain), opts.token_success_cache_ttl)  # type: ignore[arg-type]
        self.bearer = BearerTokenAuthenticator(tokens_union, auds)
        proxy_cas = tuple(ca for ca in front_proxy.cas if ca not in client_cas) if front_proxy else ()
        front = [front_proxy] if front_proxy is not None else []
        self.request_authenticator = Union(
            [*front, X509Authenticator(proxy_cas), self.bearer], anonymous=opts.anonymous_auth
        )

    def _patch_last_used(self, namespace: str, name: str, uid: str, date: str) -> None:
        """Label a legacy token's Secret with the day it was used, after the request (a write of its own)."""
        secrets = self.rest("v1", "secrets")

        async def updater(existing: Object | None) -> Object:
            if existing is None:
                raise secrets.not_found(name)
            existing["metadata"].setdefault("labels", {})[LAST_USED_LABEL] = date
            return existing

        async def patch() -> None:
            try:
                await secrets.update(namespace, name, updater, Context(self._system_user),
                                     preconditions=Preconditions(uid=uid or None))  # fmt: skip
            except Exception as err:  # the token was good; only the bookkeeping failed
                log.warning("labelling legacy service account token %s/%s with its last use: %s", namespace, name, err)

        try:
            task = asyncio.get_running_loop().create_task(patch())
        except RuntimeError:
            return  # no loop (a unit test): nothing to write with
        self._background.add(task)
        task.add_done_callback(self._background.discard)
