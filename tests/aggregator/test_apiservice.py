"""APIService objects: upstream's validation messages, defaults, the status split, the Table row, and the order
of groups and versions APIServices imply."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pyk8s.aggregator import apiservice as api
from pyk8s.aggregator.registry import APIServiceStrategy, apiservice_row, available_cell
from pyk8s.aggregator.validation import validate_apiservice, validate_status
from pyk8s.api.resources import TABLE


def apiservice(name: str = "v1alpha1.wardle.example.com", **spec: Any) -> dict[str, Any]:
    base = {"group": "wardle.example.com", "version": "v1alpha1", "groupPriorityMinimum": 1000,
            "versionPriority": 15, "service": {"namespace": "wardle", "name": "api", "port": 443}}  # fmt: skip
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": {"name": name}, "spec": {**base, **spec}}


def strategy() -> APIServiceStrategy:
    r = TABLE.get(api.GROUP, api.VERSION, "apiservices")
    assert r is not None
    return APIServiceStrategy(r)


BUNDLE = base64.b64encode(b"x" * 12).decode()


@pytest.mark.parametrize(
    ("name", "spec", "errors"),
    [
        ("v1alpha1.wardle.example.com", {}, []),
        ("v1.", {"group": "", "version": "v1", "service": None}, []),
        (
            "v1.wardle.example.com",
            {},
            ['metadata.name: Invalid value: "v1.wardle.example.com": must be `spec.version+"."+spec.group`: '
             '"v1alpha1.wardle.example.com"'],
        ),
        (
            "v2.",
            {"group": "", "version": "v2"},
            ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"],
        ),
        (
            "v1.Bad_Group",
            {"group": "Bad_Group", "version": "v1"},
            ['spec.group: Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of lower case '
             "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
             "'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
        ),
        (
            "1v.wardle.example.com",
            {"version": "1v"},
            ['spec.version: Invalid value: "1v": a DNS-1035 label must consist of lower case alphanumeric characters '
             "or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
             "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"],
        ),
        (
            "v1alpha1.wardle.example.com",
            {"groupPriorityMinimum": 20001, "versionPriority": 0},
            ["spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000",
             "spec.versionPriority: Invalid value: 0: must be positive and less than 1000"],
        ),
        (
            "v1alpha1.wardle.example.com",
            {"groupPriorityMinimum": 20000, "versionPriority": 1000},
            [],
        ),
        (
            "v1alpha1.wardle.example.com",
            {"service": None, "caBundle": BUNDLE, "insecureSkipTLSVerify": True},
            ['spec.caBundle: Invalid value: "12 bytes": local APIServices may not have a caBundle',
             "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"],
        ),
        (
            "v1alpha1.wardle.example.com",
            {"service": {"port": 0}},
            ["spec.service.namespace: Required value", "spec.service.name: Required value",
             "spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"],
        ),
        (
            "v1alpha1.wardle.example.com",
            {"caBundle": BUNDLE, "insecureSkipTLSVerify": True},
            ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"],
        ),
    ],
)  # fmt: skip
def test_validation_has_upstreams_rules_and_messages(name, spec, errors):
    obj = apiservice(name, **spec)
    if obj["spec"].get("service") is None:
        obj["spec"].pop("service")
    assert [str(e) for e in validate_apiservice(obj)] == errors


def test_a_name_that_is_not_a_path_segment_gets_only_that_error():
    # the spec-derived name rule is checked once the name is a valid path segment (ObjectMeta reports that)
    assert validate_apiservice(apiservice("v1/bad")) == []


def test_condition_statuses_must_be_true_false_or_unknown():
    obj = apiservice(status={})
    obj["status"] = {"conditions": [{"type": "Available", "status": "True"}, {"type": "Available", "status": "Maybe"}]}
    assert [str(e) for e in validate_status(obj)] == [
        'status.conditions[1].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"'
    ]


def test_defaults_and_the_status_of_a_new_apiservice():
    s = strategy()
    remote = apiservice(service={"namespace": "wardle", "name": "api"}, status={"conditions": []})
    s.default(remote)
    assert remote["spec"]["service"]["port"] == 443
    s.prepare_for_create(remote)
    assert "status" not in remote  # a remote one is not Available until checked

    local = apiservice("v1.", group="", version="v1")
    del local["spec"]["service"]
    s.default(local)
    s.prepare_for_create(local)
    [cond] = local["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Available", "True", "Local", "Local APIServices are always available"
    )  # fmt: skip


def test_an_update_keeps_the_status_and_a_status_update_keeps_spec_and_labels():
    s = strategy()
    old = apiservice()
    old["metadata"]["labels"] = {"a": "b"}
    old["status"] = {"conditions": [api.new_condition("True", "Passed", "all checks passed")]}
    new = apiservice(versionPriority=20)
    new["status"] = {"conditions": []}
    s.prepare_for_update(new, old)
    assert new["status"] == old["status"] and new["spec"]["versionPriority"] == 20
    status_write = apiservice(versionPriority=99)
    status_write["metadata"]["labels"] = {"c": "d"}
    status_write["status"] = {"conditions": [api.new_condition("False", "FailedDiscoveryCheck", "x")]}
    s.prepare_for_status_update(status_write, old)
    assert status_write["spec"] == old["spec"] and status_write["metadata"]["labels"] == {"a": "b"}
    assert status_write["status"]["conditions"][0]["reason"] == "FailedDiscoveryCheck"


def test_set_condition_moves_the_transition_time_only_with_the_status():
    obj = apiservice()
    first = {**api.new_condition("False", "ServiceNotFound", "m1"), "lastTransitionTime": "2024-01-01T00:00:00Z"}
    api.set_condition(obj, first)
    api.set_condition(obj, {**api.new_condition("False", "MissingEndpoints", "m2"), "lastTransitionTime": "later"})
    assert api.condition(obj) == {**first, "reason": "MissingEndpoints", "message": "m2"}
    api.set_condition(obj, {**api.new_condition("True", "Passed", "all checks passed"), "lastTransitionTime": "now"})
    assert api.condition(obj)["lastTransitionTime"] == "now"  # type: ignore[index]


@pytest.mark.parametrize(
    ("conditions", "cell"),
    [
        ([], "Unknown"),
        ([{"type": "Available", "status": "True", "reason": "Passed"}], "True"),
        ([{"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck"}], "False (FailedDiscoveryCheck)"),
        ([{"type": "Available", "status": "Unknown"}], "Unknown"),
    ],
)
def test_the_available_column(conditions, cell):
    obj = apiservice()
    obj["status"] = {"conditions": conditions}
    assert available_cell(obj) == cell


def test_the_table_row_names_the_service_or_local():
    remote = apiservice()
    remote["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    assert apiservice_row(remote)[:3] == ["v1alpha1.wardle.example.com", "wardle/api", "Unknown"]
    local = apiservice("v1.")
    del local["spec"]["service"]
    assert apiservice_row(local)[1] == "Local"


def test_groups_sort_by_priority_then_name_and_versions_by_priority_then_kube_order():
    def s(name: str, gp: int, vp: int) -> dict[str, Any]:
        version, _, group = name.partition(".")
        return apiservice(name, group=group, version=version, groupPriorityMinimum=gp, versionPriority=vp)

    items = [
        s("v1.b.example.com", 100, 15), s("v1beta1.a.example.com", 100, 15), s("v1.a.example.com", 100, 15),
        s("v2alpha1.a.example.com", 100, 15), s("v1.high.example.com", 500, 1), s("v1.low.example.com", 10, 9),
        s("v9.low.example.com", 10, 1),
    ]  # fmt: skip
    ordered = [[api.name_of(x) for x in group] for group in api.sorted_by_group_and_version(items)]
    assert ordered == [
        ["v1.high.example.com"],
        ["v1.a.example.com", "v1beta1.a.example.com", "v2alpha1.a.example.com"],
        ["v1.b.example.com"],
        ["v1.low.example.com", "v9.low.example.com"],
    ]
