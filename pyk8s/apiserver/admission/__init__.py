"""Admission: plugins that see every write after defaulting and before storage (upstream:
apiserver/pkg/admission). Mutating plugins run first (`admit`), then validating ones (`validate`).

The chain is built once per server; `NamespaceLifecycle` is always on (objects only in namespaces that exist
and are not terminating, and the system namespaces cannot be deleted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ...api.meta import Object
from ...api.resources import Resource
from ..authn import UserInfo

CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"


@dataclass
class Attributes:
    """What a plugin knows about one write (upstream: admission.Attributes)."""

    operation: str
    resource: Resource
    subresource: str
    namespace: str
    name: str
    object: Object | None
    old_object: Object | None
    user: UserInfo
    dry_run: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    reinvocation: ReinvocationContext = field(default_factory=lambda: ReinvocationContext())


@dataclass
class ReinvocationContext:
    """Whether the mutating phase runs a second time (upstream: admission.ReinvocationContext): a plugin that
    changed the object after one that asked to be re-run sets `should_reinvoke`; `values` keeps what plugins
    remember between the two passes."""

    is_reinvoke: bool = False
    should_reinvoke: bool = False
    values: dict[str, Any] = field(default_factory=dict)


class Plugin(Protocol):
    name: str

    async def admit(self, a: Attributes) -> None:
        """May change `a.object`; raises a StatusError to refuse."""
        ...

    async def validate(self, a: Attributes) -> None:
        """May not change anything; raises a StatusError to refuse."""
        ...


class Chain:
    """The configured plugins, in order."""

    def __init__(self, plugins: list[Plugin]) -> None:
        self.plugins = plugins

    async def admit(self, a: Attributes) -> None:
        for p in self.plugins:
            await p.admit(a)
        if a.reinvocation.should_reinvoke and not a.reinvocation.is_reinvoke:
            # Once more, every plugin (upstream's reinvoker): the in-tree ones are idempotent, and webhooks
            # with reinvocationPolicy IfNeeded see what the ones after them changed.
            a.reinvocation.is_reinvoke = True
            for p in self.plugins:
                await p.admit(a)

    async def validate(self, a: Attributes) -> None:
        for p in self.plugins:
            await p.validate(a)
