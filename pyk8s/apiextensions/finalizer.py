"""Deleting a CRD deletes its objects first (upstream: apiextensions-apiserver
pkg/controller/finalizer/crd_finalizer.go).

A deleted CRD keeps its `customresourcecleanup.apiextensions.k8s.io` finalizer while this controller deletes
every object of its resource, namespace by namespace, and waits until none is left (objects with finalizers
of their own go when those are done); the `Terminating` condition says how far it got. Then the finalizer
is removed and the CRD goes.
"""

from __future__ import annotations

import asyncio
import logging

from ..api import errors
from ..api.meta import Object, json_copy
from ..apiserver.registry.rest import DeleteOptions, ListOptions, RESTStore
from . import apihelpers as h
from .crd_controller import CRDController
from .customresource_handler import CustomResourceHandler, system_context

log = logging.getLogger("pyk8s.apiextensions")

POLL_SECONDS = 0.5  # upstream polls every 5 s for a minute; in process, the cache answers at once
WAIT_SECONDS = 60.0


class CRDFinalizer(CRDController):
    def __init__(self, crds: RESTStore, handler: CustomResourceHandler) -> None:
        super().__init__(crds, "CustomResourceDefinition-CRDFinalizer")
        self.handler = handler

    def on_event(self, event_type: str, crd: Object) -> None:
        if event_type != "DELETED" and crd["metadata"].get("deletionTimestamp"):
            self.queue.add(crd["metadata"]["name"])

    async def _write_status(self, crd: Object) -> Object | None:
        """The CRD's status (and finalizers) as `crd` has them; None when it is gone or changed meanwhile."""
        name = crd["metadata"]["name"]

        async def updater(current: Object | None) -> Object:
            if current is None:
                raise self.crds.not_found(name)
            if current["metadata"].get("resourceVersion") != crd["metadata"].get("resourceVersion"):
                raise self.crds.conflict(name)
            h.stored_status(crd)
            return crd

        try:
            written, _ = await self.crds.update("", name, updater, system_context(), subresource="status")
        except errors.StatusError as err:
            if err.code in (404, 409):
                return None
            raise
        return written

    async def sync(self, name: str) -> bool:
        """Clean up after one deleted CRD; True when it should be tried again."""
        entry = self.crds.cacher.get(self.crds.key("", name))
        if entry is None:
            return False
        crd = entry.obj
        if not crd["metadata"].get("deletionTimestamp") or not h.has_finalizer(crd, h.CLEANUP_FINALIZER):
            return False
        crd = json_copy(crd)
        h.set_condition(
            crd, h.TERMINATING, "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"
        )
        written = await self._write_status(crd)
        if written is None:
            return False
        crd = json_copy(written)
        if h.is_condition_true(crd, h.ESTABLISHED):
            status, reason, message = await self._delete_instances(name)
            h.set_condition(crd, h.TERMINATING, status, reason, message)
            if status == "True":
                await self._write_status(crd)
                return True
        else:
            h.set_condition(crd, h.TERMINATING, "False", "NeverEstablished", "resource was never established")
        md = crd["metadata"]
        md["finalizers"] = [f for f in md.get("finalizers") or [] if f != h.CLEANUP_FINALIZER]
        if not md["finalizers"]:
            del md["finalizers"]  # omitempty
        await self._write_status(crd)
        return False

    async def _delete_instances(self, name: str) -> tuple[str, str, str]:
        """Delete every object of the CRD's resource and wait for them to go: the Terminating condition."""
        rest = self.handler.rest_of(name)
        if rest is None:
            msg = f"could not list instances: unable to find a custom resource client for {name}"
            return "True", "InstanceDeletionFailed", msg
        try:
            listed = await rest.list_objects("", ListOptions())
        except errors.StatusError as err:
            return "True", "InstanceDeletionFailed", f"could not list instances: {err}"
        problems: list[str] = []
        ctx = system_context()
        for ns in sorted({o["metadata"].get("namespace", "") for o in listed.items}):
            try:
                await rest.delete_collection(ns, ListOptions(), DeleteOptions(), ctx)
            except errors.StatusError as err:
                problems.append(str(err))
        if problems:
            detail = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
            return "True", "InstanceDeletionFailed", f"could not issue all deletes: {detail}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        while True:
            remaining = len((await rest.list_objects("", ListOptions())).items)
            if remaining == 0:
                return "False", "InstanceDeletionCompleted", "removed all instances"
            if loop.time() >= deadline:
                return (
                    "True",
                    "InstanceDeletionCheck",
                    "could not confirm zero CustomResources remaining: timed out waiting for the condition",
                )
            await asyncio.sleep(POLL_SECONDS)
