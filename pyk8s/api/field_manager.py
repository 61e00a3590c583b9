"""The API server's field manager (upstream: apimachinery/pkg/util/managedfields/internal): the object's
managedFields read into per-manager field sets, the ownership rules of api/structured_merge applied to a
write, and the sets written back, sorted as upstream sorts them.

Around the rules, as upstream's manager stack: an Apply needs the configuration's kind; an apply to an
object nobody tracks first gives its existing fields to `before-first-apply`; the manager `kubectl` may take
over fields its last-applied annotation holds, and keeps that annotation current; at most 10 Update managers
are kept (the oldest merged into `ancient-changes`); the server-owned metadata is never anyone's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import errors
from .meta import Object, rfc3339
from .schema import Node
from .structured_merge.fieldpath import FieldSet, Path, from_fields_v1, iteration_order, render, to_fields_v1
from .structured_merge.typed import MISSING, Comparison, SchemaError, compare, to_field_set, validate
from .structured_merge.updater import Conflict, Conflicts, Managers, Updater, VersionedSet

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
MAX_ANNOTATIONS_SIZE = 256 * 1024  # upstream: TotalAnnotationSizeLimitB
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"
APPLY, UPDATE = "Apply", "Update"

# Never a manager's (upstream's stripMetaManager).
_STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {("f:metadata", "f:" + k) for k in ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
                                         "generation", "managedFields", "resourceVersion")}
)  # fmt: skip

# (manager, operation, apiVersion (empty for Apply), subresource): upstream's BuildManagerIdentifier.
ManagerId = tuple[str, str, str, str]


@dataclass
class Managed:
    fields: Managers = field(default_factory=dict)
    times: dict[ManagerId, str | None] = field(default_factory=dict)
    #: the entries as read, by the set read from them: written back as they were while the set is unchanged
    read: dict[int, tuple[VersionedSet, dict[str, Any]]] = field(default_factory=dict)


def manager_id(manager: str, operation: str, api_version: str, subresource: str) -> ManagerId:
    return (manager or "unknown", operation, "" if operation == APPLY else api_version, subresource)


def decode(entries: Any, trusted: bool = True) -> Managed | None:
    """managedFields as sets; None when they cannot be read (upstream's DecodeManagedFields errors). Entries
    the server wrote (`trusted`) are written back as they were while their set does not change; a client's are
    rewritten in upstream's form (key fields sorted, times in UTC)."""
    out = Managed()
    for e in entries or ():
        if not isinstance(e, dict):
            return None
        op = e.get("operation")
        if op not in (APPLY, UPDATE) or not e.get("apiVersion") or e.get("fieldsType") != "FieldsV1":
            return None
        ident = manager_id(e.get("manager") or "", op, e["apiVersion"], e.get("subresource") or "")
        vs = VersionedSet(from_fields_v1(e.get("fieldsV1") or {}), e["apiVersion"], op == APPLY)
        out.fields[ident] = vs
        out.times[ident] = e.get("time") if trusted else _utc(e.get("time"))
        if trusted:
            out.read[id(vs)] = (vs, e)
    return out


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The entries, sorted by operation, time (seconds), manager, apiVersion and subresource."""
    entries = []
    for ident, vs in managed.fields.items():
        was = managed.read.get(id(vs))
        if was is not None and was[0] is vs and was[1].get("time") == managed.times.get(ident):
            entries.append(was[1])
            continue
        manager, _, _, subresource = ident
        entry: dict[str, Any] = {"manager": manager, "operation": APPLY if vs.applied else UPDATE,
                                 "apiVersion": vs.api_version}  # fmt: skip
        if managed.times.get(ident):
            entry["time"] = managed.times[ident]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = to_fields_v1(vs.paths)
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    entries.sort(key=_entry_order)
    return entries


def _entry_order(e: dict[str, Any]) -> tuple[str, ...]:
    return (e.get("operation") or "", e.get("time") or "", e.get("manager") or "", e.get("apiVersion") or "",
            e.get("subresource") or "")  # fmt: skip


def _utc(t: Any) -> str | None:
    """A client's entry time as upstream writes a metav1.Time back: RFC 3339 in UTC, whole seconds."""
    if not isinstance(t, str) or not t:
        return None
    try:
        return rfc3339(dt.datetime.fromisoformat(t.replace("Z", "+00:00")))
    except ValueError:
        return t


def _readable(entries: Any) -> bool:
    """Whether `decode` would read the entries (without reading their field sets)."""
    if not isinstance(entries, list):
        return False
    for e in entries:
        if not isinstance(e, dict) or e.get("operation") not in (APPLY, UPDATE) or not e.get("apiVersion"):
            return False
        if e.get("fieldsType") != "FieldsV1":
            return False
    return True


def _is_reset(entries: Any) -> bool:
    """A write that sends `managedFields: []` (or one empty entry) asks for them to be cleared."""
    return isinstance(entries, list) and (not entries or (len(entries) == 1 and entries[0] == {}))


def render_manager(ident: ManagerId) -> str:
    """How a conflict names a manager (upstream's printManager)."""
    manager, operation, api_version, subresource = ident
    out = errors.go_quote(manager)
    if subresource:
        out += f" with subresource {errors.go_quote(subresource)}"
    if operation == UPDATE:
        out += f" using {api_version}"
    return out


def conflict_error(conflicts: list[Conflict]) -> errors.StatusError:
    """409 with upstream's message and one FieldManagerConflict cause per field."""
    by_manager: dict[str, list[Path]] = {}
    for c in conflicts:
        by_manager.setdefault(render_manager(c.manager), []).append(c.path)
    for m, paths in by_manager.items():
        by_manager[m] = iteration_order(paths)
    ordered = [Conflict(m, p) for m in sorted(by_manager) for p in by_manager[m]]
    if len(ordered) == 1:
        message = f"Apply failed with 1 conflict: conflict with {ordered[0].manager}: {render(ordered[0].path)}"
    else:
        lines = []
        for m in sorted(by_manager):
            lines.append(f"conflicts with {m}:")
            lines += [f"- {render(p)}" for p in by_manager[m]]
        message = f"Apply failed with {len(ordered)} conflicts: " + "\n".join(lines)
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {m}", "field": render(p)}
              for m in sorted(by_manager) for p in by_manager[m]]  # fmt: skip
    return errors.Conflict(409, "Conflict", message, details={"causes": causes})


def _gvk(api_version: str, kind: str) -> str:
    """A GroupVersionKind as Go prints it: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


class FieldManager:
    """managedFields for the writes to one kind through one endpoint (`subresource` empty for the main
    resource). `zero` is the kind's zero value as Go writes it (what a create is compared with); `reset`
    are the endpoint's reset fields (prefixes no write through it owns)."""

    def __init__(
        self, node: Node | None, api_version: str, kind: str, subresource: str = "", zero: Any = None,
        reset: tuple[Path, ...] = (),
    ) -> None:  # fmt: skip
        self.node = node
        self.api_version = api_version
        self.kind = kind
        self.subresource = subresource
        self.zero = zero if zero is not None else {}
        self.updater = Updater(node, reset)

    # -- the steps upstream stacks --------------------------------------------------------------------

    def _strip(self, managed: Managed, ident: ManagerId) -> None:
        vs = managed.fields.get(ident)
        if vs is None:
            return
        paths = vs.paths - _STRIPPED
        if paths:
            managed.fields[ident] = VersionedSet(paths, vs.api_version, vs.applied)
        else:
            del managed.fields[ident]

    def _tracked_update(
        self, live: Any, new: Any, managed: Managed, manager: str, cmp: Comparison | None = None
    ) -> None:
        """An Update by `manager` (caps, manager identity, times, stripped metadata)."""
        ident = manager_id(manager, UPDATE, self.api_version, self.subresource)
        current: ManagerId = ("current-operation", UPDATE, self.api_version, "")
        managed.fields = self.updater.update(live, new, self.api_version, managed.fields, current, cmp)
        self._strip(managed, current)
        vs = managed.fields.pop(current, None)
        if vs is not None:
            previous = managed.fields.get(ident)
            paths = vs.paths | previous.paths if previous is not None else vs.paths
            managed.fields[ident] = VersionedSet(paths, vs.api_version, vs.applied)
            managed.times[ident] = rfc3339()
        self._cap(managed)

    def _cap(self, managed: Managed) -> None:
        """At most MAX_UPDATE_MANAGERS Update managers: the oldest merge, per apiVersion, into ancient-changes."""
        updaters = [m for m, vs in managed.fields.items() if not vs.applied]
        if len(updaters) <= MAX_UPDATE_MANAGERS:
            return
        updaters.sort(key=lambda m: (managed.times.get(m) or "", m[0]))
        first_of_version: dict[str, ManagerId] = {}
        count = len(updaters)
        for ident in updaters:
            if count <= MAX_UPDATE_MANAGERS:
                break
            vs = managed.fields[ident]
            bucket = manager_id(ANCIENT_CHANGES, UPDATE, vs.api_version, "")
            first = first_of_version.get(vs.api_version)
            if first is None:
                first_of_version[vs.api_version] = ident
                continue
            if bucket not in managed.fields:
                managed.fields[bucket] = managed.fields.pop(first)
                managed.times.pop(first, None)
            managed.fields[bucket] = VersionedSet(vs.paths | managed.fields[bucket].paths, vs.api_version, False)
            del managed.fields[ident]
            managed.times[bucket] = managed.times.pop(ident, None)
            count -= 1

    # -- Update -----------------------------------------------------------------------------------------

    def update(self, live: Object | None, new: Object, manager: str) -> None:
        """Set `new`'s managedFields for a non-apply write of it over `live` (None: a create)."""
        md = new.setdefault("metadata", {})
        sent = md.pop("managedFields", None)
        live_entries = (live or {}).get("metadata", {}).get("managedFields") if live is not None else None
        if self.subresource:
            entries = live_entries
        elif _is_reset(sent):
            entries = []
        else:
            entries = sent if sent and _readable(sent) else live_entries
        # What the client sent back unchanged (a read-modify-write) is the server's own writing.
        trusted = entries is live_entries or entries == live_entries
        if not entries and live is not None and (live.get("metadata") or {}).get("uid"):
            return  # an object nobody tracks stays untracked until someone applies
        base = self.zero if live is None else _without_managed_fields(live)
        cmp = self.updater.comparison(base, new)
        # Only the entries owning something in a top-level field the write changed can change (and the
        # writer's own): the others are kept as they are, not read into sets and written back.
        touched = {p[0] for s in (cmp.added, cmp.modified, cmp.removed) for p in s}
        kept: list[dict[str, Any]] = []
        read = list(entries or ())
        updaters = sum(1 for e in read if isinstance(e, dict) and e.get("operation") == UPDATE)
        # The cap looks at every Update manager, so past it all entries are read; so are a client's.
        if trusted and updaters < MAX_UPDATE_MANAGERS:
            ident = manager_id(manager, UPDATE, self.api_version, self.subresource)
            read, kept = [], []
            for e in entries or ():
                mine = isinstance(e, dict) and manager_id(
                    e.get("manager") or "", e.get("operation") or "", e.get("apiVersion") or "", e.get("subresource") or ""
                ) == ident  # fmt: skip
                fields = e.get("fieldsV1") if isinstance(e, dict) else None
                if mine or not isinstance(fields, dict) or touched.intersection(fields):
                    read.append(e)
                else:
                    kept.append(e)
        managed = decode(read, trusted) or Managed()
        self._tracked_update(base, new, managed, manager, cmp)
        out = encode(managed)
        if kept:
            out = sorted([*out, *kept], key=_entry_order)
        if out:
            md["managedFields"] = out

    # -- Apply ------------------------------------------------------------------------------------------

    def apply(self, live: Object | None, config: Object, manager: str, force: bool) -> Object:
        """The object after `manager` applied `config` to `live` (None: the object does not exist yet), with
        its managedFields. Raises a StatusError: 400 for a configuration of another kind or with fields the
        schema lacks, 409 for conflicts."""
        if config.get("apiVersion") != self.api_version or config.get("kind") != self.kind:
            raise errors.bad_request(
                f"invalid object type: {_gvk(str(config.get('apiVersion') or ''), str(config.get('kind') or ''))}"
            )
        md = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
        if md.get("managedFields") is not None:
            raise errors.bad_request("metadata.managedFields must be nil")
        try:
            validate(config, self.node)
        except SchemaError as e:
            where = f"{md.get('namespace', '')}/{md.get('name', '')}; {_gvk(self.api_version, self.kind)}"
            raise errors.bad_request(f"failed to create typed patch object ({where}): {e}") from None
        base = self.zero if live is None else live
        managed = decode((base.get("metadata") or {}).get("managedFields")) if live is not None else Managed()
        if managed is None:
            raise errors.internal_error("failed to decode managed fields")
        try:
            result = self._apply_tracked(base, config, managed, manager, force)
        except Conflicts as c:
            if manager != "kubectl":
                raise conflict_error(c.conflicts) from None
            allowed = self._last_applied_fields(base)
            rest = [x for x in c.conflicts if x.path not in allowed]
            if rest:
                raise conflict_error(rest) from None
            result = self._apply_tracked(base, config, managed, manager, True)
        annotations = (result.get("metadata") or {}).get("annotations") or {}
        if manager == "kubectl" and annotations.get(LAST_APPLIED):
            annotations[LAST_APPLIED] = _last_applied(config)
            if sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str)) > MAX_ANNOTATIONS_SIZE:
                del annotations[LAST_APPLIED]  # upstream drops it rather than fail the apply
        return result

    def _apply_tracked(self, live: Object, config: Object, managed: Managed, manager: str, force: bool) -> Object:
        managed = Managed(dict(managed.fields), dict(managed.times))
        live = _without_managed_fields(live)
        if not managed.fields:
            # Everything already there belongs to before-first-apply: an apply removes nothing it did not set.
            self._tracked_update(self.zero, live, managed, BEFORE_FIRST_APPLY)
        ident = manager_id(manager, APPLY, self.api_version, self.subresource)
        new, managed.fields = self.updater.apply(live, config, self.api_version, managed.fields, ident, force)
        self._strip(managed, ident)
        if new is MISSING:
            new = orjson.loads(orjson.dumps(live))
        else:
            managed.times[ident] = rfc3339()
        if not isinstance(new, dict):
            new = {}
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {}
        md = new["metadata"]
        entries = encode(managed)
        if entries:
            md["managedFields"] = entries
        else:
            md.pop("managedFields", None)
        return new

    def _last_applied_fields(self, live: Object) -> FieldSet:
        """The fields kubectl's last-applied annotation holds with the live values: those an apply by
        `kubectl` takes over from their owners (the client-side to server-side migration)."""
        raw = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
        if not raw:
            return set()
        try:
            last = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return set()
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return set()
        try:
            validate(last, self.node)
            fields = to_field_set(last, self.node)
            cmp = compare(last, _without_managed_fields(live), self.node)
        except SchemaError:
            return set()
        return fields - cmp.modified - cmp.added - cmp.removed


def _without_managed_fields(obj: Any) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict) or "managedFields" not in obj["metadata"]:
        return obj
    md = dict(obj["metadata"])
    del md["managedFields"]
    return {**obj, "metadata": md}


def _last_applied(config: Object) -> str:
    """The annotation kubectl keeps: the applied configuration without the annotation, as Go's JSON encoder
    writes a map (keys sorted, &, <, >, U+2028 and U+2029 escaped, a newline at the end)."""
    copy = orjson.loads(orjson.dumps(config))
    annotations = (copy.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    text = orjson.dumps(copy, option=orjson.OPT_SORT_KEYS).decode()
    for ch, escaped in _GO_ESCAPES:
        text = text.replace(ch, escaped)
    return text + "\n"


# Outside strings JSON has none of these characters, so escaping them everywhere escapes them in strings.
_GO_ESCAPES = (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
