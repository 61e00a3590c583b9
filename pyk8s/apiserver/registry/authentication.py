"""The authentication.k8s.io kinds that are created and answered, never stored (upstream:
pkg/registry/authentication/tokenreview and selfsubjectreview): TokenReview — who a bearer token is, for
webhook authenticators and for anything that checks tokens — and SelfSubjectReview, who the caller is
(`kubectl auth whoami`). Registered with `ResourceHandlers.create_only` by `install`."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ...api import errors
from ...api.meta import Object, rfc3339
from .. import deferred
from ..authn import ANONYMOUS_USER, InvalidCredentials, UserInfo, with_authenticated_group
from ..authn.bearertoken import intersect
from ..authn.options import Authentication
from ..request_info import RequestInfo
from .rest import Context

GROUP = "authentication.k8s.io"


def user_info(user: UserInfo) -> dict[str, Any]:
    """An authentication/v1 UserInfo, empty fields left out as Go's omitempty does."""
    out: dict[str, Any] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


class TokenReviews:
    """`POST /apis/authentication.k8s.io/v1/tokenreviews`: the token as if it came in an Authorization header,
    for the review's audiences (the API audiences when it names none)."""

    def __init__(self, authentication: Authentication) -> None:
        self.authentication = authentication

    async def create(self, obj: Object, info: RequestInfo, ctx: Context, request: web.Request) -> Object:
        spec = obj.get("spec") or {}
        token = spec.get("token") or ""
        if not token:
            raise errors.bad_request("token is required for TokenReview in authentication")
        auth = self.authentication
        audiences = tuple(spec.get("audiences") or ()) or auth.api_audiences
        # As the Authorization header would be read: a token after an extra space is no token.
        parts = ("Bearer " + token).strip().split(" ", 2)
        presented = parts[1] if len(parts) > 1 else ""
        user: UserInfo | None = None
        user_audiences: tuple[str, ...] = ()
        error = ""
        if presented:
            try:
                resp = await deferred.resolve(auth.bearer.authenticate_token, presented, audiences)
            except InvalidCredentials as err:
                error = str(err)
            else:
                user, user_audiences = with_authenticated_group(resp.user), resp.audiences
        elif auth.request_authenticator.anonymous:
            user = ANONYMOUS_USER  # what the chain makes of a request without a token
        if user is not None and audiences and not intersect(audiences, user_audiences):
            raise errors.internal_error("error validating audiences")
        # Go's omitempty: only `user` (a struct) is always written
        status: dict[str, Any] = {"authenticated": True} if user is not None else {}
        status["user"] = user_info(user) if user is not None else {}
        if user_audiences:
            status["audiences"] = list(user_audiences)
        if error:
            status["error"] = error
        metadata = obj.get("metadata") or {}
        metadata.setdefault("creationTimestamp", None)
        return {"kind": "TokenReview", "apiVersion": obj.get("apiVersion", f"{GROUP}/v1"), "metadata": metadata,
                "spec": spec, "status": status}  # fmt: skip


async def self_subject_review(obj: Object, info: RequestInfo, ctx: Context, request: web.Request) -> Object:
    """`POST /apis/authentication.k8s.io/v1/selfsubjectreviews`: the caller, as authenticated (and
    impersonated)."""
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": obj.get("apiVersion", f"{GROUP}/v1"),
        "metadata": {"creationTimestamp": rfc3339()},
        "status": {"userInfo": user_info(ctx.user)},
    }


def install(create_only: dict[tuple[str, str], Any], authentication: Authentication) -> None:
    """Serve the two kinds through `ResourceHandlers.create_only`."""
    create_only[(GROUP, "tokenreviews")] = TokenReviews(authentication).create
    create_only[(GROUP, "selfsubjectreviews")] = self_subject_review
