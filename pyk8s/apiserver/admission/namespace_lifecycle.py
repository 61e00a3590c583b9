"""NamespaceLifecycle (upstream plugin of the same name): new objects only in namespaces that exist and are
not terminating, and the system namespaces cannot be deleted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...api import errors
from ...api.meta import Object
from . import CREATE, DELETE, Attributes

IMMORTAL = ("default", "kube-system", "kube-public")


class NamespaceLifecycle:
    name = "NamespaceLifecycle"

    def __init__(self, get_namespace: Callable[[str], Awaitable[Object | None]]) -> None:
        self.get_namespace = get_namespace

    async def admit(self, a: Attributes) -> None:
        if a.resource.plural == "namespaces" and a.resource.group == "":
            if a.operation == DELETE and a.name in IMMORTAL:
                raise errors.forbidden_request("namespaces", a.name, "this namespace may not be deleted")
            return
        if a.operation != CREATE or not a.resource.namespaced or not a.namespace:
            return
        if (a.resource.group, a.resource.plural) == ("authorization.k8s.io", "localsubjectaccessreviews"):
            return  # an access review says nothing about its namespace, not even that it is missing (upstream)
        ns = await self.get_namespace(a.namespace)
        if ns is None:
            raise errors.not_found("namespaces", a.namespace)
        terminating = ns["metadata"].get("deletionTimestamp") or (ns.get("status") or {}).get("phase") == "Terminating"
        if terminating and not (a.resource.plural == "events" and a.resource.group in ("", "events.k8s.io")):
            err = errors.forbidden_request(
                a.resource.plural,
                a.name,
                f"unable to create new content in namespace {a.namespace} because it is being terminated",
                a.resource.group,
            )
            # The cause lets controllers tell this refusal from others and stay quiet about it, as upstream's.
            cause = {"type": errors.NAMESPACE_TERMINATING_CAUSE, "message": f"namespace {a.namespace} is being terminated",
                     "field": "metadata.namespace"}  # fmt: skip
            err.details = {**(err.details or {}), "causes": [*(err.details or {}).get("causes", []), cause]}
            raise err

    async def validate(self, a: Attributes) -> None:
        if (
            a.operation == DELETE
            and a.resource.plural == "namespaces"
            and a.resource.group == ""
            and a.name in IMMORTAL
        ):
            raise errors.forbidden_request("namespaces", a.name, "this namespace may not be deleted")
