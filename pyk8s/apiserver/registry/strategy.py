"""`Strategy`: what differs between kinds when they are created, updated, deleted and listed (upstream:
rest.RESTCreateStrategy, RESTUpdateStrategy, RESTDeleteStrategy and the registry's GetAttrs), plus the
ObjectMeta validation every kind shares (upstream: apimachinery/pkg/api/validation/objectmeta.go).

A kind's module subclasses Strategy and overrides what it needs: defaulting, validation, which fields a
status update may change, selectable fields, graceful deletion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object, json_copy
from ...api.resources import Resource
from ..authn import UserInfo

FIELD_IMMUTABLE = "field is immutable"
FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"


def validate_object_meta(
    meta: Any, namespaced: bool, name_fn: v.NameValidator, path: str = "metadata"
) -> list[FieldError]:
    """ObjectMeta rules on create (after name generation)."""
    if not isinstance(meta, dict):
        return [e.required(path, "")]
    errs: list[FieldError] = []
    gen_name = meta.get("generateName") or ""
    if gen_name:
        errs += [e.invalid(f"{path}.generateName", gen_name, m) for m in name_fn(gen_name, True)]
    name = meta.get("name") or ""
    if not name:
        errs.append(e.required(f"{path}.name", "name or generateName is required"))
    else:
        errs += [e.invalid(f"{path}.name", name, m) for m in name_fn(name, False)]
    errs += _validate_meta_common(meta, namespaced, path)
    return errs


def _validate_meta_common(meta: Object, namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ns = meta.get("namespace") or ""
    if namespaced:
        if not ns:
            errs.append(e.required(f"{path}.namespace", ""))
        else:
            errs += [e.invalid(f"{path}.namespace", ns, m) for m in v.is_dns1123_label(ns)]
    elif ns:
        errs.append(e.forbidden(f"{path}.namespace", "not allowed on this type"))
    generation = meta.get("generation", 0)
    if isinstance(generation, int) and generation < 0:
        errs.append(e.invalid(f"{path}.generation", generation, "must be greater than or equal to 0"))
    errs += v.validate_labels(meta.get("labels"), f"{path}.labels")
    errs += v.validate_annotations(meta.get("annotations"), f"{path}.annotations")
    errs += validate_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences")
    errs += validate_finalizers(meta.get("finalizers"), f"{path}.finalizers")
    return errs


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [e.type_invalid(path, refs, "must be a list")]
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            errs.append(e.type_invalid(path, ref, "must be an object"))
            continue
        api_version = ref.get("apiVersion") or ""
        version = api_version.rpartition("/")[2]
        if not version:
            errs.append(e.invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        for fld in ("kind", "name", "uid"):
            if not ref.get(fld):
                errs.append(e.invalid(f"{path}.{fld}", ref.get(fld) or "", "must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            errs.append(e.invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller"):
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                errs.append(
                    e.invalid(
                        path,
                        refs,
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return errs


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [e.type_invalid(path, finalizers, "must be a list of strings")]
    errs: list[FieldError] = []
    for f in finalizers:
        if not isinstance(f, str):
            errs.append(e.type_invalid(path, f, "must be a string"))
            continue
        errs += [e.invalid(path, f, m) for m in v.is_qualified_name(f)]
    if FINALIZER_ORPHAN in finalizers and FINALIZER_FOREGROUND in finalizers:
        errs.append(
            e.invalid(path, finalizers, f"finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set")
        )
    return errs


def validate_object_meta_update(new: Object, old: Object, path: str = "metadata") -> list[FieldError]:
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            shown = "[]string{" + ", ".join(e.go_quote(f) for f in added) + "}"
            errs.append(
                e.forbidden(
                    f"{path}.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {shown}",
                )
            )
    gen_new, gen_old = new.get("generation", 0) or 0, old.get("generation", 0) or 0
    if isinstance(gen_new, int) and isinstance(gen_old, int) and gen_new < gen_old:
        errs.append(e.invalid(f"{path}.generation", gen_new, "must not be decremented"))
    for fld in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if new.get(fld) != old.get(fld):
            errs.append(e.invalid(f"{path}.{fld}", new.get(fld), FIELD_IMMUTABLE))
    errs += v.validate_labels(new.get("labels"), f"{path}.labels")
    errs += v.validate_annotations(new.get("annotations"), f"{path}.annotations")
    errs += validate_owner_references(new.get("ownerReferences"), f"{path}.ownerReferences")
    errs += validate_finalizers(new.get("finalizers"), f"{path}.finalizers")
    return errs


def immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """A field-is-immutable error when the value changed."""
    return [] if new == old else [e.invalid(path, new, FIELD_IMMUTABLE)]


# Metadata a status update may not change (upstream: rest.ResetObjectMetaForStatus).
_STATUS_RESET_META = ("deletionTimestamp", "generation", "labels", "annotations", "finalizers", "ownerReferences")


class Strategy:
    """The default behaviour, right for most kinds; subclasses override per kind."""

    #: upstream NameIsDNSSubdomain for most kinds; some use DNS labels or path segments
    name_validator: ClassVar[v.NameValidator] = staticmethod(v.name_is_dns_subdomain)  # type: ignore[assignment]
    #: PUT to a missing object creates it
    allow_create_on_update: ClassVar[bool] = False
    #: PUT without a resourceVersion overwrites
    allow_unconditional_update: ClassVar[bool] = True
    #: the fields a /status write may change; everything else comes from the stored object
    status_fields: ClassVar[tuple[str, ...]] = ("status",)
    #: the metadata a /status write may not change (most kinds: upstream's ResetObjectMetaForStatus)
    status_reset_meta: ClassVar[tuple[str, ...]] = _STATUS_RESET_META
    #: top-level fields that are not "spec" for generation purposes
    non_spec_fields: ClassVar[tuple[str, ...]] = ("apiVersion", "kind", "metadata", "status")
    #: whether the kind has a metadata.generation that counts spec changes (workloads do; pods in 1.32 not)
    tracks_generation: ClassVar[bool] = False
    #: extra field selectors beyond metadata.name / metadata.namespace
    selectable_fields: ClassVar[tuple[str, ...]] = ()
    #: the selectable field the watch cache indexes watchers and lists by (upstream: the registry's TriggerFunc)
    trigger_field: ClassVar[str | None] = None

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.has_status = resource.subresource("status") is not None

    # -- create ----------------------------------------------------------------------------------------

    def default(self, obj: Object) -> None:
        """Upstream's defaulting for the kind (SetDefaults_*)."""

    def admission_defaults(self, obj: Object) -> None:
        """What upstream's default admission plugins fill in that pyk8s does not run as plugins yet (a pod's
        service account and priority: issue 18). After the field manager has recorded the write, as admission
        runs after it upstream: no manager owns these."""

    def prepare_for_create(self, obj: Object) -> None:
        if self.has_status:
            obj.pop("status", None)
            self.initial_status(obj)
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1

    def initial_status(self, obj: Object) -> None:
        """What status a new object starts with, beyond the zero value of its status type that the store
        writes when there is none (a StatefulSet's replicas: 0)."""

    async def allocate(self, obj: Object, old: Object | None, store: Any) -> None:
        """Assign what the server allocates (a Service's cluster IP and node ports) before validation."""

    def validate(self, obj: Object) -> list[FieldError]:
        """Kind-specific validation on create (ObjectMeta is validated already)."""
        return []

    # -- update ----------------------------------------------------------------------------------------

    def prepare_for_update(self, new: Object, old: Object) -> None:
        if self.has_status:
            if "status" in old:
                new["status"] = json_copy(old["status"])
            else:
                new.pop("status", None)
        if self.tracks_generation:
            old_gen = old.get("metadata", {}).get("generation", 0) or 0
            new["metadata"]["generation"] = old_gen + 1 if self.spec_changed(new, old) else old_gen

    def spec_changed(self, new: Object, old: Object) -> bool:
        keys = (set(new) | set(old)) - set(self.non_spec_fields)
        return any(new.get(k) != old.get(k) for k in keys)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        """Kind-specific validation on update (ObjectMeta update rules are checked already)."""
        return self.validate(new)

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        """A status write keeps everything but the status fields from the stored object."""
        for k in list(new):
            if k not in self.status_fields and k not in ("apiVersion", "kind", "metadata"):
                new.pop(k)
        for k, val in old.items():
            if k not in self.status_fields and k not in ("apiVersion", "kind", "metadata"):
                new[k] = json_copy(val)
        meta, old_meta = new["metadata"], old.get("metadata", {})
        for k in self.status_reset_meta:
            if k in old_meta:
                meta[k] = json_copy(old_meta[k])
            else:
                meta.pop(k, None)

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        return []

    def reset_fields(self, subresource: str, top_level: Iterable[str]) -> tuple[tuple[str, ...], ...]:
        """The fields a write through the endpoint does not own, as FieldsV1 path prefixes (upstream's
        GetResetFields): the status through the main resource; through /status, every top-level field
        (`top_level`: the kind's) but the status fields, and the metadata a status write keeps."""
        if not subresource:
            return (("f:status",),) if self.has_status else ()
        if subresource != "status":
            return ()
        keep = {*self.status_fields, "apiVersion", "kind", "metadata"}
        out = [("f:" + name,) for name in top_level if name not in keep]
        out += [("f:metadata", "f:" + name) for name in self.status_reset_meta]
        return tuple(out)

    def prepare_for_ephemeral_containers_update(self, new: Object, old: Object) -> None:
        """Only pods have an ephemeralcontainers subresource (the pod strategy overrides this)."""

    def validate_ephemeral_containers_update(self, new: Object, old: Object) -> list[FieldError]:
        return []

    def prepare_for_create_by(self, obj: Object, user: UserInfo) -> None:
        """What a kind records of who creates it, after prepare_for_create (a CertificateSigningRequest's
        requester; upstream reads the user from the request context in PrepareForCreate)."""

    def prepare_for_approval_update(self, new: Object, old: Object) -> None:
        """Only CertificateSigningRequests have an approval subresource (their strategy overrides this)."""

    def validate_approval_update(self, new: Object, old: Object) -> list[FieldError]:
        return []

    def prepare_for_finalize(self, new: Object, old: Object) -> None:
        """A /finalize write (namespaces) changes spec.finalizers and nothing else."""
        finalizers = (new.get("spec") or {}).get("finalizers")
        for k in [k for k in new if k not in ("apiVersion", "kind", "metadata")]:
            new.pop(k)
        for k, val in old.items():
            if k not in ("apiVersion", "kind", "metadata"):
                new[k] = json_copy(val)
        spec = new.setdefault("spec", {})
        if finalizers:
            spec["finalizers"] = finalizers
        else:
            spec.pop("finalizers", None)  # omitempty: an empty list is not written

    def deletion_blocked(self, obj: Object) -> bool:
        """Whether something besides metadata.finalizers holds the object while it is deleted."""
        return False

    def on_mark_deleted(self, obj: Object) -> None:
        """What changes when the object gets its deletionTimestamp (a namespace turns Terminating)."""

    # -- delete ----------------------------------------------------------------------------------------

    def graceful_deletion_seconds(self, obj: Object, requested: int | None) -> int:
        """Seconds the object lingers with a deletionTimestamp before it goes (0: delete now)."""
        return 0

    # -- reads -----------------------------------------------------------------------------------------

    def fields(self, obj: Object) -> dict[str, str]:
        """The values field selectors see (upstream: the kind's GetAttrs / field label conversion)."""
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name", "")}
        if self.resource.namespaced:
            out["metadata.namespace"] = meta.get("namespace", "")
        for path in self.selectable_fields:
            out[path] = _lookup(obj, path)
        return out

    def supported_fields(self) -> tuple[str, ...]:
        base = ("metadata.name", "metadata.namespace")
        return base + self.selectable_fields


def _lookup(obj: Object, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)
