"""Bootstrap tokens (upstream: plugin/pkg/auth/authenticator/token/bootstrap, and cluster-bootstrap's token
API): `<id>.<secret>` tokens backed by `kube-system/bootstrap-token-<id>` Secrets, with which nodes join a
cluster. A token that does not match its Secret in every way is simply not recognised (never an error), so the
other authenticators still have their say."""

from __future__ import annotations

import base64
import datetime as dt
import hmac
import logging
import re
from collections.abc import Callable

from ...api.meta import Object
from . import UserInfo
from .bearertoken import Response

log = logging.getLogger("pyk8s.apiserver.authn")

TOKEN_PATTERN = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{16})\Z")
SECRET_PREFIX = "bootstrap-token-"
SECRET_TYPE = "bootstrap.kubernetes.io/token"
USER_PREFIX = "system:bootstrap:"
DEFAULT_GROUP = "system:bootstrappers"
GROUP_PATTERN = re.compile(r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\Z")
NAMESPACE = "kube-system"

# kube-system Secrets by name (the API server's watch cache)
SecretLister = Callable[[str], Object | None]


def _data(secret: Object, key: str) -> str:
    raw = (secret.get("data") or {}).get(key)
    if raw is None:
        return ""
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8", "replace")
    except ValueError:
        return ""


def has_expired(secret: Object, now: dt.datetime) -> bool:
    """Missing expiration: never; unparsable: already (upstream: bootstrapsecretutil.HasExpired)."""
    expiration = _data(secret, "expiration")
    if not expiration:
        return False
    try:
        when = dt.datetime.fromisoformat(expiration.replace("Z", "+00:00"))
    except ValueError:
        log.info("bootstrap token secret %s has an unparsable expiration %r", secret["metadata"]["name"], expiration)
        return True
    if when.tzinfo is None:
        return True  # RFC 3339 requires an offset
    return now > when


def groups_of(secret: Object) -> list[str] | None:
    """system:bootstrappers and the `auth-extra-groups`, sorted; None when an extra group is not valid."""
    groups = {DEFAULT_GROUP}
    extra = _data(secret, "auth-extra-groups")
    if extra:
        for g in extra.split(","):
            if not GROUP_PATTERN.match(g):
                return None
            groups.add(g)
    return sorted(groups)


class BootstrapTokenAuthenticator:
    def __init__(self, secrets: SecretLister) -> None:
        self.secrets = secrets

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        m = TOKEN_PATTERN.match(token)
        if m is None:
            return None
        token_id, token_secret = m.groups()
        secret = self.secrets(SECRET_PREFIX + token_id)
        if secret is None:
            return None
        name = secret["metadata"]["name"]
        if secret["metadata"].get("deletionTimestamp"):
            return None
        if secret.get("type") != SECRET_TYPE or not secret.get("data"):
            log.info("bootstrap secret %s/%s matching bearer token has invalid type", NAMESPACE, name)
            return None
        if not hmac.compare_digest(_data(secret, "token-secret").encode(), token_secret.encode()):
            return None
        if _data(secret, "token-id") != token_id:
            return None
        if has_expired(secret, dt.datetime.now(dt.UTC)):
            return None
        if _data(secret, "usage-bootstrap-authentication") != "true":
            return None
        groups = groups_of(secret)
        if groups is None:
            log.info("bootstrap secret %s/%s has an invalid auth-extra-groups value", NAMESPACE, name)
            return None
        return Response(UserInfo(USER_PREFIX + token_id, groups=tuple(groups)))
