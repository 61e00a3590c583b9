"""Who owns which fields after an Update or an Apply (upstream: structured-merge-diff's merge.Updater).

Update: the writer gains every field it added or modified, and the fields it removed leave every owner;
nobody else keeps a field the writer changed (an update is always forced). Apply: the object becomes the
live object merged with the configuration; the applier's set becomes exactly the configuration's fields;
fields it applied before and applies no more are removed unless someone else owns them; a field the
configuration changes that another manager owns is a conflict, unless forced, when it changes hands.

All managers are compared in one version here: pyk8s keeps one schema per kind version, and a manager's
apiVersion is recorded but its set is not converted (upstream converts between versions of a kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..schema import Node
from .fieldpath import FieldSet, Path, without_prefixes
from .typed import MISSING, Comparison, compare, ensure_named_fields_are_members, merge, remove_items, to_field_set


@dataclass
class VersionedSet:
    """One manager's fields, the API version it wrote them in, and whether it applied them."""

    paths: FieldSet
    api_version: str
    applied: bool


Managers = dict[Any, VersionedSet]


@dataclass(frozen=True)
class Conflict:
    manager: Any
    path: Path


class Conflicts(Exception):
    """An apply changed fields other managers own."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


class Updater:
    """The ownership rules for one kind's schema; `ignored` are its reset fields (prefixes no write owns:
    `status` through the main resource, the rest through `/status`)."""

    def __init__(self, node: Node | None, ignored: tuple[Path, ...] = ()) -> None:
        self.node = node
        self.ignored = ignored

    def comparison(self, live: Any, new: Any) -> Comparison:
        """What a write of `new` over `live` changed, less the reset fields."""
        cmp = compare(live, new, self.node)
        if self.ignored:
            cmp.added = without_prefixes(cmp.added, self.ignored)
            cmp.modified = without_prefixes(cmp.modified, self.ignored)
            cmp.removed = without_prefixes(cmp.removed, self.ignored)
        return cmp

    def _update(
        self, live: Any, new: Any, version: str, managers: Managers, workflow: Any, force: bool,
        cmp: Comparison | None = None,
    ) -> tuple[Managers, Comparison]:  # fmt: skip
        if cmp is None:
            cmp = self.comparison(live, new)
        changed = cmp.modified | cmp.added
        conflicts: dict[Any, FieldSet] = {}
        for manager, vs in managers.items():
            if manager == workflow:
                continue
            clash = vs.paths & changed
            if clash:
                conflicts[manager] = clash
        if conflicts and not force:
            raise Conflicts([Conflict(m, p) for m, paths in conflicts.items() for p in paths])
        for manager, clash in conflicts.items():
            managers[manager] = VersionedSet(managers[manager].paths - clash, managers[manager].api_version,
                                             managers[manager].applied)  # fmt: skip
        if cmp.removed:
            for manager, vs in list(managers.items()):
                if manager != workflow and vs.paths & cmp.removed:
                    managers[manager] = VersionedSet(vs.paths - cmp.removed, vs.api_version, vs.applied)
        for manager in [m for m, vs in managers.items() if not vs.paths]:
            del managers[manager]
        return managers, cmp

    def update(
        self, live: Any, new: Any, version: str, managers: Managers, manager: Any, cmp: Comparison | None = None
    ) -> Managers:
        """The managers after `manager` wrote `new` over `live` with a non-apply request (`cmp`: their
        comparison, when the caller has it)."""
        managers, cmp = self._update(live, new, version, managers, manager, True, cmp)
        previous = managers[manager].paths if manager in managers else set()
        paths = (previous - cmp.removed) | cmp.modified | cmp.added
        if self.ignored:
            paths = without_prefixes(paths, self.ignored)
        if paths:
            managers[manager] = VersionedSet(paths, version, False)
        else:
            managers.pop(manager, None)
        return managers

    def apply(
        self, live: Any, config: Any, version: str, managers: Managers, manager: Any, force: bool
    ) -> tuple[Any, Managers]:
        """(the new object, or MISSING when the apply changes nothing; the managers). Raises Conflicts."""
        new = merge(live, config, self.node)
        last = managers.get(manager)
        paths = to_field_set(config, self.node)
        if self.ignored:
            paths = without_prefixes(paths, self.ignored)
        managers[manager] = VersionedSet(paths, version, True)
        new = self._prune(new, managers, manager, last)
        managers, _ = self._update(live, new, version, managers, manager, force)
        return (MISSING if new == live else new), managers

    def _ensure(self, paths: FieldSet) -> FieldSet:
        return ensure_named_fields_are_members(paths, self.node)

    def _prune(self, merged: Any, managers: Managers, manager: Any, last: VersionedSet | None) -> Any:
        """Remove what `manager` applied last time and applies no more, unless another manager owns it."""
        if last is None or not last.paths:
            return merged
        pruned = remove_items(merged, self.node, self._ensure(last.paths))
        # Put back what any manager owns.
        managed: FieldSet = set()
        for vs in managers.values():
            managed |= vs.paths
        merged_set = self._ensure(to_field_set(merged, self.node))
        pruned_set = self._ensure(to_field_set(pruned, self.node))
        pruned = remove_items(merged, self.node, merged_set - (pruned_set | self._ensure(managed)))
        # Put back what was removed without having been in the manager's last set.
        pruned_set = self._ensure(to_field_set(pruned, self.node))
        return remove_items(merged, self.node, (merged_set - pruned_set) & self._ensure(last.paths))
