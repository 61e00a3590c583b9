"""The registry strategy of CustomResourceDefinitions (upstream: apiextensions-apiserver
pkg/registry/customresourcedefinition): defaults, validation, the status split, and deletion, which first
marks the definition Terminating and holds it with the cleanup finalizer until its objects are gone
(`finalizer.CRDFinalizer`)."""

from __future__ import annotations

from ..api.errors import FieldError
from ..api.meta import Object
from ..apiserver.registry import register
from ..apiserver.registry.strategy import Strategy
from . import apihelpers as h
from . import defaults, validation
from .schema.cel_validation import rule_validator_for
from .schema.defaulting import validate_defaults


def _rule_errors(crd: Object) -> list[FieldError]:
    """The x-kubernetes-validations rules that do not compile, or cost too much, in each schema (checked once the
    schemas are otherwise valid, as upstream compiles rules only in structural schemas)."""
    errs: list[FieldError] = []
    for path, schema in validation.schema_locations(crd):
        errs += rule_validator_for(schema).compile_errors(path)
    return errs


@register(h.GROUP, "CustomResourceDefinition")
class CustomResourceDefinitionStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        defaults.set_defaults(obj)

    def prepare_for_create(self, obj: Object) -> None:
        validation.prepare_for_create(obj)
        h.stored_status(obj)

    def validate(self, obj: Object) -> list[FieldError]:
        return validation.validate_crd(obj, defaults_validator=validate_defaults) or _rule_errors(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        validation.prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return validation.validate_crd_update(new, old, defaults_validator=validate_defaults) or _rule_errors(new)

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        validation.prepare_for_status_update(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        return validation.validate_crd_status(new)

    def deletion_blocked(self, obj: Object) -> bool:
        # The first delete only marks the definition (deletionTimestamp, the cleanup finalizer, Terminating):
        # the finalizer controller deletes its objects, then lets it go.
        return not (obj.get("metadata") or {}).get("deletionTimestamp")

    def on_mark_deleted(self, obj: Object) -> None:
        md = obj["metadata"]
        if not h.has_finalizer(obj, h.CLEANUP_FINALIZER):
            md["finalizers"] = [*(md.get("finalizers") or []), h.CLEANUP_FINALIZER]
        h.set_condition(obj, h.TERMINATING, "True", "InstanceDeletionPending",
                        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")  # fmt: skip
        h.stored_status(obj)
