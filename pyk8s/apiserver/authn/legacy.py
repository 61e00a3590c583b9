"""Secret-based service-account tokens (upstream: pkg/serviceaccount/legacy.go): tokens of issuer
`kubernetes/serviceaccount` that a `kubernetes.io/service-account-token` Secret holds. With
`--service-account-lookup` (the default) such a token is good only while its Secret exists and holds exactly
it, and its service account exists with the UID it names; each day it is used, its Secret is labelled with
the date (`kubernetes.io/legacy-token-last-used`)."""

from __future__ import annotations

import base64
import datetime as dt
import hmac
from collections.abc import Callable
from typing import Any

from ...api.meta import Object
from . import InvalidCredentials
from .claims import ObjectGetter
from .jwt import PublicClaims, Validation
from .serviceaccount import InvalidUsername, ServiceAccountInfo, make_username, split_username

LEGACY_ISSUER = "kubernetes/serviceaccount"
LAST_USED_LABEL = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"
AUTO_GENERATED_WARNING = (
    "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated "
    "secret-based tokens."
)
_NAMESPACE = "kubernetes.io/serviceaccount/namespace"
_SECRET_NAME = "kubernetes.io/serviceaccount/secret.name"
_SA_NAME = "kubernetes.io/serviceaccount/service-account.name"
_SA_UID = "kubernetes.io/serviceaccount/service-account.uid"

# Labels a Secret with the day its token was used: (namespace, name, uid, date).
LastUsedPatcher = Callable[[str, str, str, str], None]


def legacy_claims(service_account: Object, secret: Object) -> tuple[dict[str, Any], dict[str, Any]]:
    """(registered, private) claims of the token a service-account-token Secret holds (no expiry, no
    audience)."""
    sa = service_account["metadata"]
    return {"sub": make_username(sa["namespace"], sa["name"])}, {
        _SA_NAME: sa["name"],
        _SA_UID: sa.get("uid", ""),
        _SECRET_NAME: secret["metadata"]["name"],
        _NAMESPACE: sa["namespace"],
    }


def _secret_token(secret: Object) -> bytes:
    raw = (secret.get("data") or {}).get("token") or ""
    try:
        return base64.b64decode(raw, validate=True)
    except ValueError:
        return b""


class LegacyTokenValidator:
    def __init__(self, lookup: bool, getter: ObjectGetter, patch_last_used: LastUsedPatcher | None = None) -> None:
        self.lookup = lookup
        self.getter = getter
        self.patch_last_used = patch_last_used

    def validate(self, token: str, public: PublicClaims, payload: dict[str, Any]) -> Validation:
        if not public.subject:
            raise InvalidCredentials("sub claim is missing")
        fields = {k: payload.get(k, "") for k in (_NAMESPACE, _SECRET_NAME, _SA_NAME, _SA_UID)}
        if not all(isinstance(v, str) for v in fields.values()):
            raise InvalidCredentials("json: cannot unmarshal legacy service account claims")
        namespace, secret_name = fields[_NAMESPACE], fields[_SECRET_NAME]
        sa_name, sa_uid = fields[_SA_NAME], fields[_SA_UID]
        for value, what in ((namespace, "namespace"), (secret_name, "secretName"), (sa_name, "serviceAccountName"),
                            (sa_uid, "serviceAccountUID")):  # fmt: skip
            if not value:
                raise InvalidCredentials(f"{what} claim is missing")
        try:
            sub_namespace, sub_name = split_username(public.subject)
        except InvalidUsername:
            raise InvalidCredentials("sub claim is invalid") from None
        if sub_namespace != namespace or sub_name != sa_name:
            raise InvalidCredentials("sub claim is invalid")
        info = ServiceAccountInfo(namespace, sa_name, sa_uid)
        if not self.lookup:
            return Validation(info)

        secret = self.getter.secret(namespace, secret_name)
        if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp"):
            raise InvalidCredentials("Token has been invalidated")
        if not hmac.compare_digest(_secret_token(secret), token.encode("utf-8", "surrogateescape")):
            raise InvalidCredentials("Token does not match server's copy")
        sa = self.getter.service_account(namespace, sa_name)
        if sa is None:
            raise InvalidCredentials(f'serviceaccounts "{sa_name}" not found')
        if (sa.get("metadata") or {}).get("deletionTimestamp"):
            raise InvalidCredentials(f"ServiceAccount {namespace}/{sa_name} has been deleted")
        actual_uid = (sa.get("metadata") or {}).get("uid", "")
        if actual_uid != sa_uid:
            raise InvalidCredentials(f"ServiceAccount UID ({actual_uid}) does not match claim ({sa_uid})")

        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get(INVALID_SINCE_LABEL):
            # (upstream's annotation value is name/namespace, in that order)
            self._mark_used(secret)
            raise InvalidCredentials(
                f"the token in secret {namespace}/{secret_name} for service account {namespace}/{sa_name} has been "
                "marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or "
                f"remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token"
            )
        warnings: tuple[str, ...] = ()
        if any((ref or {}).get("name") == secret_name for ref in sa.get("secrets") or ()):
            warnings = (AUTO_GENERATED_WARNING,)
            annotation = ("authentication.k8s.io/legacy-token-autogenerated-secret", secret_name)
        else:
            annotation = ("authentication.k8s.io/legacy-token-manual-secret", secret_name)
        self._mark_used(secret)
        return Validation(info, warnings, (annotation,))

    def _mark_used(self, secret: Object) -> None:
        if self.patch_last_used is None:
            return
        now = dt.datetime.now(dt.UTC)
        today = now.strftime("%Y-%m-%d")
        tomorrow = (now + dt.timedelta(days=1)).strftime("%Y-%m-%d")
        md = secret["metadata"]
        if (md.get("labels") or {}).get(LAST_USED_LABEL) not in (today, tomorrow):
            self.patch_last_used(md["namespace"], md["name"], md.get("uid", ""), today)
