"""Which names a CRD may have, and when its resource is established (upstream: apiextensions-apiserver
pkg/controller/status/naming_controller.go and pkg/controller/establish/establishing_controller.go).

A CRD asks for a plural, a singular, short names, a kind and a list kind; within its group each can belong to
one CRD only. The naming controller accepts the names nobody else holds into `status.acceptedNames` and says
so in the `NamesAccepted` condition (`"<name>" is already in use` for the others). Once a CRD's names are
accepted its resource is established: `Established` turns True. Upstream lets a second controller do that
after the HA peers' handlers have caught up; with the handler in this process it follows at once, so the two
steps are one controller here (the intermediate `Installing` state is still written, as upstream does).
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.meta import Object
from ..apiserver.registry.rest import RESTStore
from . import apihelpers as h
from .crd_controller import CRDController
from .customresource_handler import system_context


def accepted_names_in_group(crds: list[Object], group: str) -> tuple[set[str], set[str]]:
    """The resource names and the kinds the CRDs of `group` hold now."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for crd in crds:
        if (crd.get("spec") or {}).get("group") != group:
            continue
        acc = (crd.get("status") or {}).get("acceptedNames") or {}
        resources.update([acc.get("plural", ""), acc.get("singular", "")])
        resources.update(acc.get("shortNames") or [])
        kinds.update([acc.get("kind", ""), acc.get("listKind", "")])
    return resources, kinds


def _claim(requested: str, accepted: str, used: set[str]) -> str | None:
    """Why `requested` cannot be had, or None: a name it holds already, or one nobody holds, is fine."""
    if requested == accepted or requested not in used:
        return None
    return f"{errors.go_quote(requested)} is already in use"


def names_and_conditions(crd: Object, all_crds: list[Object]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The accepted names, the NamesAccepted condition and the Established condition a CRD should have
    (each condition as {status, reason, message})."""
    spec = crd.get("spec") or {}
    status = crd.get("status") or {}
    requested = spec.get("names") or {}
    accepted = status.get("acceptedNames") or {}
    resources, kinds = accepted_names_in_group(all_crds, spec.get("group", ""))
    new = dict(accepted)
    cond: dict[str, str] = {}

    def conflict(reason: str, message: str) -> None:
        cond.update(status="False", reason=reason, message=message)

    for fld, reason, used in (("plural", "PluralConflict", resources), ("singular", "SingularConflict", resources)):
        why = _claim(requested.get(fld, ""), accepted.get(fld, ""), used)
        if why:
            conflict(reason, why)
        else:
            new[fld] = requested.get(fld, "")
    want_short = list(requested.get("shortNames") or [])
    have_short = list(accepted.get("shortNames") or [])
    if want_short != have_short:
        problems = [why for s in want_short if s not in have_short and (why := _claim(s, "", resources))]
        if problems:
            conflict("ShortNamesConflict", problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")
        else:
            new["shortNames"] = want_short
    for fld, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        why = _claim(requested.get(fld, ""), accepted.get(fld, ""), kinds)
        if why:
            conflict(reason, why)
        else:
            new[fld] = requested.get(fld, "")
    if requested.get("categories"):
        new["categories"] = list(requested["categories"])
    else:
        new.pop("categories", None)
    if not new.get("shortNames"):
        new.pop("shortNames", None)
    if not cond:
        cond = {"status": "True", "reason": "NoConflicts", "message": "no conflicts found"}

    old = h.find_condition(crd, h.ESTABLISHED)
    established = {"status": "False", "reason": "NotAccepted", "message": "not all names are accepted"}
    if old is not None:
        established = {k: str(old.get(k, "")) for k in ("status", "reason", "message")}
    if established["status"] != "True" and cond["status"] == "True":
        if old is not None and old.get("reason") == "Installing":
            # the establishing step: the names were accepted and the handler serves them
            established = {"status": "True", "reason": "InitialNamesAccepted",
                           "message": "the initial names have been accepted"}  # fmt: skip
        else:
            established = {"status": "False", "reason": "Installing",
                           "message": "the initial names have been accepted"}  # fmt: skip
    return new, cond, established


class NamingController(CRDController):
    """Keeps every CRD's accepted names and its NamesAccepted and Established conditions."""

    retry_delay = 0.2  # Installing is followed by Established at once

    def __init__(self, crds: RESTStore) -> None:
        super().__init__(crds, "crd_naming_condition_controller")

    def _all(self) -> list[Object]:
        entries, _ = self.crds.cacher.list(self.crds.resource.collection_key(""))
        return [en.obj for en in entries]

    def on_event(self, event_type: str, crd: Object) -> None:
        self.queue.add(crd["metadata"]["name"])
        # A CRD that changed or went frees or takes names the others of its group may want.
        group = (crd.get("spec") or {}).get("group")
        for other in self._all():
            if (other.get("spec") or {}).get("group") == group:
                self.queue.add(other["metadata"]["name"])

    async def sync(self, name: str) -> bool:
        """Bring one CRD's names and conditions up to date; True when it should be looked at again."""
        entry = self.crds.cacher.get(self.crds.key("", name))
        if entry is None:
            return False
        crd = entry.obj
        names, accepted, established = names_and_conditions(crd, self._all())
        status = crd.get("status") or {}
        same = (
            status.get("acceptedNames") == names
            and _matches(h.find_condition(crd, h.NAMES_ACCEPTED), accepted)
            and _matches(h.find_condition(crd, h.ESTABLISHED), established)
        )
        if same:
            return False

        async def updater(current: Object | None) -> Object:
            if current is None:
                raise self.crds.not_found(name)
            current.setdefault("status", {})["acceptedNames"] = names
            h.set_condition(current, h.NAMES_ACCEPTED, accepted["status"], accepted["reason"], accepted["message"])
            h.set_condition(current, h.ESTABLISHED, established["status"], established["reason"],
                            established["message"])  # fmt: skip
            h.stored_status(current)
            return current

        try:
            await self.crds.update("", name, updater, system_context(), subresource="status")
        except errors.StatusError as err:
            if err.code == 404:
                return False
            if err.code == 409:
                return True
            raise
        # Installing is followed by Established at once (the handler serves a CRD whose names are accepted).
        return established["reason"] == "Installing"


def _matches(current: dict[str, Any] | None, want: dict[str, str]) -> bool:
    return current is not None and all(current.get(k) == v for k, v in want.items())
