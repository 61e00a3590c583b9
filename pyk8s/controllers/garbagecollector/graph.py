"""The garbage collector's view of ownership: a graph of every object that owns or is owned, built from
informers on every deletable resource (upstream: pkg/controller/garbagecollector/graph.go and
graph_builder.go).

A node is one object, keyed by uid, with its owner references and the uids of its dependents. An owner
that is referenced but not (yet) observed gets a *virtual* node, and the dependent is queued so the collector
checks that owner against the API server through the dependent's own reference. The builder turns informer notifications into the collector's two work queues:
`attempt_to_delete` (an object whose owners may be gone, or an owner deleting in the foreground) and
`attempt_to_orphan` (an owner deleted with the `orphan` finalizer, whose dependents must be released).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...api.resources import Resource
from ...client.cache import DeletedFinalStateUnknown, SharedInformerFactory
from ...client.workqueue import RateLimitingQueue

log = logging.getLogger(__name__)

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"


@dataclass
class ObjectReference:
    """Who an object is: enough to find it through the API (upstream: objectReference)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}.{self.api_version} {where}{self.name} ({self.uid})"


@dataclass
class Node:
    identity: ObjectReference
    owners: list[dict[str, Any]] = field(default_factory=list)
    dependents: set[str] = field(default_factory=set)
    virtual: bool = False
    being_deleted: bool = False
    deleting_dependents: bool = False  # deletionTimestamp and the foregroundDeletion finalizer
    orphaning: bool = False  # deletionTimestamp and the orphan finalizer

    @property
    def uid(self) -> str:
        return self.identity.uid


def _identity(resource: Resource, obj: dict[str, Any]) -> ObjectReference:
    md = obj.get("metadata") or {}
    return ObjectReference(
        resource.api_version, resource.kind, md.get("namespace") or "", md.get("name") or "", md.get("uid") or ""
    )


def _names(ref: dict[str, Any], owner: Node, dependent: Node) -> bool:
    """Whether an owner reference names the observed owner exactly (upstream: ownerReferenceMatchesCoordinates
    and the namespace check for namespaced owners)."""
    ident = owner.identity
    if ref.get("name") != ident.name or ref.get("kind") != ident.kind:
        return False
    if ref.get("apiVersion", "").rpartition("/")[0] != ident.api_version.rpartition("/")[0]:
        return False  # another group; another version of the same group is the same object
    return not ident.namespace or ident.namespace == dependent.identity.namespace


class GraphBuilder:
    """Keeps the ownership graph equal to what the informers see, and feeds the collector's queues."""

    # Events are never owners in practice and are the noisiest resource: upstream ignores them too.
    IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})

    def __init__(self, factory: SharedInformerFactory, resources: Iterable[Resource]) -> None:
        self.factory = factory
        self.resources = [r for r in resources if (r.group, r.plural) not in self.IGNORED]
        self.nodes: dict[str, Node] = {}
        self.attempt_to_delete: RateLimitingQueue[str] = RateLimitingQueue(name="garbage_collector_attempt_to_delete")
        self.attempt_to_orphan: RateLimitingQueue[str] = RateLimitingQueue(name="garbage_collector_attempt_to_orphan")
        self.informers = []
        self.registrations = []
        self._monitors: dict[Resource, tuple[Any, Any]] = {}  # resource -> (informer, registration)
        for r in self.resources:
            self._monitor(r)

    def _monitor(self, r: Resource) -> Any:
        informer = self.factory.informer_for(r)
        reg = informer.add_event_handler(
            on_add=lambda obj, _initial, r=r: self._observe(r, obj),
            on_update=lambda _old, new, r=r: self._observe(r, new),
            on_delete=lambda obj, r=r: self._forget(r, obj),
        )
        self.informers.append(informer)
        self.registrations.append(reg)
        self._monitors[r] = (informer, reg)
        return informer

    def sync_monitors(self, resources: Iterable[Resource]) -> tuple[list[Resource], list[Resource]]:
        """Monitor exactly `resources` beyond the ones given at start (upstream: GraphBuilder.syncMonitors,
        as discovery finds resources come and go): returns (added, removed). The factory must be started
        again for the added ones."""
        wanted = {r for r in resources if (r.group, r.plural) not in self.IGNORED}
        fixed = set(self.resources)
        added = [r for r in wanted if r not in self._monitors]
        removed = [r for r in self._monitors if r not in fixed and r not in wanted]
        for r in added:
            self._monitor(r)
        for r in removed:
            informer, reg = self._monitors.pop(r)
            informer.remove_event_handler(reg)
            self.informers.remove(informer)
            self.registrations.remove(reg)
        return added, removed

    def has_synced(self) -> bool:
        """True once every informer's first list has been through this builder's handlers."""
        return all(reg.has_synced() for reg in self.registrations)

    # -- graph updates --------------------------------------------------------------------------------

    def _observe(self, resource: Resource, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        uid = md.get("uid")
        if not uid:
            return
        owners = [ref for ref in md.get("ownerReferences") or [] if isinstance(ref, dict) and ref.get("uid")]
        finalizers = md.get("finalizers") or []
        deleting = bool(md.get("deletionTimestamp"))
        node = self.nodes.get(uid)
        if node is None:
            node = Node(_identity(resource, obj), owners=owners)
            self.nodes[uid] = node
            self._add_owner_links(node, owners)
        elif node.virtual or owners != node.owners:  # most updates (a status write) leave the references alone
            if node.virtual:
                # An owner we had only heard of: now observed, and its dependents are what they were.
                node.virtual = False
                node.identity = _identity(resource, obj)
            old_refs = {ref["uid"]: ref for ref in node.owners}
            new_refs = {ref["uid"]: ref for ref in owners}
            self._remove_owner_links(node, [ref for u, ref in old_refs.items() if u not in new_refs])
            self._add_owner_links(node, [ref for u, ref in new_refs.items() if u not in old_refs])
            node.owners = owners
            for u, ref in new_refs.items():
                before = old_refs.get(u)
                if before is not None and before.get("blockOwnerDeletion") and not ref.get("blockOwnerDeletion"):
                    # No longer blocking: an owner deleting in the foreground may have been waiting on this one.
                    owner = self.nodes.get(u)
                    if owner is not None and owner.deleting_dependents:
                        self.attempt_to_delete.add(u)
        node.being_deleted = deleting
        was_deleting_dependents = node.deleting_dependents
        node.deleting_dependents = deleting and FINALIZER_FOREGROUND in finalizers
        node.orphaning = deleting and FINALIZER_ORPHAN in finalizers
        if node.orphaning:
            self.attempt_to_orphan.add(uid)
        if node.deleting_dependents:
            if not was_deleting_dependents:
                # Foreground deletion has begun: every dependent must go (or be released) first.
                for dep in node.dependents:
                    self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(uid)

    def _add_owner_links(self, node: Node, refs: list[dict[str, Any]]) -> None:
        for ref in refs:
            owner = self.nodes.get(ref["uid"])
            if owner is None:
                ns = node.identity.namespace
                owner = Node(
                    ObjectReference(
                        ref.get("apiVersion", ""), ref.get("kind", ""), ns, ref.get("name", ""), ref["uid"]
                    ),
                    virtual=True,
                )
                self.nodes[owner.uid] = owner
            owner.dependents.add(node.uid)
            if owner.virtual or not _names(ref, owner, node):
                # Nobody has observed this owner (or it was deleted), or the reference names the uid under
                # other coordinates (another name or kind, another namespace): the collector checks it
                # against the API server through this dependent's own reference.
                self.attempt_to_delete.add(node.uid)

    def _remove_owner_links(self, node: Node, refs: list[dict[str, Any]]) -> None:
        for ref in refs:
            owner = self.nodes.get(ref["uid"])
            if owner is None:
                continue
            owner.dependents.discard(node.uid)
            if owner.deleting_dependents:
                self.attempt_to_delete.add(owner.uid)  # maybe its last blocking dependent just left
            if owner.virtual and not owner.dependents:
                del self.nodes[owner.uid]

    def _forget(self, resource: Resource, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        uid = (obj.get("metadata") or {}).get("uid") if isinstance(obj, dict) else None
        if not uid:
            return
        node = self.nodes.get(uid)
        if node is None:
            return
        self.remove_node(node)

    def remove_node(self, node: Node) -> None:
        """The object is gone: its dependents may be orphans now, its owners may be done waiting."""
        self.nodes.pop(node.uid, None)
        self._remove_owner_links(node, node.owners)
        for dep in node.dependents:
            self.attempt_to_delete.add(dep)
        if node.dependents:
            # Keep a virtual stand-in while dependents still point at it, so their links stay coherent.
            ghost = Node(node.identity, dependents=set(node.dependents), virtual=True)
            self.nodes[node.uid] = ghost

    def blocking_dependents(self, node: Node) -> list[Node]:
        """Dependents whose reference to `node` says blockOwnerDeletion: foreground deletion waits for them."""
        out = []
        for uid in node.dependents:
            dep = self.nodes.get(uid)
            if dep is None or dep.virtual:
                continue
            for ref in dep.owners:
                if ref.get("uid") == node.uid and ref.get("blockOwnerDeletion"):
                    out.append(dep)
                    break
        return out

    def shut_down(self) -> None:
        self.attempt_to_delete.shut_down()
        self.attempt_to_orphan.shut_down()
