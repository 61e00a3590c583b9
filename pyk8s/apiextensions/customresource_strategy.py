"""The registry strategy of custom resources (upstream: apiextensions-apiserver
pkg/registry/customresource/strategy.go and status_strategy.go): a new object's status is dropped when the
status subresource is on, its generation counts changes to everything but metadata (and the status, when it
has its own endpoint), and every write is validated against the CRD's schema, with v1.32's ratcheting on
updates. A `/status` write keeps everything but the status from the stored object."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..api import errors as e
from ..api.errors import FieldError
from ..api.meta import Object, json_copy
from ..api.resources import Resource
from ..apiserver.registry.strategy import Strategy
from .schema.cel_validation import RuleValidator
from .schema.validation import SchemaValidator

SelectableField = tuple[str, Callable[[Object], str]]  # (field label, its value in an object)

# Schema errors after which the CEL rules are not run (upstream's hasBlockingErr): their values would not be
# what the rules were written for.
_BLOCKING = {e.NOT_SUPPORTED, e.REQUIRED, e.TOO_LONG, e.TOO_MANY, e.TYPE_INVALID}
_RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)


def _with_rules(
    errs: list[FieldError], rules: RuleValidator | None, new: Object, old: Object | None
) -> list[FieldError]:
    """Schema errors, then the CEL rules' (or, after a blocking schema error, the note that they were not run)."""
    if rules is None:
        return errs
    if errs and any(err.type in _BLOCKING for err in errs):
        return [*errs, e.invalid("<nil>", None, _RULES_NOT_CHECKED)]
    found = rules.validate(new, old)
    return errs + found if errs else found


class CustomResourceStrategy(Strategy):
    tracks_generation = True  # every custom resource counts its generation

    def __init__(
        self,
        resource: Resource,
        validator: SchemaValidator | None,
        selectable: Iterable[SelectableField] = (),
        rules: RuleValidator | None = None,
    ) -> None:
        super().__init__(resource)
        self.validator = validator
        self.rules = rules if rules is not None and rules.has_rules else None
        self.selectable = tuple(selectable)
        # What is not "spec" for the generation: metadata, and the status when it has its own endpoint.
        self.generation_ignores = ("metadata", "status") if self.has_status else ("metadata",)

    def spec_changed(self, new: Object, old: Object) -> bool:
        keys = (set(new) | set(old)) - set(self.generation_ignores)
        return any(new.get(k) != old.get(k) for k in keys)

    def validate(self, obj: Object) -> list[FieldError]:
        errs = self.validator.validate(obj) if self.validator is not None else []
        return _with_rules(errs, self.rules, obj, None)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validator.validate_update(new, old) if self.validator is not None else []
        return _with_rules(errs, self.rules, new, old)

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        """Only the status changes: the rest, metadata included, is the stored object's (the write's
        managedFields excepted, which the field manager has just recorded)."""
        status = new.get("status")
        managed = new.get("metadata", {}).get("managedFields")
        rv = new.get("metadata", {}).get("resourceVersion")
        new.clear()
        new.update(json_copy(old))
        if status is not None:
            new["status"] = status
        else:
            new.pop("status", None)
        md = new.setdefault("metadata", {})
        if managed is not None:
            md["managedFields"] = managed
        else:
            md.pop("managedFields", None)
        if rv is not None:
            md["resourceVersion"] = rv

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        return self.validate_update(new, old)

    def reset_fields(self, subresource: str, top_level: Iterable[str]) -> tuple[tuple[str, ...], ...]:
        # Upstream: the main endpoint resets the status (when it has its own); /status resets the spec.
        if not subresource:
            return (("f:status",),) if self.has_status else ()
        if subresource == "status":
            return (("f:spec",),)
        return ()

    def fields(self, obj: Object) -> dict[str, str]:
        meta: Any = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name", "")}
        if self.resource.namespaced:
            out["metadata.namespace"] = meta.get("namespace", "")
        for label, value_of in self.selectable:
            out[label] = value_of(obj)
        return out

    def supported_fields(self) -> tuple[str, ...]:
        return ("metadata.name", "metadata.namespace", *(label for label, _ in self.selectable))
