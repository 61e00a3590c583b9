"""CustomResourceDefinition defaulting, validation and strategy preparation, against upstream's rules and
messages (cases ported from apiextensions-apiserver v0.32.4 pkg/apis/apiextensions/validation/validation_test.go
and pkg/apiserver/schema/validation_test.go)."""

from __future__ import annotations

import base64
import copy
import datetime
from collections.abc import Callable
from typing import Any

import pytest

from pyk8s.apiextensions.defaults import set_defaults
from pyk8s.apiextensions.schema.goregexp import go_regexp_error
from pyk8s.apiextensions.schema.structural import FieldPathError, structural_errors, valid_field_path
from pyk8s.apiextensions.validation import (
    prepare_for_create,
    prepare_for_status_update,
    prepare_for_update,
    schema_locations,
    validate_crd,
    validate_crd_status,
    validate_crd_update,
)

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ROOT = "spec.validation.openAPIV3Schema"  # a single version's schema is reported as the spec's
APPROVAL = "metadata.annotations[api-approved.kubernetes.io]"
URL_FORM = "; desired format: https://host[/path]"


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "color": {"type": "string"},
                    "size": {"type": "integer"},
                    "replicas": {"type": "integer"},
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        },
    }


def base(versions: int = 1) -> dict[str, Any]:
    """A valid CRD as a client sends it (before defaulting)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": name, "served": True, "storage": i == 0, "schema": {"openAPIV3Schema": _schema()}}
                for i, name in enumerate(["v1", "v1beta1", "v1alpha1"][:versions])
            ],
        },
    }


def build(mutate: Callable[[dict[str, Any]], Any] | None = None, versions: int = 1) -> dict[str, Any]:
    crd = base(versions)
    if mutate is not None:
        mutate(crd)
    set_defaults(crd)
    return crd


def lines(errs: list[Any]) -> list[str]:
    return [str(x) for x in errs]


def spec(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]


def v0(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]


def root(crd: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return crd["spec"]["versions"][i]["schema"]["openAPIV3Schema"]


def props(crd: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return root(crd, i)["properties"]


def spec_props(crd: dict[str, Any]) -> dict[str, Any]:
    return props(crd)["spec"]["properties"]


def go_version(name: str, storage: bool, schema: bool = False) -> str:
    return (
        f'apiextensions.CustomResourceDefinitionVersion{{Name:"{name}", Served:true, Storage:{str(storage).lower()}, '
        "Deprecated:false, DeprecationWarning:(*string)(nil), "
        f"Schema:(*apiextensions.CustomResourceValidation)({'0xc000000000' if schema else 'nil'}), "
        "Subresources:(*apiextensions.CustomResourceSubresources)(nil), "
        "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), "
        "SelectableFields:[]apiextensions.SelectableField(nil)}"
    )


def setter(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation setting a dotted path (list indexes as numbers); None deletes the key."""

    def mutate(crd: dict[str, Any]) -> None:
        node: Any = crd
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        last = parts[-1]
        if value is None:
            node.pop(last, None)
        elif isinstance(node, list):
            node[int(last)] = copy.deepcopy(value)
        else:
            node[last] = copy.deepcopy(value)

    return mutate


def both(*mutations: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(crd: dict[str, Any]) -> None:
        for m in mutations:
            m(crd)

    return mutate


def add_version(name: str, storage: bool = False, schema: dict[str, Any] | None = None) -> Callable[[dict], None]:
    def mutate(crd: dict[str, Any]) -> None:
        ver: dict[str, Any] = {"name": name, "served": True, "storage": storage}
        ver["schema"] = {"openAPIV3Schema": schema if schema is not None else _schema()}
        crd["spec"]["versions"].append(ver)

    return mutate


def webhook(**client_config: Any) -> Callable[[dict[str, Any]], None]:
    cc = client_config or {"service": {"name": "conv", "namespace": "default"}}
    return setter(
        "spec.conversion",
        {"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}},
    )


# -- defaults --------------------------------------------------------------------------------------


def test_defaults_fill_names_conversion_and_stored_version() -> None:
    crd = base(2)
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"clientConfig": {"service": {"name": "c", "namespace": "ns"}}, "conversionReviewVersions": ["v1"]},
    }
    set_defaults(crd)
    assert crd["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
    assert crd["status"] == {"storedVersions": ["v1"]}


def test_defaults_leave_served_and_storage_alone() -> None:
    crd = base(2)
    del crd["spec"]["versions"][1]["served"]
    del crd["spec"]["versions"][1]["storage"]
    set_defaults(crd)
    assert crd["spec"]["versions"][1] == {"name": "v1beta1", "schema": {"openAPIV3Schema": _schema()}}


def test_defaults_keep_what_is_set() -> None:
    crd = base()
    crd["spec"]["names"].update(singular="gadget", listKind="Gadgets")
    crd["status"] = {"storedVersions": ["v0", "v1"]}
    set_defaults(crd)
    assert crd["spec"]["names"]["singular"] == "gadget"
    assert crd["spec"]["names"]["listKind"] == "Gadgets"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"]["storedVersions"] == ["v0", "v1"]


def test_defaults_without_kind_leave_names_empty() -> None:
    crd = base()
    del crd["spec"]["names"]["kind"]
    set_defaults(crd)
    assert crd["spec"]["names"] == {"plural": "widgets"}


# -- create: the CRD's own fields -----------------------------------------------------------------

CREATE_CASES: list[tuple[str, Callable[[dict[str, Any]], Any] | None, list[str]]] = [
    ("valid", None, []),
    (
        "name must be plural.group",
        setter("metadata.name", "gadgets.example.com"),
        ['metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group'],
    ),
    (
        "generateName is held to the same name",
        setter("metadata.generateName", "widgets-"),
        ['metadata.generateName: Invalid value: "widgets-": must be spec.names.plural+"."+spec.group'],
    ),
    (
        "group required",
        both(setter("spec.group", ""), setter("metadata.name", "widgets.")),
        ["spec.group: Required value"],
    ),
    (
        "group needs a dot",
        both(setter("spec.group", "example"), setter("metadata.name", "widgets.example")),
        ['spec.group: Invalid value: "example": should be a domain with at least one dot'],
    ),
    (
        "group must be a DNS subdomain",
        both(setter("spec.group", "Example.com"), setter("metadata.name", "widgets.Example.com")),
        [f'spec.group: Invalid value: "Example.com": {SUBDOMAIN}'],
    ),
    ("scope required", setter("spec.scope", None), ["spec.scope: Required value"]),
    (
        "scope values",
        setter("spec.scope", "Global"),
        ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'],
    ),
    (
        "plural must be a DNS-1035 label",
        both(setter("spec.names.plural", "Widgets"), setter("metadata.name", "Widgets.example.com")),
        [f'spec.names.plural: Invalid value: "Widgets": {DNS1035}'],
    ),
    (
        "singular must be a DNS-1035 label",
        setter("spec.names.singular", "a.widget"),
        [f'spec.names.singular: Invalid value: "a.widget": {DNS1035}'],
    ),
    (
        "kind may have mixed case only",
        both(
            setter("spec.names.kind", "Wid_get"),
            setter("spec.names.singular", "widget"),
            setter("spec.names.listKind", "WidgetList"),
        ),
        [f'spec.names.kind: Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035}'],
    ),
    (
        "listKind may have mixed case only",
        setter("spec.names.listKind", "Widget.List"),
        [
            'spec.names.listKind: Invalid value: "Widget.List": may have mixed case, but should otherwise match: '
            + DNS1035
        ],
    ),
    (
        "kind and listKind differ",
        setter("spec.names.listKind", "Widget"),
        ['spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same'],
    ),
    (
        "short names are DNS-1035 labels",
        setter("spec.names.shortNames", ["wd", "W"]),
        [f'spec.names.shortNames[1]: Invalid value: "W": {DNS1035}'],
    ),
    (
        "categories are DNS-1035 labels",
        setter("spec.names.categories", ["all", ""]),
        [f'spec.names.categories[1]: Invalid value: "": {DNS1035}'],
    ),
    (
        "version names are DNS-1035 labels (the first is also spec.version)",
        setter("spec.versions.0.name", "V1"),
        [f'spec.versions[0].name: Invalid value: "V1": {DNS1035}', f'spec.version: Invalid value: "V1": {DNS1035}'],
    ),
    (
        "one storage version",
        setter("spec.versions.0.storage", False),
        [
            f"spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{{{go_version('v1', False)}}}: "
            "must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
        ],
    ),
    (
        "schemas are required",
        setter("spec.versions.0.schema", None),
        ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"],
    ),
    (
        "deprecationWarning only for deprecated versions",
        setter("spec.versions.0.deprecationWarning", "old"),
        ['spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions'],
    ),
    (
        "deprecationWarning not empty",
        both(setter("spec.versions.0.deprecated", True), setter("spec.versions.0.deprecationWarning", "")),
        ['spec.versions[0].deprecationWarning: Invalid value: "": must not be an empty string'],
    ),
    (
        "deprecationWarning at most 256 bytes",
        both(setter("spec.versions.0.deprecated", True), setter("spec.versions.0.deprecationWarning", "é" * 129)),
        [f'spec.versions[0].deprecationWarning: Invalid value: "{"é" * 129}": must be <= 256 characters long'],
    ),
    (
        "deprecationWarning printable",
        both(setter("spec.versions.0.deprecated", True), setter("spec.versions.0.deprecationWarning", "é\tx")),
        [
            'spec.versions[0].deprecationWarning: Invalid value: "é\\tx": must only contain printable UTF-8 characters; '
            "non-printable character found at index 2"
        ],
    ),
    (
        "scale paths required",
        setter("spec.versions.0.subresources", {"scale": {}}),
        [
            "spec.subresources.scale.specReplicasPath: Required value",
            "spec.subresources.scale.statusReplicasPath: Required value",
        ],
    ),
    (
        "scale paths under .spec and .status",
        setter(
            "spec.versions.0.subresources",
            {
                "scale": {
                    "specReplicasPath": ".status.replicas",
                    "statusReplicasPath": "status.replicas",
                    "labelSelectorPath": ".metadata.labels",
                }
            },
        ),
        [
            'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec',
            'spec.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be a simple json path starting with .',
            'spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status',
        ],
    ),
    (
        "printer column fields",
        setter(
            "spec.versions.0.additionalPrinterColumns",
            [{}, {"name": "c", "type": "bogus", "format": "uuid", "jsonPath": "spec.color"}],
        ),
        [
            "spec.additionalPrinterColumns[0].name: Required value",
            "spec.additionalPrinterColumns[0].type: Required value: must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[0].JSONPath: Required value",
            'spec.additionalPrinterColumns[1].type: Invalid value: "bogus": must be one of boolean,date,integer,number,string',
            'spec.additionalPrinterColumns[1].format: Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password',
            'spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.color": must be a simple json path starting with .',
        ],
    ),
    (
        "printer column priority is not checked",
        setter(
            "spec.versions.0.additionalPrinterColumns",
            [{"name": "c", "type": "string", "priority": -1, "jsonPath": ".spec.color"}],
        ),
        [],
    ),
    (
        "preserveUnknownFields may not be set",
        setter("spec.preserveUnknownFields", True),
        [
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
            "to true in spec.versions[*].schema instead"
        ],
    ),
    ("an empty stored versions list is defaulted", setter("status", {"storedVersions": []}), []),
    (
        "status and scale subresources",
        setter(
            "spec.versions.0.subresources",
            {
                "status": {},
                "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector",
                },
            },
        ),
        [],
    ),
    (
        "stored versions must be spec versions and include the storage version",
        setter("status", {"storedVersions": ["v0"]}),
        [
            'status.storedVersions: Invalid value: []string{"v0"}: must have the storage version v1',
            'status.storedVersions[0]: Invalid value: "v0": must appear in spec.versions',
        ],
    ),
    (
        "accepted names are checked too",
        setter("status.acceptedNames", {"plural": "Widgets", "kind": "Widget", "listKind": "Widget"}),
        [
            f'status.acceptedNames.plural: Invalid value: "Widgets": {DNS1035}',
            'status.acceptedNames.listKind: Invalid value: "Widget": kind and listKind may not be the same',
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_validate_crd(mutate: Callable[[dict[str, Any]], Any] | None, expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate))) == expected


def test_missing_values_without_defaults() -> None:
    crd = {"metadata": {"name": "x"}, "spec": {"versions": []}}
    assert lines(validate_crd(crd)) == [
        'metadata.name: Invalid value: "x": must be spec.names.plural+"."+spec.group',
        "spec.group: Required value",
        "spec.scope: Required value",
        "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: must have exactly one "
        "version marked as storage version",
        "spec.names.plural: Required value",
        "spec.names.singular: Required value",
        "spec.names.kind: Required value",
        "spec.names.listKind: Required value",
        "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
    ]


def test_empty_stored_versions_reported() -> None:
    crd = build()
    crd["status"]["storedVersions"] = []
    assert lines(validate_crd(crd)) == [
        "status.storedVersions: Invalid value: []string{}: must have at least one stored version"
    ]


# -- create: several versions --------------------------------------------------------------------

MULTI_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], list[str]]] = [
    (
        "identical schemas are the spec's",
        lambda c: props(c, 1)["spec"].pop("type"),
        [
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ],
    ),
    (
        "duplicate version names",
        setter("spec.versions.1.name", "v1"),
        [
            "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{"
            f"{go_version('v1', True)}, {go_version('v1', False)}}}: must contain unique version names"
        ],
    ),
    (
        "two storage versions (different schemas stay per version)",
        both(setter("spec.versions.1.storage", True), lambda c: props(c, 1).pop("status")),
        [
            "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{"
            f"{go_version('v1', True, True)}, {go_version('v1beta1', True, True)}}}: must have exactly one version "
            "marked as storage version",
            'status.storedVersions: Invalid value: []string{"v1"}: must have the storage version v1beta1',
        ],
    ),
    (
        "per-version subresources",
        setter(
            "spec.versions.1.subresources",
            {
                "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".labels",
                }
            },
        ),
        [
            'spec.versions[1].subresources.scale.labelSelectorPath: Invalid value: ".labels": should be a json path '
            "under either .spec or .status"
        ],
    ),
    (
        "per-version printer columns",
        setter("spec.versions.1.additionalPrinterColumns", [{"name": "c", "type": "string"}]),
        ["spec.versions[1].additionalPrinterColumns[0].JSONPath: Required value"],
    ),
    (
        "a missing schema in one version",
        setter("spec.versions.1.schema", None),
        ["spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required"],
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in MULTI_CASES], ids=[c[0] for c in MULTI_CASES])
def test_validate_crd_with_versions(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate, versions=2))) == expected


def test_schema_locations_follow_hoisting() -> None:
    assert [p for p, _ in schema_locations(build(versions=2))] == [ROOT]
    different = build(lambda c: props(c, 1).pop("status"), versions=2)
    assert [p for p, _ in schema_locations(different)] == [
        "spec.versions[0].schema.openAPIV3Schema",
        "spec.versions[1].schema.openAPIV3Schema",
    ]


# -- create: selectable fields ---------------------------------------------------------------------


def _selectable(*paths: str) -> Callable[[dict[str, Any]], None]:
    return setter("spec.versions.0.selectableFields", [{"jsonPath": p} for p in paths])


SELECTABLE_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], list[str]]] = [
    ("valid", _selectable(".spec.color", ".spec.size"), []),
    ("jsonPath required", _selectable(""), ["spec.selectableFields[0].jsonPath: Required value"]),
    (
        "must exist",
        _selectable(".spec.nope"),
        [
            'spec.selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field'
        ],
    ),
    (
        "no array notation",
        _selectable(".spec['color']"),
        [
            "spec.selectableFields[0].jsonPath: Invalid value: \".spec['color']\": is an invalid path: array notation is not allowed"
        ],
    ),
    (
        "scalar types only",
        _selectable(".spec.tags"),
        [
            'spec.selectableFields[0].jsonPath: Invalid value: ".spec.tags": must point to a field of type string, '
            "boolean or integer. Enum string fields and strings with formats are allowed."
        ],
    ),
    ("map values are fields", _selectable(".spec.tags.team"), []),
    (
        "not in metadata",
        both(
            setter(
                "spec.versions.0.schema.openAPIV3Schema.properties.metadata.properties", {"name": {"type": "string"}}
            ),
            _selectable(".metadata.name"),
        ),
        ['spec.selectableFields[0].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata'],
    ),
    (
        "no duplicates",
        _selectable(".spec.color", ".spec.color"),
        ['spec.selectableFields[1].jsonPath: Duplicate value: ".spec.color"'],
    ),
    (
        "at most 8",
        both(
            lambda c: spec_props(c).update({f"f{i}": {"type": "string"} for i in range(9)}),
            _selectable(*(f".spec.f{i}" for i in range(9))),
        ),
        ["spec.selectableFields: Too many: 9: must have at most 8 items"],
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [c[1:] for c in SELECTABLE_CASES], ids=[c[0] for c in SELECTABLE_CASES]
)
def test_selectable_fields(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate))) == expected


def test_selectable_fields_per_version_need_a_per_version_schema() -> None:
    # The schemas are identical, so they move to the spec and the version is left without one (as upstream).
    crd = build(setter("spec.versions.1.selectableFields", [{"jsonPath": ".spec.color"}]), versions=2)
    assert lines(validate_crd(crd)) == [
        'spec.versions[1].selectableFields: Invalid value: "": selectableFields may only be set when '
        "version.schema.openAPIV3Schema is not included"
    ]
    crd = build(
        both(
            setter("spec.versions.1.selectableFields", [{"jsonPath": ".spec.nope"}]),
            lambda c: props(c, 1).pop("status"),
        ),
        versions=2,
    )
    assert lines(validate_crd(crd)) == [
        'spec.versions[1].selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not '
        "refer to a valid field"
    ]


# -- create: conversion --------------------------------------------------------------------------

CONVERSION_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], list[str]]] = [
    ("service webhook", webhook(), []),
    ("url webhook", webhook(url="https://example.com/convert"), []),
    (
        "strategy values",
        setter("spec.conversion", {"strategy": "Magic"}),
        ['spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"'],
    ),
    (
        "webhook needs a client config and review versions",
        setter("spec.conversion", {"strategy": "Webhook"}),
        [
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ],
    ),
    (
        "url or service, not both",
        webhook(url="https://example.com", service={"name": "n", "namespace": "ns"}),
        ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"],
    ),
    (
        "blank url",
        webhook(url=""),
        [
            f"spec.conversion.webhookClientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme{URL_FORM}",
            f'spec.conversion.webhookClientConfig.url: Invalid value: "": host must be specified{URL_FORM}',
        ],
    ),
    (
        "url without user, query or fragment",
        webhook(url="https://u@example.com/c?x=1#top"),
        [
            'spec.conversion.webhookClientConfig.url: Invalid value: "u": user information is not permitted in the URL',
            'spec.conversion.webhookClientConfig.url: Invalid value: "top": fragments are not permitted in the URL',
            'spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL',
        ],
    ),
    (
        "unparsable url",
        webhook(url="https://example.com:http/"),
        [
            "spec.conversion.webhookClientConfig.url: Required value: url must be a valid URL: parse "
            f'"https://example.com:http/": invalid port ":http" after host{URL_FORM}'
        ],
    ),
    (
        "service name and namespace (upstream swaps them)",
        webhook(service={"name": "conv"}),
        ["spec.conversion.webhookClientConfig.service.name: Required value: service name is required"],
    ),
    (
        "service port range",
        webhook(service={"name": "conv", "namespace": "ns", "port": 65536}),
        [
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 65536: port is not valid: must be between "
            "1 and 65535, inclusive"
        ],
    ),
    (
        "service path",
        webhook(service={"name": "conv", "namespace": "ns", "path": "convert//Now"}),
        [
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"convert//Now\": must start with a '/'",
            'spec.conversion.webhookClientConfig.service.path: Invalid value: "convert//Now": segment[1] may not be empty',
            f'spec.conversion.webhookClientConfig.service.path: Invalid value: "convert//Now": segment[2]: {SUBDOMAIN}',
        ],
    ),
    (
        "review versions must include a known one",
        both(webhook(), setter("spec.conversion.webhook.conversionReviewVersions", ["v2"])),
        [
            'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1'
        ],
    ),
    (
        "review versions are unique labels",
        both(webhook(), setter("spec.conversion.webhook.conversionReviewVersions", ["v1", "V2", "v1"])),
        [
            f'spec.conversion.conversionReviewVersions[1]: Invalid value: "V2": {DNS1035}',
            'spec.conversion.conversionReviewVersions[2]: Invalid value: "v1": duplicate version',
        ],
    ),
    (
        "a bad CA bundle is accepted on create",
        both(webhook(), setter("spec.conversion.webhook.clientConfig.caBundle", "Cg==")),
        [],
    ),
    (
        "no webhook settings with strategy None",
        both(webhook(), setter("spec.conversion.strategy", "None")),
        [
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ],
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [c[1:] for c in CONVERSION_CASES], ids=[c[0] for c in CONVERSION_CASES]
)
def test_conversion(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate))) == expected


def test_webhook_conversion_needs_preserve_unknown_fields_false() -> None:
    crd = build(both(webhook(), setter("spec.preserveUnknownFields", True)))
    assert lines(validate_crd(crd)) == [
        'spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true',
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
        "to true in spec.versions[*].schema instead",
    ]


# -- create: API approval for community groups --------------------------------------------------


def _group(group: str, annotation: str | None = None) -> Callable[[dict[str, Any]], None]:
    def mutate(crd: dict[str, Any]) -> None:
        crd["spec"]["group"] = group
        crd["metadata"]["name"] = f"widgets.{group}"
        if annotation is not None:
            crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": annotation}

    return mutate


APPROVAL_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], list[str]]] = [
    ("other groups need nothing", _group("example.io"), []),
    (
        "missing",
        _group("apps.k8s.io"),
        [
            f'{APPROVAL}: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
            "see https://github.com/kubernetes/enhancements/pull/1111"
        ],
    ),
    (
        "neither a URL nor unapproved",
        _group("x.kubernetes.io", "yes"),
        [
            f'{APPROVAL}: Invalid value: "yes": protected groups must have approval annotation '
            '"api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see '
            "https://github.com/kubernetes/enhancements/pull/1111"
        ],
    ),
    ("approved", _group("k8s.io", "https://github.com/kubernetes/kubernetes/pull/78458"), []),
    ("bypassed", _group("k8s.io", "unapproved, experimental-only"), []),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in APPROVAL_CASES], ids=[c[0] for c in APPROVAL_CASES])
def test_api_approval(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate))) == expected


# -- create: the structural schema -----------------------------------------------------------------


def at(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set a path inside the (only) version's openAPIV3Schema."""
    return setter("spec.versions.0.schema.openAPIV3Schema." + path, value)


def map_list(items: dict[str, Any], **extensions: Any) -> dict[str, Any]:
    return {"type": "array", "x-kubernetes-list-type": "map", "items": items, **extensions}


KEYED_ITEMS = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
P = f"{ROOT}.properties"
S = f"{ROOT}.properties[spec].properties"

STRUCTURAL_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], list[str]]] = [
    ("root type required", at("type", None), [f"{ROOT}.type: Required value: must not be empty at the root"]),
    (
        "root type object",
        at("type", "string"),
        [f'{ROOT}.type: Invalid value: "string": must be object at the root'],
    ),
    (
        "field types required",
        lambda c: props(c)["spec"].pop("type"),
        [f"{P}[spec].type: Required value: must not be empty for specified object fields"],
    ),
    (
        "item types required",
        at("properties.spec.properties.list", {"type": "array", "items": {}}),
        [f"{S}[list].items.type: Required value: must not be empty for specified array items"],
    ),
    (
        "arrays need items",
        at("properties.spec.properties.list", {"type": "array"}),
        [f"{S}[list].items: Required value: must be specified"],
    ),
    (
        "unknown types",
        at("properties.spec.properties.size.type", "int"),
        [
            f'{S}[size].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", '
            '"object", "string"'
        ],
    ),
    (
        "type null",
        at("properties.spec.properties.size.type", "null"),
        [
            f'{S}[size].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", '
            '"object", "string"',
            f"{S}[size].type: Forbidden: type cannot be set to null, use nullable as an alternative",
        ],
    ),
    ("nullable root", at("nullable", True), [f"{ROOT}.nullable: Forbidden: nullable cannot be true at the root"]),
    (
        "metadata may restrict name and generateName only",
        at(
            "properties.metadata",
            {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 8}, "generateName": {"type": "string"}},
            },
        ),
        [],
    ),
    (
        "metadata with other properties",
        at("properties.metadata.properties", {"labels": {"type": "object"}}),
        [
            f"{P}[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is "
            "implicitly specified"
        ],
    ),
    (
        "metadata with a description",
        at("properties.metadata.description", "standard object metadata"),
        [
            f"{P}[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is "
            "implicitly specified"
        ],
    ),
    (
        "metadata, kind and apiVersion types",
        both(
            at("properties.metadata.type", "string"),
            at("properties.kind.type", "integer"),
            at("properties.apiVersion.type", "object"),
        ),
        [
            f'{P}[apiVersion].type: Invalid value: "object": must be string',
            f'{P}[kind].type: Invalid value: "integer": must be string',
            f'{P}[metadata].type: Invalid value: "string": must be object',
        ],
    ),
    (
        "top-level metadata default",
        at("properties.metadata.default", {"name": "x"}),
        [f"{P}[metadata].default: Forbidden: must not be set in top-level metadata"],
    ),
    (
        "additionalProperties at the root",
        at("additionalProperties", {"type": "string"}),
        [
            f"{ROOT}.additionalProperties: Forbidden: must not be used at the root",
            f"{ROOT}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ],
    ),
    (
        "additionalProperties and properties",
        at("properties.spec.additionalProperties", False),
        [f"{P}[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"],
    ),
    ("additionalProperties true and properties", at("properties.spec.additionalProperties", True), []),
    (
        "unsupported keywords",
        at(
            "properties.spec.properties.color",
            {
                "type": "string",
                "id": "c",
                "$ref": "#/x",
                "uniqueItems": True,
                "additionalItems": False,
                "patternProperties": {"a": {}},
                "definitions": {"d": {"type": "string"}},
                "dependencies": {"a": ["b"]},
            },
        ),
        [
            f"{S}[color].id: Forbidden: id is not supported",
            f"{S}[color].additionalItems: Forbidden: additionalItems is not supported",
            f"{S}[color].patternProperties: Forbidden: patternProperties is not supported",
            f"{S}[color].definitions: Forbidden: definitions is not supported",
            f"{S}[color].dependencies: Forbidden: dependencies is not supported",
            f"{S}[color].$ref: Forbidden: $ref is not supported",
            f"{S}[color].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ],
    ),
    (
        "$schema is refused only by the structural conversion",
        at("properties.spec.properties.color.$schema", "http://json-schema.org/draft-04/schema#"),
        [f"{ROOT}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"],
    ),
    (
        "items as an array",
        at("properties.spec.properties.list", {"type": "array", "items": [{"type": "string"}]}),
        [f"{S}[list].items: Forbidden: items must be a schema object and not an array"],
    ),
    (
        "x-kubernetes-preserve-unknown-fields false",
        at("properties.spec.x-kubernetes-preserve-unknown-fields", False),
        [f"{P}[spec].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"],
    ),
    (
        "preserved fields need no type",
        at("properties.spec.properties.any", {"x-kubernetes-preserve-unknown-fields": True}),
        [],
    ),
    (
        "int-or-string",
        at(
            "properties.spec.properties.port",
            {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        ),
        [],
    ),
    (
        "int-or-string under allOf",
        at(
            "properties.spec.properties.port",
            {
                "x-kubernetes-int-or-string": True,
                "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+$"}],
            },
        ),
        [],
    ),
    (
        "int-or-string is neither preserved nor embedded",
        at(
            "properties.spec.properties.port",
            {
                "x-kubernetes-int-or-string": True,
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-embedded-resource": True,
                "type": "object",
                "properties": {"a": {"type": "string"}},
            },
        ),
        [
            f"{S}[port].x-kubernetes-embedded-resource: Invalid value: true: must be false if "
            "x-kubernetes-int-or-string is true",
            f"{S}[port].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
            "x-kubernetes-int-or-string is true",
        ],
    ),
    (
        "types inside junctors",
        at("properties.spec.properties.size.anyOf", [{"type": "integer", "minimum": 1}, {"maximum": 5}]),
        [f"{S}[size].anyOf[0].type: Forbidden: must be empty to be structural"],
    ),
    (
        "generic keywords inside junctors",
        at(
            "properties.spec.properties.size.allOf",
            [
                {
                    "default": 1,
                    "description": "d",
                    "title": "t",
                    "nullable": True,
                    "x-kubernetes-validations": [{"rule": "true"}],
                    "x-kubernetes-list-type": "atomic",
                }
            ],
        ),
        [
            f"{S}[size].allOf[0].default: Forbidden: must be undefined to be structural",
            f"{S}[size].allOf[0].description: Forbidden: must be empty to be structural",
            f"{S}[size].allOf[0].nullable: Forbidden: must be false to be structural",
            f"{S}[size].allOf[0].title: Forbidden: must be empty to be structural",
            f"{S}[size].allOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural",
            f"{S}[size].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
            f"{S}[size].allOf[0].type: Required value: must be array if x-kubernetes-list-type is specified",
        ],
    ),
    (
        "metadata inside junctors",
        at("anyOf", [{"properties": {"metadata": {"required": ["name"]}}}]),
        [f"{ROOT}.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"],
    ),
    (
        "junctors only restrict specified fields",
        at("allOf", [{"properties": {"spec": {"properties": {"nope": {"minLength": 1}}}}}]),
        [
            f"{P}[spec].properties[nope]: Required value: because it is defined in "
            f"{ROOT}.allOf[0].properties[spec].properties[nope]"
        ],
    ),
    (
        "pattern must be a Go regular expression",
        at("properties.spec.properties.color.pattern", "^(?!red)"),
        [
            f'{S}[color].pattern: Invalid value: "^(?!red)": must be a valid regular expression, but isn\'t: error '
            "parsing regexp: invalid or unsupported Perl syntax: `(?!`"
        ],
    ),
    (
        "embedded resources are objects with properties or preserved fields",
        at("properties.spec.properties.template", {"x-kubernetes-embedded-resource": True}),
        [
            f"{S}[template].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true "
            "without x-kubernetes-preserve-unknown-fields",
            f"{S}[template].type: Required value: must be object if x-kubernetes-embedded-resource is true",
        ],
    ),
    (
        "embedded resources have no additionalProperties",
        at(
            "properties.spec.properties.template",
            {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
                "additionalProperties": {"type": "string"},
            },
        ),
        [f"{S}[template].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"],
    ),
    (
        "embedded resource meta",
        at(
            "properties.spec.properties.template",
            {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {
                    "kind": {"type": "integer"},
                    "metadata": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {
                            "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}}
                        },
                    },
                },
            },
        ),
        [
            f'{S}[template].properties[kind].type: Invalid value: "integer": must be string',
            f"{S}[template].properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of "
            "resource meta",
            f"{S}[template].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not "
            "be set inside additionalProperties applying to object metadata",
        ],
    ),
    (
        "embedded resources inside resource meta (upstream's case)",
        at(
            "properties.embedded",
            {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {
                    "metadata": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                    "apiVersion": {
                        "type": "string",
                        "properties": {
                            "foo": {
                                "type": "object",
                                "x-kubernetes-embedded-resource": True,
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    },
                    "kind": {
                        "type": "string",
                        "properties": {
                            "foo": {
                                "type": "object",
                                "x-kubernetes-embedded-resource": True,
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    },
                },
            },
        ),
        [
            f"{P}[embedded].properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of "
            "resource meta",
            f"{P}[embedded].properties[apiVersion].properties[foo].x-kubernetes-embedded-resource: Forbidden: must not "
            "be used inside of resource meta",
            f"{P}[embedded].properties[kind].properties[foo].x-kubernetes-embedded-resource: Forbidden: must not be "
            "used inside of resource meta",
        ],
    ),
    (
        "contradicting meta field types (upstream's case)",
        lambda c: root(c).update(
            properties={
                "apiVersion": {"type": "number"},
                "kind": {"type": "number"},
                "metadata": {
                    "type": "number",
                    "properties": {
                        "name": {"type": "string", "pattern": "abc"},
                        "generateName": {"type": "string", "pattern": "abc"},
                        "generation": {"type": "integer"},
                    },
                },
                "valid": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "generation": {"type": "integer", "minimum": 42},
                            },
                        },
                    },
                },
                "invalid": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "apiVersion": {"type": "number"},
                        "kind": {"type": "number"},
                        "metadata": {"type": "number"},
                    },
                },
                "noEmbeddedObject": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "number"},
                        "kind": {"type": "number"},
                        "metadata": {"type": "number"},
                    },
                },
            }
        ),
        [
            f'{P}[apiVersion].type: Invalid value: "number": must be string',
            f'{P}[invalid].properties[apiVersion].type: Invalid value: "number": must be string',
            f'{P}[invalid].properties[kind].type: Invalid value: "number": must be string',
            f'{P}[invalid].properties[metadata].type: Invalid value: "number": must be object',
            f'{P}[kind].type: Invalid value: "number": must be string',
            f'{P}[metadata].type: Invalid value: "number": must be object',  # sorted by text, as upstream does
            f"{P}[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is "
            "implicitly specified",
        ],
    ),
    (
        "map lists need keys and object items",
        at("properties.spec.properties.list", {"type": "array", "x-kubernetes-list-type": "map"}),
        [
            f"{S}[list].items: Required value: must be specified",  # the structural errors come first
            f"{S}[list].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            f"{S}[list].items: Required value: must have a schema if x-kubernetes-list-type is map",
        ],
    ),
    (
        "map list items are objects",
        at("properties.spec.properties.list", map_list({"type": "string"}, **{"x-kubernetes-list-map-keys": ["a"]})),
        [
            f'{S}[list].items.type: Invalid value: "string": must be object if parent array\'s x-kubernetes-list-type is map'
        ],
    ),
    (
        "map list keys are scalar item properties, once",
        at(
            "properties.spec.properties.list",
            map_list(
                {
                    "type": "object",
                    "required": ["name", "sub"],
                    "properties": {"name": {"type": "string"}, "sub": {"type": "object"}},
                },
                **{"x-kubernetes-list-map-keys": ["name", "sub", "nope", "name"]},
            ),
        ),
        [
            f'{S}[list].items.properties[sub].type: Invalid value: "object": must be a scalar type if parent array\'s '
            "x-kubernetes-list-type is map",
            f'{S}[list].x-kubernetes-list-map-keys: Invalid value: []string{{"name", "sub", "nope", "name"}}: entries '
            "must all be names of item properties",
            f'{S}[list].x-kubernetes-list-map-keys: Invalid value: []string{{"name", "sub", "nope", "name"}}: must not '
            "contain duplicate entries",
        ],
    ),
    (
        "map list keys are required or defaulted, and not nullable",
        at(
            "properties.spec.properties.list",
            map_list(
                {"type": "object", "nullable": True, "properties": {"name": {"type": "string", "nullable": True}}},
                **{"x-kubernetes-list-map-keys": ["name"]},
            ),
        ),
        [
            f"{S}[list].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is map",
            f"{S}[list].items.properties[name].default: Required value: this property is in "
            "x-kubernetes-list-map-keys, so it must have a default or be a required property",
            f"{S}[list].items.properties[name].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so "
            "it cannot be nullable",
        ],
    ),
    (
        "valid map list",
        at("properties.spec.properties.list", map_list(KEYED_ITEMS, **{"x-kubernetes-list-map-keys": ["name"]})),
        [],
    ),
    (
        "list type values and placement",
        both(
            at(
                "properties.spec.properties.list",
                {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
            ),
            at("properties.spec.properties.size.x-kubernetes-list-type", "atomic"),
        ),
        [
            f'{S}[size].type: Invalid value: "integer": must be array if x-kubernetes-list-type is specified',
            f'{S}[list].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"',
        ],
    ),
    (
        "list map keys need a map list",
        at(
            "properties.spec.properties.list",
            {"type": "array", "items": KEYED_ITEMS, "x-kubernetes-list-map-keys": ["name"]},
        ),
        [f"{S}[list].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"],
    ),
    (
        "set items are atomic",
        at(
            "properties.spec.properties.list",
            {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}},
        ),
        [
            f'{S}[list].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with '
            "x-kubernetes-list-type=set"
        ],
    ),
    (
        "set of lists",
        at(
            "properties.spec.properties.list",
            {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
        ),
        [
            f'{S}[list].items.x-kubernetes-list-type: Invalid value: "set": must be atomic as item of a list with '
            "x-kubernetes-list-type=set"
        ],
    ),
    (
        "map type values and placement",
        both(
            at("properties.spec.properties.tags.x-kubernetes-map-type", "loose"),
            at("properties.spec.properties.color.x-kubernetes-map-type", "atomic"),
        ),
        [
            f'{S}[color].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified',
            f'{S}[tags].x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular"',
        ],
    ),
    (
        "validation rules: static checks",
        at(
            "properties.spec.x-kubernetes-validations",
            [
                {"rule": " "},
                {"rule": "self.size > 0 &&\n self.size < 9"},
                {"rule": "true", "message": "two\nlines"},
                {"rule": "true", "message": "  "},
                {"rule": "true", "messageExpression": " ", "reason": "FieldValueBad"},
                {"rule": "true", "fieldPath": ".nope"},
                {"rule": "true", "fieldPath": ".tags['a-b']"},
            ],
        ),
        [
            f"{P}[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified",
            f"{P}[spec].x-kubernetes-validations[1].message: Required value: message must be specified if rule "
            "contains line breaks",
            f'{P}[spec].x-kubernetes-validations[2].message: Invalid value: "two\\nlines": message must not contain '
            "line breaks",
            f'{P}[spec].x-kubernetes-validations[3].message: Invalid value: "  ": message must be non-empty if specified',
            f"{P}[spec].x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be "
            "non-empty if specified",
            f'{P}[spec].x-kubernetes-validations[4].reason: Unsupported value: "FieldValueBad": supported values: '
            '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
            f'{P}[spec].x-kubernetes-validations[5].fieldPath: Invalid value: ".nope": fieldPath must be a valid path',
        ],
    ),
    (
        "validation rules: fieldPath shape",
        at(
            "properties.spec.x-kubernetes-validations",
            [{"rule": "true", "fieldPath": " "}, {"rule": "true", "fieldPath": ".color\n"}],
        ),
        [
            f'{P}[spec].x-kubernetes-validations[0].fieldPath: Invalid value: " ": fieldPath must be non-empty if '
            "specified",
            f'{P}[spec].x-kubernetes-validations[0].fieldPath: Invalid value: " ": fieldPath must be a valid path',
            f'{P}[spec].x-kubernetes-validations[1].fieldPath: Invalid value: ".color\\n": fieldPath must not contain '
            "line breaks",
            f'{P}[spec].x-kubernetes-validations[1].fieldPath: Invalid value: ".color\\n": fieldPath must be a valid '
            "path",
        ],
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [c[1:] for c in STRUCTURAL_CASES], ids=[c[0] for c in STRUCTURAL_CASES]
)
def test_structural_schema(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert lines(validate_crd(build(mutate))) == expected


def test_a_schema_that_does_not_convert_hides_its_structural_errors() -> None:
    # NewStructural refuses `id`, so the missing type is never looked at; the keyword check says why.
    crd = build(both(at("properties.spec.properties.color.id", "c"), lambda c: props(c)["status"].pop("type")))
    assert lines(validate_crd(crd)) == [f"{S}[color].id: Forbidden: id is not supported"]


def test_status_subresource_restricts_the_root() -> None:
    crd = build(both(setter("spec.versions.0.subresources", {"status": {}}), at("type", "string")))
    assert lines(validate_crd(crd)) == [
        f'{ROOT}.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the '
        "status subresource is enabled",
        f'{ROOT}.type: Invalid value: "string": must be object at the root',
    ]
    crd = build(both(setter("spec.versions.0.subresources", {"status": {}}), at("minProperties", 1)))
    (err,) = lines(validate_crd(crd))
    assert err.startswith(
        f'{ROOT}: Invalid value: apiextensions.JSONSchemaProps{{ID:"", Schema:"", '
        'Ref:(*string)(nil), Description:"", Type:"object", Nullable:false,'
    )
    assert err.endswith(
        "}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength "
        "MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
        "XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status "
        "subresource is enabled"
    )
    assert "MinProperties:(*int64)(0xc000000000)" in err
    assert 'Properties:map[string]apiextensions.JSONSchemaProps{"apiVersion":apiextensions.JSONSchemaProps{' in err


def test_defaults_need_preserve_unknown_fields_false() -> None:
    crd = build(both(at("properties.spec.properties.size.default", 1), setter("spec.preserveUnknownFields", True)))
    assert lines(validate_crd(crd)) == [
        "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
        "to true in spec.versions[*].schema instead",
    ]


def test_hooks_run_where_upstream_checks_defaults_and_rules() -> None:
    seen: list[tuple[str, str]] = []

    def defaults(schema: dict[str, Any], path: str) -> list[Any]:
        seen.append(("defaults", path))
        return []

    def rules(node: dict[str, Any], path: str, uncorrelatable: str | None) -> list[Any]:
        seen.append(("rules", f"{path} {uncorrelatable}"))
        return []

    crd = build(
        both(
            at("properties.spec.x-kubernetes-validations", [{"rule": "self.size > 0"}]),
            at(
                "properties.spec.properties.list",
                {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}},
            ),
        )
    )
    assert validate_crd(crd, defaults_validator=defaults, rules_checker=rules) == []
    assert seen == [
        ("defaults", ROOT),
        ("rules", f"{S}[list].items {P}[spec].properties[list]"),
        ("rules", f"{P}[spec] None"),
    ]
    seen.clear()
    broken = build(both(at("properties.spec.x-kubernetes-validations", [{"rule": "true"}]), at("type", None)))
    validate_crd(broken, defaults_validator=defaults, rules_checker=rules)
    assert seen == []  # not structural: neither defaults nor rules are looked at


# -- update ----------------------------------------------------------------------------------------


def established(crd: dict[str, Any]) -> dict[str, Any]:
    crd.setdefault("status", {})["conditions"] = [{"type": "Established", "status": "True"}]
    return crd


def _cert_pem() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.datetime(2020, 1, 1))
        .not_valid_after(datetime.datetime(2040, 1, 1))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


CERT = _cert_pem()
BAD_BUNDLE = "Cg=="  # a lone newline
BAD_BUNDLE_ERROR = (
    "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0xa}: unable to load root certificates: "
    "unable to parse bytes as PEM block"
)
INT_TYPE = at("properties.spec.properties.size.type", "int")
NO_SPEC_TYPE = at("properties.spec.type", None)
OBJECT_SET = at(
    "properties.spec.properties.list", {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}
)
UNDEFAULTED_KEY = at(
    "properties.spec.properties.list",
    map_list(
        {"type": "object", "properties": {"name": {"type": "string"}}}, **{"x-kubernetes-list-map-keys": ["name"]}
    ),
)


def _bundle(value: str) -> Callable[[dict[str, Any]], None]:
    return both(webhook(), setter("spec.conversion.webhook.clientConfig.caBundle", value))


def _reviews(*versions: str) -> Callable[[dict[str, Any]], None]:
    return both(webhook(), setter("spec.conversion.webhook.conversionReviewVersions", list(versions)))


UPDATE_CASES: list[tuple[str, Callable[[dict], Any] | None, bool, Callable[[dict], Any] | None, list[str]]] = [
    # (name, mutation of the stored CRD, stored CRD established, mutation of the new one, errors)
    ("unchanged", None, True, None, []),
    (
        "group and plural never change",
        None,
        False,
        both(setter("spec.group", "example.org"), setter("spec.names.plural", "gadgets")),
        [
            'spec.group: Invalid value: "example.org": field is immutable',
            'spec.names.plural: Invalid value: "gadgets": field is immutable',
        ],
    ),
    (
        "scope and kind change before the CRD is established",
        None,
        False,
        both(setter("spec.scope", "Cluster"), setter("spec.names.kind", "Gadget")),
        [],
    ),
    (
        "scope and kind are fixed once established",
        None,
        True,
        both(setter("spec.scope", "Cluster"), setter("spec.names.kind", "Gadget")),
        [
            'spec.scope: Invalid value: "Cluster": field is immutable',
            'spec.names.kind: Invalid value: "Gadget": field is immutable',
        ],
    ),
    (
        "invalid types stay allowed when stored",
        INT_TYPE,
        True,
        at("properties.spec.properties.color.maxLength", 3),
        [],
    ),
    (
        "invalid types are not introduced",
        None,
        True,
        INT_TYPE,
        [
            f'{S}[size].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", '
            '"object", "string"'
        ],
    ),
    (
        "non-structural schemas must become structural (pruning needs it)",
        NO_SPEC_TYPE,
        True,
        NO_SPEC_TYPE,
        [f"{P}[spec].type: Required value: must not be empty for specified object fields"],
    ),
    ("non-atomic set items stay allowed when stored", OBJECT_SET, True, OBJECT_SET, []),
    (
        "non-atomic set items are not introduced",
        None,
        True,
        OBJECT_SET,
        [
            f'{S}[list].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with '
            "x-kubernetes-list-type=set"
        ],
    ),
    ("undefaulted map keys stay allowed when stored", UNDEFAULTED_KEY, True, UNDEFAULTED_KEY, []),
    (
        "undefaulted map keys are not introduced",
        None,
        True,
        UNDEFAULTED_KEY,
        [
            f"{S}[list].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, "
            "so it must have a default or be a required property"
        ],
    ),
    ("unknown review versions stay allowed when stored", _reviews("v2"), True, _reviews("v3"), []),
    (
        "unknown review versions are not introduced",
        _reviews("v1"),
        True,
        _reviews("v2"),
        [
            'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, '
            "v1beta1"
        ],
    ),
    (
        "a bad CA bundle may replace a good one before the CRD is established",
        _bundle(CERT),
        False,
        _bundle(BAD_BUNDLE),
        [],
    ),
    ("a bad CA bundle may replace a bad one", _bundle(BAD_BUNDLE), True, _bundle("Cgo="), []),
    ("a bad CA bundle may not replace a good one", _bundle(CERT), True, _bundle(BAD_BUNDLE), [BAD_BUNDLE_ERROR]),
    ("a bad CA bundle may not be added", webhook(), True, _bundle(BAD_BUNDLE), [BAD_BUNDLE_ERROR]),
    (
        "stored versions stay in spec.versions",
        both(add_version("v1beta1"), setter("status.storedVersions", ["v1", "v1beta1"])),
        True,
        lambda c: c["spec"]["versions"].pop(),
        ['status.storedVersions[1]: Invalid value: "v1beta1": must appear in spec.versions'],
    ),
    ("preserveUnknownFields stays allowed when stored", setter("spec.preserveUnknownFields", True), True, None, []),
    (
        "preserveUnknownFields is not switched on",
        None,
        True,
        setter("spec.preserveUnknownFields", True),
        [
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
            "to true in spec.versions[*].schema instead"
        ],
    ),
    (
        "a schema stays optional when none was stored, but pruning needs one",
        setter("spec.versions.0.schema", None),
        True,
        None,
        ["spec.versions[0].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"],
    ),
    (
        "a schema stays required once stored",
        None,
        True,
        setter("spec.versions.0.schema", None),
        ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"],
    ),
    (
        "a missing approval stays allowed",
        _group("apps.k8s.io"),
        True,
        at("properties.spec.properties.size.minimum", 0),
        [],
    ),
    (
        "an approval may not be dropped",
        _group("apps.k8s.io", "https://github.com/kubernetes/enhancements/pull/1111"),
        True,
        setter("metadata.annotations", None),
        [
            f'{APPROVAL}: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
            "see https://github.com/kubernetes/enhancements/pull/1111"
        ],
    ),
]


@pytest.mark.parametrize(
    ("old_mutate", "is_established", "mutate", "expected"),
    [c[1:] for c in UPDATE_CASES],
    ids=[c[0] for c in UPDATE_CASES],
)
def test_validate_crd_update(
    old_mutate: Callable[[dict[str, Any]], Any] | None,
    is_established: bool,
    mutate: Callable[[dict[str, Any]], Any] | None,
    expected: list[str],
) -> None:
    old = build(old_mutate)
    if is_established:
        established(old)
    new = copy.deepcopy(old)
    if mutate is not None:
        mutate(new)
    set_defaults(new)  # as the server decodes the update
    assert lines(validate_crd_update(new, old)) == expected


def test_invalid_types_are_refused_on_create() -> None:
    assert lines(validate_crd(build(INT_TYPE))) == [
        f'{S}[size].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", '
        '"object", "string"'
    ]


def test_status_validation_checks_accepted_names_only() -> None:
    crd = build()
    crd["status"] = {"acceptedNames": {"plural": "widgets", "kind": "Wid get"}, "storedVersions": []}
    assert lines(validate_crd_status(crd)) == [
        f'status.acceptedNames.kind: Invalid value: "Wid get": may have mixed case, but should otherwise match: {DNS1035}'
    ]


# -- the strategy's preparation --------------------------------------------------------------------


def test_prepare_for_create_resets_status_and_generation() -> None:
    crd = build(versions=2)
    crd["metadata"]["generation"] = 7
    crd["status"] = {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v0"]}
    prepare_for_create(crd)
    assert crd["status"] == {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    assert crd["metadata"]["generation"] == 1


def test_prepare_for_update_keeps_status_and_records_a_new_storage_version() -> None:
    old = established(build(versions=2))
    old["metadata"]["generation"] = 3
    new = copy.deepcopy(old)
    new["status"] = {"storedVersions": ["v9"]}
    new["spec"]["versions"][0]["storage"] = False
    new["spec"]["versions"][1]["storage"] = True
    prepare_for_update(new, old)
    assert new["status"]["storedVersions"] == ["v1", "v1beta1"]
    assert new["status"]["conditions"] == old["status"]["conditions"]
    assert old["status"]["storedVersions"] == ["v1"]  # the stored object is not touched
    assert new["metadata"]["generation"] == 4


def test_prepare_for_update_without_spec_change_keeps_generation() -> None:
    old = build()
    old["metadata"]["generation"] = 3
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"a": "b"}
    prepare_for_update(new, old)
    assert new["metadata"]["generation"] == 3


def test_prepare_for_status_update_keeps_spec_but_not_metadata() -> None:
    old = build()
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["metadata"]["labels"] = {"a": "b"}
    new["status"]["acceptedNames"] = {"plural": "widgets", "kind": "Widget"}
    prepare_for_status_update(new, old)
    assert new["spec"] == old["spec"]
    assert new["metadata"]["labels"] == {"a": "b"}  # upstream's reset of metadata is a no-op for CRDs
    assert new["status"]["acceptedNames"] == {"plural": "widgets", "kind": "Widget"}


# -- JSON paths into a schema and Go regular expressions ----------------------------------------

FIELD_PATH_SCHEMA = {
    "type": "object",
    "properties": {
        "foo": {"type": "object", "additionalProperties": {"type": "object", "properties": {"f1": {"type": "number"}}}},
        "a": {
            "type": "object",
            "properties": {
                "bbb": {"type": "object", "properties": {"c": {"type": "number"}, "34": {"type": "number"}}},
                "bbb.c": {"type": "object", "properties": {"a-b34": {"type": "number"}}},
            },
        },
        "list": {
            "type": "array",
            "items": {"type": "object", "properties": {"a": {"type": "number"}, "a-b.34": {"type": "number"}}},
        },
    },
}


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (".a", None),
        (".a.bbb", None),
        (".foo.f1", None),
        (".a['bbb']", None),
        (".a['bbb.c']", None),
        (".a['bbb.c'].a-b34", None),
        (".a['bbb.c']['a-b34']", None),
        (".a.bbb.c", None),
        (".a.bbb['34']", None),
        (".a.bbb.34", None),
        (".list", None),
        (".a.foo", "does not refer to a valid field"),
        (".a.bbb[0]", "expected single quoted string but got 0"),
        (".list[1]", "expected single quoted string but got 1"),
        (".list.a", "does not refer to a valid field"),
        (".list['a-b.34']", "does not refer to a valid field"),
        (".list.a-b.34", "does not refer to a valid field"),
        ("a", "expected [ or . but got: a"),
        (".c", "does not refer to a valid field"),
        (".a..b", "does not refer to a valid field"),
        (".list[-1]", "expected single quoted string but got -1"),
        (".list[1.0]", "expected single quoted string but got 1"),
        (".a.", "unexpected end of JSON path"),
        (".a['bbb'", "unexpected end of JSON path"),
        (".a['bbb'x", "expected ] but got x"),
        (".a['b\\q']", "invalid string literal: invalid escape char \\q"),
    ],
)
def test_valid_field_path(path: str, error: str | None) -> None:
    if error is None:
        valid_field_path(path, FIELD_PATH_SCHEMA)
    else:
        with pytest.raises(FieldPathError) as info:
            valid_field_path(path, FIELD_PATH_SCHEMA)
        assert str(info.value) == error


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        ("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", None),
        (r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$", None),
        (r"\pL+\z", None),  # RE2-only syntax
        ("(?i)abc", None),
        ("(?<name>x)", None),
        ("(", "missing closing ): `(`"),
        ("a)", "unexpected ): `a)`"),
        ("[a", "missing closing ]: `[a`"),
        ("*a", "missing argument to repetition operator: `*`"),
        ("a**", "invalid nested repetition operator: `**`"),
        ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        (r"(a)\1", r"invalid escape sequence: `\1`"),
        (r"a\Z", r"invalid escape sequence: `\Z`"),
        ("a{1001}", "invalid repeat count: `{1001}`"),
        ("[z-a]", "invalid character class range: `z-a`"),
    ],
)
def test_go_regexp(pattern: str, error: str | None) -> None:
    assert go_regexp_error(pattern) == (None if error is None else f"error parsing regexp: {error}")


def test_structural_errors_are_sorted_like_upstream() -> None:
    schema = {"type": "object", "properties": {"b": {}, "a": {"type": "array"}}}
    assert lines(structural_errors(schema, "s")) == [
        "s.properties[a].items: Required value: must be specified",
        "s.properties[b].type: Required value: must not be empty for specified object fields",
    ]
