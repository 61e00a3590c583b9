"""The garbage collector's view of ownership: a graph of every object that owns or is owned, built from
informers on every deletable resource (upstream: pkg/controller/garbagecollector/graph.go and
graph_builder.go).

A node is one object, keyed by uid, with its owner references and the uids of its dependents. An owner
that is referenced but not (yet) observed gets a *virtual* node, and is queued for the collector to check
against the API server. The builder turns informer notifications into the collector's two work queues:
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
        for r in self.resources:
            informer = factory.informer_for(r)
            informer.add_event_handler(
                on_add=lambda obj, _initial, r=r: self._observe(r, obj),
                on_update=lambda _old, new, r=r: self._observe(r, new),
                on_delete=lambda obj, r=r: self._forget(r, obj),
            )
            self.informers.append(informer)

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)

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
            node = Node(_identity(resource, obj))
            self.nodes[uid] = node
            self._add_owner_links(node, owners)
        else:
            if node.virtual:
                # An owner we had only heard of: now observed, and its dependents are what they were.
                node.virtual = False
                node.identity = _identity(resource, obj)
            old = {ref["uid"] for ref in node.owners}
            new = {ref["uid"] for ref in owners}
            self._remove_owner_links(node, [ref for ref in node.owners if ref["uid"] not in new])
            node.owners = [ref for ref in node.owners if ref["uid"] in new]
            self._add_owner_links(node, [ref for ref in owners if ref["uid"] not in old])
            # blockOwnerDeletion may have changed on an existing reference.
            node.owners = owners
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
                # Nobody has seen this owner: the collector asks the API server whether it exists.
                self.attempt_to_delete.add(owner.uid)
            owner.dependents.add(node.uid)

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
