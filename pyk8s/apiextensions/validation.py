"""Validation of CustomResourceDefinitions on create, update and status update, and the registry strategy's
preparation of them (upstream: apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go and
pkg/registry/customresourcedefinition/strategy.go).

Upstream validates the internal form of a v1 CRD, and its field paths say so: when every version has the
same schema (subresources, printer columns, selectable fields), the conversion moves it to the spec, so a
single-version CRD's schema errors read `spec.validation.openAPIV3Schema...`, its columns'
`spec.additionalPrinterColumns[0]...`; a conversion webhook's fields read `spec.conversion.webhookClientConfig`
and `spec.conversion.conversionReviewVersions`. `_Spec` is that internal view of the v1 dict.

ObjectMeta's generic rules are the API server's (pyk8s.apiserver.registry.strategy); CEL rules and the
`default` values are checked by callers' hooks, where upstream checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api import errors as e
from ..api import validation as v
from ..api.errors import FieldError, GoStrings
from ..api.meta import json_copy
from .conversion_validation import (
    ACCEPTED_CONVERSION_REVIEW_VERSIONS,
    URLError,
    ca_bundle_bytes,
    ca_bundle_error,
    conversion_errors,
    parse_url,
)
from .gofmt import GoValue, go_versions
from .schema.keywords import (
    RulesChecker,
    SchemaOptions,
    has_defaults,
    has_invalid_map_list_keys_map_set,
    has_invalid_types,
    has_kubernetes_extensions,
    has_non_atomic_set_type,
)
from .schema.structural import (
    is_structural,
    new_structural_error,
    structural_errors,
)
from .version_validation import column_errors, selectable_fields_errors, subresources_errors

DefaultsValidator = Callable[[dict[str, Any], str], list[FieldError]]

API_APPROVED_ANNOTATION = "api-approved.kubernetes.io"
_NAME_MISMATCH = 'must be spec.names.plural+"."+spec.group'
_IMMUTABLE = "field is immutable"
_PER_VERSION = ("schema", "subresources", "additionalPrinterColumns", "selectableFields")
_LIST_FIELDS = ("additionalPrinterColumns", "selectableFields")


def _s(x: Any) -> str:
    return x if isinstance(x, str) else ""


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


# -- the internal view -----------------------------------------------------------------------------


@dataclass
class _Spec:
    group: str
    names: dict[str, Any]
    scope: str
    preserve_unknown_fields: bool
    versions: list[dict[str, Any]] | None  # per-version fields moved to the spec are None here
    version: str = ""
    validation: dict[str, Any] | None = None
    subresources: dict[str, Any] | None = None
    columns: list[Any] | None = None
    selectable: list[Any] | None = None
    conversion: dict[str, Any] | None = None  # {strategy, webhookClientConfig, conversionReviewVersions}
    raw: dict[str, Any] = field(default_factory=dict)


def _internal(crd: dict[str, Any]) -> _Spec:
    spec = _d(crd.get("spec"))
    raw_versions = spec.get("versions")
    versions = [dict(_d(x)) for x in raw_versions] if isinstance(raw_versions, list) else None
    out = _Spec(
        group=_s(spec.get("group")),
        names=_d(spec.get("names")),
        scope=_s(spec.get("scope")),
        preserve_unknown_fields=spec.get("preserveUnknownFields") is True,
        versions=versions,
        raw=spec,
    )
    if versions:
        out.version = _s(versions[0].get("name"))
        hoisted: dict[str, Any] = {}
        for name in _PER_VERSION:
            # A nil and an empty list compare equal (apimachinery's semantic equality).
            norm = (lambda x: x or None) if name in _LIST_FIELDS else (lambda x: x)
            first = versions[0].get(name)
            if all(norm(ver.get(name)) == norm(first) for ver in versions):
                hoisted[name] = first
                for ver in versions:
                    ver[name] = None
        out.validation = hoisted.get("schema")
        out.subresources = hoisted.get("subresources")
        out.columns = hoisted.get("additionalPrinterColumns")
        out.selectable = hoisted.get("selectableFields")
    conv = spec.get("conversion")
    if isinstance(conv, dict):
        webhook = _d(conv.get("webhook"))
        out.conversion = {
            "strategy": _s(conv.get("strategy")),
            "webhookClientConfig": webhook.get("clientConfig")
            if isinstance(webhook.get("clientConfig"), dict)
            else None,
            "conversionReviewVersions": webhook.get("conversionReviewVersions"),
        }
    return out


def _schemas(crd: dict[str, Any]) -> list[dict[str, Any]]:
    """Every version's openAPIV3Schema (upstream looks at the spec's and the versions' alike)."""
    out: list[dict[str, Any]] = []
    for ver in _l(_d(crd.get("spec")).get("versions")):
        schema = _d(_d(ver).get("schema")).get("openAPIV3Schema")
        if isinstance(schema, dict):
            out.append(schema)
    return out


def schema_locations(crd: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each openAPIV3Schema with the path upstream reports its errors under (`spec.validation.openAPIV3Schema`
    when all versions share it), for checks that run beside these (defaults, CEL rules)."""
    spec = _internal(crd)
    out: list[tuple[str, dict[str, Any]]] = []
    if spec.validation is not None and isinstance(spec.validation.get("openAPIV3Schema"), dict):
        out.append(("spec.validation.openAPIV3Schema", spec.validation["openAPIV3Schema"]))
    for i, ver in enumerate(spec.versions or ()):
        schema = _d(ver.get("schema")).get("openAPIV3Schema")
        if isinstance(schema, dict):
            out.append((f"spec.versions[{i}].schema.openAPIV3Schema", schema))
    return out


# -- options ---------------------------------------------------------------------------------------


@dataclass
class _Options:
    """What update-time ratcheting relaxes (upstream: validationOptions)."""

    schema: SchemaOptions = field(default_factory=SchemaOptions)
    require_recognized_conversion_review_version: bool = True
    require_immutable_names: bool = False
    require_openapi_schema: bool = True
    allow_invalid_ca_bundle: bool = True  # a CRD that is not established yet may have a bad CA bundle
    defaults_validator: DefaultsValidator | None = None
    rules_checker: RulesChecker | None = None


def _is_established(crd: dict[str, Any]) -> bool:
    return any(
        _d(c).get("type") == "Established" and _d(c).get("status") == "True"
        for c in _l(_d(crd.get("status")).get("conditions"))
    )


def _has_accepted_review_version_or_empty(versions: Any) -> bool:
    versions = _l(versions)
    return not versions or any(x in ACCEPTED_CONVERSION_REVIEW_VERSIONS for x in versions)


def _update_options(old: dict[str, Any]) -> _Options:
    old_spec = _internal(old)
    schemas = _schemas(old)
    conv = old_spec.conversion
    ca_bundle = ca_bundle_bytes(_d(conv and conv["webhookClientConfig"]).get("caBundle"))
    return _Options(
        schema=SchemaOptions(
            require_structural=all(is_structural(s) for s in schemas),
            require_valid_property_type=not any(has_invalid_types(s) for s in schemas),
            require_atomic_set_type=not any(has_non_atomic_set_type(s) for s in schemas),
            require_map_list_keys_map_set=not any(has_invalid_map_list_keys_map_set(s) for s in schemas),
        ),
        require_recognized_conversion_review_version=conv is None
        or _has_accepted_review_version_or_empty(conv["conversionReviewVersions"]),
        require_immutable_names=_is_established(old),
        require_openapi_schema=all(
            isinstance(_d(_d(ver).get("schema")).get("openAPIV3Schema"), dict) for ver in old_spec.versions or ()
        )
        or (old_spec.validation is not None and isinstance(old_spec.validation.get("openAPIV3Schema"), dict)),
        # Only an established CRD whose CA bundle was valid must keep a valid one.
        allow_invalid_ca_bundle=not _is_established(old)
        or (bool(ca_bundle) and ca_bundle_error(ca_bundle) is not None),
    )


# -- entry points ----------------------------------------------------------------------------------


def validate_crd(
    crd: dict[str, Any],
    *,
    defaults_validator: DefaultsValidator | None = None,
    rules_checker: RulesChecker | None = None,
) -> list[FieldError]:
    """A new CRD's errors (upstream: ValidateCustomResourceDefinition), its generic ObjectMeta rules aside.
    `defaults_validator(schema, path)` and `rules_checker` are called where upstream checks `default` values
    and compiles x-kubernetes-validations rules: only for a schema that is structural (and, for the rules,
    whose defaults are valid)."""
    opts = _Options(defaults_validator=defaults_validator, rules_checker=rules_checker)
    spec = _internal(crd)
    errs = _name_errors(crd, spec)
    errs += _spec_errors(spec, opts)
    errs += validate_crd_status(crd)
    errs += validate_stored_versions(crd)
    errs += _api_approval_errors(crd, None)
    errs += _preserve_unknown_fields_errors(crd, None)
    return errs


def validate_crd_update(
    new: dict[str, Any],
    old: dict[str, Any],
    *,
    defaults_validator: DefaultsValidator | None = None,
    rules_checker: RulesChecker | None = None,
) -> list[FieldError]:
    """An updated CRD's errors (upstream: ValidateCustomResourceDefinitionUpdate): the create rules, relaxed
    where the stored CRD already broke them (so that it stays updatable), plus what may not change."""
    opts = _update_options(old)
    opts.defaults_validator, opts.rules_checker = defaults_validator, rules_checker
    spec, old_spec = _internal(new), _internal(old)
    errs = _spec_errors(spec, opts)
    if opts.require_immutable_names:
        errs += _immutable(spec.raw.get("scope"), old_spec.raw.get("scope"), "spec.scope")
        errs += _immutable(spec.names.get("kind"), old_spec.names.get("kind"), "spec.names.kind")
    errs += _immutable(spec.raw.get("group"), old_spec.raw.get("group"), "spec.group")
    errs += _immutable(spec.names.get("plural"), old_spec.names.get("plural"), "spec.names.plural")
    errs += validate_crd_status(new)
    errs += validate_stored_versions(new)
    errs += _api_approval_errors(new, old)
    errs += _preserve_unknown_fields_errors(new, old)
    return errs


def validate_crd_status(crd: dict[str, Any]) -> list[FieldError]:
    """A status write's errors beyond ObjectMeta (upstream: ValidateUpdateCustomResourceDefinitionStatus):
    the accepted names. Stored versions are checked with the spec, not here."""
    return names_errors(_d(_d(crd.get("status")).get("acceptedNames")), "status.acceptedNames")


def validate_stored_versions(crd: dict[str, Any]) -> list[FieldError]:
    """status.storedVersions against spec.versions (upstream: ValidateCustomResourceDefinitionStoredVersions)."""
    path = "status.storedVersions"
    raw = _d(crd.get("status")).get("storedVersions")
    stored = [_s(x) for x in raw] if isinstance(raw, list) else None
    if not stored:
        return [e.invalid(path, GoStrings(stored), "must have at least one stored version")]
    errs: list[FieldError] = []
    unmatched = {name: i for i, name in enumerate(stored)}
    for ver in _l(_d(crd.get("spec")).get("versions")):
        name = _s(_d(ver).get("name"))
        if _d(ver).get("storage") is True and name not in unmatched:
            errs.append(e.invalid(path, GoStrings(stored), "must have the storage version " + name))
        unmatched.pop(name, None)
    errs += [e.invalid(f"{path}[{i}]", name, "must appear in spec.versions") for name, i in unmatched.items()]
    return errs


# -- the strategy's preparation ---------------------------------------------------------------------


def _storage_version(crd: dict[str, Any]) -> str | None:
    return next(
        (_s(_d(ver).get("name")) for ver in _l(_d(crd.get("spec")).get("versions")) if _d(ver).get("storage") is True),
        None,
    )


def _record_storage_version(crd: dict[str, Any]) -> None:
    storage = _storage_version(crd)
    if storage is None:
        return
    status = crd.setdefault("status", {})
    stored = status.get("storedVersions")
    if not isinstance(stored, list):
        stored = status["storedVersions"] = []
    if storage not in stored:
        stored.append(storage)


def prepare_for_create(crd: dict[str, Any]) -> None:
    """A new CRD starts with an empty status that records its storage version, at generation 1."""
    crd["status"] = {"acceptedNames": {"plural": "", "kind": ""}}
    crd.setdefault("metadata", {})["generation"] = 1
    _record_storage_version(crd)


def prepare_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The status stays as stored (plus a new storage version); a spec change moves the generation on."""
    if "status" in old:
        new["status"] = json_copy(old["status"])
    else:
        new.pop("status", None)
    old_generation = _d(old.get("metadata")).get("generation") or 0
    changed = new.get("spec") != old.get("spec")
    new.setdefault("metadata", {})["generation"] = old_generation + 1 if changed else old_generation
    _record_storage_version(new)


def prepare_for_status_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A status write keeps the stored spec. Upstream resets the metadata from the new object itself, a
    no-op, so metadata changes made through /status stand."""
    if "spec" in old:
        new["spec"] = json_copy(old["spec"])
    else:
        new.pop("spec", None)


# -- metadata and the spec -------------------------------------------------------------------------


def _immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    return [] if new == old else [e.invalid(path, new if new is not None else "", _IMMUTABLE)]


def _name_errors(crd: dict[str, Any], spec: _Spec) -> list[FieldError]:
    """The name must be `<plural>.<group>` (the DNS rules for names are the API server's)."""
    required = _s(spec.names.get("plural")) + "." + spec.group
    meta = _d(crd.get("metadata"))
    errs: list[FieldError] = []
    generate_name, name = _s(meta.get("generateName")), _s(meta.get("name"))
    if generate_name and generate_name != required:
        errs.append(e.invalid("metadata.generateName", generate_name, _NAME_MISMATCH))
    if name and name != required:
        errs.append(e.invalid("metadata.name", name, _NAME_MISMATCH))
    return errs


def _enum(path: str, value: str, accepted: tuple[str, ...]) -> list[FieldError]:
    if not value:
        return [e.required(path, "")]
    return [] if value in accepted else [e.not_supported(path, value, accepted)]


def _status_enabled(subresources: dict[str, Any] | None) -> bool:
    return subresources is not None and _d(subresources).get("status") is not None


def _spec_errors(spec: _Spec, opts: _Options) -> list[FieldError]:
    errs: list[FieldError] = []
    if not spec.group:
        errs.append(e.required("spec.group", ""))
    elif msgs := v.is_dns1123_subdomain(spec.group):
        errs.append(e.invalid("spec.group", spec.group, ",".join(msgs)))
    elif len(spec.group.split(".")) < 2:
        errs.append(e.invalid("spec.group", spec.group, "should be a domain with at least one dot"))
    errs += _enum("spec.scope", spec.scope, ("Cluster", "Namespaced"))

    versions = spec.versions or []
    schema_opts = opts.schema
    if not spec.preserve_unknown_fields:  # pruning needs structural schemas
        schema_opts = SchemaOptions(**{**schema_opts.__dict__, "require_structural": True})
    top_schema = _d(spec.validation).get("openAPIV3Schema")
    if not isinstance(top_schema, dict) and (opts.require_openapi_schema or not spec.preserve_unknown_fields):
        for i, ver in enumerate(versions):
            if isinstance(_d(ver.get("schema")).get("openAPIV3Schema"), dict):
                continue
            if opts.require_openapi_schema:
                errs.append(e.required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
            elif ver.get("served") is True:
                errs.append(e.required(f"spec.versions[{i}].schema.openAPIV3Schema", "because otherwise all fields are pruned"))  # fmt: skip
    all_schemas = [s for s in [top_schema, *(_d(ver.get("schema")).get("openAPIV3Schema") for ver in versions)] if isinstance(s, dict)]  # fmt: skip
    if any(has_defaults(s) for s in all_schemas):
        schema_opts = SchemaOptions(**{**schema_opts.__dict__, "require_structural": True})
        if spec.preserve_unknown_fields:
            errs.append(e.invalid("spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema"))  # fmt: skip
    if any(has_kubernetes_extensions(s) for s in all_schemas):
        schema_opts = SchemaOptions(**{**schema_opts.__dict__, "require_structural": True})

    storage_count = 0
    seen: set[str] = set()
    unique = True
    per_version_subresources = any(ver.get("subresources") is not None for ver in versions)
    for i, ver in enumerate(versions):
        name = _s(ver.get("name"))
        storage_count += ver.get("storage") is True
        unique = unique and name not in seen
        seen.add(name)
        if msgs := v.is_dns1035_label(name):
            errs.append(e.invalid(f"spec.versions[{i}].name", name, ",".join(msgs)))
        subresources = ver.get("subresources") if per_version_subresources else spec.subresources
        errs += _version_errors(ver, f"spec.versions[{i}]", _status_enabled(subresources), schema_opts, opts)
    if not unique:
        errs.append(e.invalid("spec.versions", GoValue(go_versions(spec.versions)), "must contain unique version names"))  # fmt: skip
    if storage_count != 1:
        errs.append(e.invalid("spec.versions", GoValue(go_versions(spec.versions)),
                              "must have exactly one version marked as storage version"))  # fmt: skip
    if spec.version and (msgs := v.is_dns1035_label(spec.version)):
        errs.append(e.invalid("spec.version", spec.version, ",".join(msgs)))

    for name in ("plural", "singular", "kind", "listKind"):
        if not _s(spec.names.get(name)):
            errs.append(e.required(f"spec.names.{name}", ""))
    errs += names_errors(spec.names, "spec.names")
    any_status = _status_enabled(spec.subresources) or any(_status_enabled(ver.get("subresources")) for ver in versions)
    errs += _validation_errors(spec.validation, any_status, schema_opts, opts, "spec.validation")
    errs += subresources_errors(spec.subresources, "spec.subresources")
    for i, col in enumerate(_l(spec.columns)):
        errs += column_errors(_d(col), f"spec.additionalPrinterColumns[{i}]")
    if spec.selectable:
        if spec.validation is None:
            errs.append(e.invalid("spec.selectableFields", "", "selectableFields may only be set when validations.schema is included"))  # fmt: skip
        else:
            errs += _selectable_with_schema(spec.selectable, top_schema, "spec")

    conv = spec.conversion
    if conv is not None and conv["strategy"] != "None" and spec.preserve_unknown_fields:
        errs.append(e.invalid("spec.conversion.strategy", conv["strategy"], "must be None if spec.preserveUnknownFields is true"))  # fmt: skip
    errs += conversion_errors(conv, opts.require_recognized_conversion_review_version, opts.allow_invalid_ca_bundle)
    return errs


def _version_errors(
    ver: dict[str, Any], path: str, status_enabled: bool, schema_opts: SchemaOptions, opts: _Options
) -> list[FieldError]:
    errs = [
        e.invalid(f"{path}.deprecationWarning", ver.get("deprecationWarning"), msg)
        for msg in _deprecation_warning_errors(ver.get("deprecated") is True, ver.get("deprecationWarning"))
    ]
    errs += _validation_errors(ver.get("schema"), status_enabled, schema_opts, opts, f"{path}.schema")
    errs += subresources_errors(ver.get("subresources"), f"{path}.subresources")
    for i, col in enumerate(_l(ver.get("additionalPrinterColumns"))):
        errs += column_errors(_d(col), f"{path}.additionalPrinterColumns[{i}]")
    selectable = _l(ver.get("selectableFields"))
    if selectable:
        schema = _d(ver.get("schema")).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errs.append(e.invalid(f"{path}.selectableFields", "", "selectableFields may only be set when version.schema.openAPIV3Schema is not included"))  # fmt: skip
        else:
            errs += _selectable_with_schema(selectable, schema, path)
    return errs


def _selectable_with_schema(selectable: list[Any], schema: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(schema, dict) and (msg := new_structural_error(schema)) is not None:
        errs.append(e.invalid(f"{path}.schema.openAPIV3Schema", "", msg))
        schema = None
    return errs + selectable_fields_errors(selectable, schema if isinstance(schema, dict) else None, f"{path}.selectableFields")  # fmt: skip


def _deprecation_warning_errors(deprecated: bool, warning: Any) -> list[str]:
    if not deprecated and warning is not None:
        return ["can only be set for deprecated versions"]
    if not isinstance(warning, str):
        return []
    msgs: list[str] = []
    if len(warning.encode()) > 256:
        msgs.append("must be <= 256 characters long")
    if not warning:
        msgs.append("must not be an empty string")
    for i, ch in enumerate(warning):
        if not ch.isprintable():
            at = len(warning[:i].encode())
            msgs.append(f"must only contain printable UTF-8 characters; non-printable character found at index {at}")
            break
    return msgs


def _validation_errors(
    validation: Any, status_enabled: bool, schema_opts: SchemaOptions, opts: _Options, path: str
) -> list[FieldError]:
    schema = _d(validation).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    return structural_errors(
        schema,
        f"{path}.openAPIV3Schema",
        status_enabled=status_enabled,
        options=schema_opts,
        defaults_validator=opts.defaults_validator,
        rules_checker=opts.rules_checker,
    )


def names_errors(names: dict[str, Any], path: str) -> list[FieldError]:
    """The shape of a CRD's names (upstream: ValidateCustomResourceDefinitionNames); empty ones are allowed."""
    errs: list[FieldError] = []
    for name in ("plural", "singular"):
        value = _s(names.get(name))
        if value and (msgs := v.is_dns1035_label(value)):
            errs.append(e.invalid(f"{path}.{name}", value, ",".join(msgs)))
    for name in ("kind", "listKind"):
        value = _s(names.get(name))
        if value and (msgs := v.is_dns1035_label(value.lower())):
            errs.append(e.invalid(f"{path}.{name}", value, "may have mixed case, but should otherwise match: " + ",".join(msgs)))  # fmt: skip
    for i, short in enumerate(_l(names.get("shortNames"))):
        if msgs := v.is_dns1035_label(_s(short)):
            errs.append(e.invalid(f"{path}.shortNames[{i}]", _s(short), ",".join(msgs)))
    kind, list_kind = _s(names.get("kind")), _s(names.get("listKind"))
    if kind and kind == list_kind:
        errs.append(e.invalid(f"{path}.listKind", list_kind, "kind and listKind may not be the same"))
    for i, category in enumerate(_l(names.get("categories"))):
        if msgs := v.is_dns1035_label(_s(category)):
            errs.append(e.invalid(f"{path}.categories[{i}]", _s(category), ",".join(msgs)))
    return errs


# -- API approval and preserveUnknownFields ----------------------------------------------------------

_MISSING, _INVALID, _APPROVED, _BYPASSED = range(4)


def _is_protected_group(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def _approval_state(crd: dict[str, Any]) -> tuple[int, str]:
    annotation = _s(_d(_d(crd.get("metadata")).get("annotations")).get(API_APPROVED_ANNOTATION))
    quoted = e.go_quote(API_APPROVED_ANNOTATION)
    if not annotation:
        return _MISSING, f"protected groups must have approval annotation {quoted}, see https://github.com/kubernetes/enhancements/pull/1111"  # fmt: skip
    if annotation.startswith("unapproved"):
        return _BYPASSED, f"not approved: {e.go_quote(annotation)}"
    try:
        url = parse_url(annotation, via_request=True)
    except URLError:
        url = None
    if url is not None and url.host and url.scheme:
        return _APPROVED, f"approved in {annotation}"
    return _INVALID, f'protected groups must have approval annotation {quoted} with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'  # fmt: skip


def _api_approval_errors(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """CRDs in the community's groups (*.k8s.io, *.kubernetes.io) must point at their API review."""
    if not _is_protected_group(_s(_d(new.get("spec")).get("group"))):
        return []
    state, reason = _approval_state(new)
    if old is not None and _approval_state(old)[0] == state:
        return []  # unchanged: a controller updating the spec is not held up by it
    path = f"metadata.annotations[{API_APPROVED_ANNOTATION}]"
    if state == _MISSING:
        return [e.required(path, reason)]
    if state == _INVALID:
        value = _s(_d(_d(new.get("metadata")).get("annotations")).get(API_APPROVED_ANNOTATION))
        return [e.invalid(path, value, reason)]
    return []


def _preserve_unknown_fields_errors(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is not None and _d(old.get("spec")).get("preserveUnknownFields") is True:
        return []  # kept for CRDs that had it before v1
    if _d(new.get("spec")).get("preserveUnknownFields") is True:
        return [e.invalid("spec.preserveUnknownFields", True,
                          "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")]  # fmt: skip
    return []
