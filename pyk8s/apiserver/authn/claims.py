"""Bound service-account tokens (upstream: pkg/serviceaccount/claims.go): the claims a TokenRequest puts in a
token, and the checks a presented token passes — its times, and that the service account and the object it is
bound to (pod, secret or node) still exist with the UIDs the token names."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from typing import Any, Protocol

from ...api.meta import Object
from . import InvalidCredentials
from .jwt import LEEWAY, PublicClaims, Validation
from .serviceaccount import ServiceAccountInfo, credential_id_for_jti, make_username

# The expiry the ServiceAccount admission plugin gives projected tokens: such a token is made valid for a
# year instead, and its use after the hour only flagged (--service-account-extend-token-expiration).
WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 60 * 60 + 7
EXPIRATION_EXTENSION_SECONDS = 24 * 365 * 60 * 60
STALE_TOKEN_ANNOTATION = "authentication.k8s.io/stale-token"
PRIVATE_CLAIMS_KEY = "kubernetes.io"


class ObjectGetter(Protocol):
    """Where validators read the objects tokens name (the API server's watch caches); None when absent."""

    def service_account(self, namespace: str, name: str) -> Object | None: ...

    def secret(self, namespace: str, name: str) -> Object | None: ...

    def pod(self, namespace: str, name: str) -> Object | None: ...

    def node(self, name: str) -> Object | None: ...


def _ref(obj: Object | None) -> dict[str, str] | None:
    if obj is None:
        return None
    md = obj.get("metadata") or {}
    ref = {"name": md.get("name", ""), "uid": md.get("uid", "")}
    return {k: v for k, v in ref.items() if v}  # Go's omitempty


def claims(
    service_account: Object,
    pod: Object | None,
    secret: Object | None,
    node: Object | None,
    expiration_seconds: int,
    warn_after: int,
    audiences: list[str],
    now: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(registered claims, private claims) of a bound token. A pod-bound token also names the pod's node."""
    if secret is not None and (node is not None or pod is not None):
        raise ValueError("internal error, token can only be bound to one object type")
    t = int(now if now is not None else time.time())
    md = service_account["metadata"]
    registered: dict[str, Any] = {
        "sub": make_username(md["namespace"], md["name"]),
        "aud": list(audiences),
        "iat": t,
        "nbf": t,
        "exp": t + expiration_seconds,
        "jti": str(uuid.uuid4()),
    }
    if not audiences:
        del registered["aud"]
    private: dict[str, Any] = {"namespace": md["namespace"], "serviceaccount": _ref(service_account)}
    if pod is not None:
        private["pod"] = _ref(pod)
        if node is not None:
            private["node"] = _ref(node)
    elif secret is not None:
        private["secret"] = _ref(secret)
    elif node is not None:
        private["node"] = _ref(node)
    if warn_after:
        private["warnafter"] = t + warn_after
    return registered, {PRIVATE_CLAIMS_KEY: private}


def _deleted_before(obj: Object, limit: float) -> bool:
    ts = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not ts:
        return False
    try:
        when = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    return when < limit


def _uid(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _strings(ref: Any, what: str) -> tuple[str, str]:
    if ref is None:
        return "", ""
    if not isinstance(ref, dict) or not all(isinstance(ref.get(k, ""), str) for k in ("name", "uid")):
        raise InvalidCredentials(f"json: cannot unmarshal {what} claim")
    return ref.get("name", ""), ref.get("uid", "")


INVALIDATED = "service account token has been invalidated"


class BoundTokenValidator:
    """Upstream's `validator`: times first, then the service account, then the bound object."""

    def __init__(self, getter: ObjectGetter) -> None:
        self.getter = getter

    def validate(self, token: str, public: PublicClaims, payload: dict[str, Any]) -> Validation:
        now = time.time()
        if public.not_before is not None and now + LEEWAY < public.not_before:
            raise InvalidCredentials("service account token is not valid yet")
        if public.expiry is not None and now - LEEWAY > public.expiry:
            raise InvalidCredentials("service account token has expired")
        if public.issued_at is not None and now + LEEWAY < public.issued_at:
            raise InvalidCredentials("service account token is issued in the future")
        k8s = payload.get(PRIVATE_CLAIMS_KEY) or {}
        if not isinstance(k8s, dict) or not isinstance(k8s.get("namespace", ""), str):
            raise InvalidCredentials("json: cannot unmarshal kubernetes.io claim")
        namespace = k8s.get("namespace", "")
        sa_name, sa_uid = _strings(k8s.get("serviceaccount") or {}, "serviceaccount")
        pod_ref, secret_ref, node_ref = k8s.get("pod"), k8s.get("secret"), k8s.get("node")
        # Objects deleted before now minus the leeway no longer back a token.
        limit = now - LEEWAY

        sa = self.getter.service_account(namespace, sa_name)
        if sa is None:
            raise InvalidCredentials(f'serviceaccounts "{sa_name}" not found')
        if _uid(sa) != sa_uid:
            raise InvalidCredentials(f"service account UID ({_uid(sa)}) does not match claim ({sa_uid})")
        if _deleted_before(sa, limit):
            raise InvalidCredentials(f"service account {namespace}/{sa_name} has been deleted")

        if secret_ref is not None:
            name, uid = _strings(secret_ref, "secret")
            secret = self.getter.secret(namespace, name)
            if secret is None:
                raise InvalidCredentials(INVALIDATED)
            if uid != _uid(secret):
                raise InvalidCredentials(
                    f"secret UID ({_uid(secret)}) does not match service account secret ref claim ({uid})"
                )
            if _deleted_before(secret, limit):
                raise InvalidCredentials(INVALIDATED)

        pod_name = pod_uid = ""
        if pod_ref is not None:
            name, uid = _strings(pod_ref, "pod")
            pod = self.getter.pod(namespace, name)
            if pod is None:
                raise InvalidCredentials(INVALIDATED)
            if uid != _uid(pod):
                raise InvalidCredentials(f"pod UID ({_uid(pod)}) does not match service account pod ref claim ({uid})")
            if _deleted_before(pod, limit):
                raise InvalidCredentials(INVALIDATED)
            pod_name, pod_uid = name, uid

        node_name = node_uid = ""
        if node_ref is not None:
            name, uid = _strings(node_ref, "node")
            if pod_ref is None:
                node = self.getter.node(name)
                if node is None:
                    raise InvalidCredentials(INVALIDATED)
                if uid != _uid(node):
                    raise InvalidCredentials(
                        f"node UID ({_uid(node)}) does not match service account node ref claim ({uid})"
                    )
                if _deleted_before(node, limit):
                    raise InvalidCredentials(INVALIDATED)
            # A pod-bound token only reports the node it names; the pod is what binds it.
            node_name, node_uid = name, uid

        annotations: tuple[tuple[str, str], ...] = ()
        warn_after = k8s.get("warnafter")
        if isinstance(warn_after, int | float) and not isinstance(warn_after, bool) and warn_after:
            if now > warn_after:
                stale = f"subject: {public.subject}, seconds after warning threshold: {int(now) - int(warn_after)}"
                annotations = ((STALE_TOKEN_ANNOTATION, stale),)

        info = ServiceAccountInfo(namespace, sa_name, sa_uid, pod_name, pod_uid, credential_id_for_jti(public.jti),
                                  node_name, node_uid)  # fmt: skip
        return Validation(info, annotations=annotations)
