"""Admission for the requests that are not a plain create or update of a stored object (upstream: the handlers of
apiserver/pkg/endpoints/handlers — delete.go, rest.go `ConnectResource`, create.go for subresources — and
registry/rest's `AdmissionToValidateObjectDeleteFunc`):

- a DELETE (and each object of a deletecollection): the mutating then the validating phase, with the stored
  object as `oldObject`, no `object`, and the request's DeleteOptions as `options`;
- a CONNECT (pods/exec, attach, portforward, proxy; nodes/proxy): both phases with the connect options
  (PodExecOptions and its kin) as the object, before anything is looked up;
- a create on a subresource whose object is not stored (pods/binding, pods/eviction, serviceaccounts/token) or
  on a kind that is only created (the access reviews, TokenReview, SelfSubjectReview): the mutating phase when
  the request is read, the validating phase where upstream's REST object calls its createValidation.

A write the registry makes on the caller's behalf afterwards (the pod a Binding assigns, the pod an Eviction
deletes) is not admitted again, as upstream's REST objects write with `ValidateAllObjectFunc`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...api.meta import Object, json_copy
from ...api.resources import Resource
from ..admission import CONNECT, CREATE, DELETE, Attributes, Chain
from ..authn import UserInfo

if TYPE_CHECKING:
    from .rest import Context, DeleteOptions

# What validating admission is, for a REST object that calls it itself (upstream rest.ValidateObjectFunc).
CreateValidation = Callable[[Object], Awaitable[None]]


def delete_options_json(opts: DeleteOptions) -> dict[str, Any]:
    """The request's DeleteOptions as webhooks and policies read them (dryRun is added from the request's own
    flag when the review is built)."""
    out: dict[str, Any] = {}
    if opts.grace_period_seconds is not None:
        out["gracePeriodSeconds"] = opts.grace_period_seconds
    pre = opts.preconditions
    if pre is not None and (pre.uid is not None or pre.resource_version is not None):
        out["preconditions"] = {k: v for k, v in (("uid", pre.uid), ("resourceVersion", pre.resource_version))
                                if v is not None}  # fmt: skip
    if opts.orphan_dependents is not None:
        out["orphanDependents"] = opts.orphan_dependents
    if opts.propagation_policy is not None:
        out["propagationPolicy"] = opts.propagation_policy
    return out


async def admit_delete(
    chain: Chain, resource: Resource, namespace: str, name: str, old: Object, opts: DeleteOptions, ctx: Context
) -> None:
    """Both phases of a delete of `old` (a copy is handed over: plugins must not change what is stored)."""
    attrs = Attributes(DELETE, resource, "", namespace, name, None, json_copy(old), ctx.user, ctx.dry_run,
                       options=delete_options_json(opts))  # fmt: skip
    await chain.admit(attrs)
    await chain.validate(attrs)


async def admit_connect(
    chain: Chain, resource: Resource, subresource: str, namespace: str, name: str, options: Object, user: UserInfo
) -> None:
    """Both phases of a CONNECT; `options` is the connect options object (upstream: the handler's `opts`)."""
    attrs = Attributes(CONNECT, resource, subresource, namespace, name, options, None, user)
    await chain.admit(attrs)
    await chain.validate(Attributes(CONNECT, resource, subresource, namespace, name, attrs.object or options, None,
                                    user))  # fmt: skip


async def admit_create(
    chain: Chain, resource: Resource, subresource: str, namespace: str, name: str, obj: Object, ctx: Context
) -> tuple[Object, CreateValidation]:
    """The mutating phase of a create whose object is not stored as sent; returns the (possibly changed) object
    and the validating phase, for the REST object to call where upstream's calls createValidation."""
    attrs = Attributes(CREATE, resource, subresource, namespace, name, obj, None, ctx.user, ctx.dry_run)
    await chain.admit(attrs)

    async def validate(current: Object) -> None:
        await chain.validate(Attributes(CREATE, resource, subresource, namespace, name, json_copy(current), None,
                                        ctx.user, ctx.dry_run))  # fmt: skip

    return attrs.object if attrs.object is not None else obj, validate
