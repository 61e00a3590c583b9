"""batch/v1 Job defaulting and validation of per-index back-off, podFailurePolicy and successPolicy, case by case
with upstream's messages (upstream: pkg/apis/batch/v1/defaults.go, pkg/apis/batch/validation's
TestValidateJob cases)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyk8s.api.resources import RESOURCES, find_by_name
from pyk8s.apiserver.registry.batch import JobStrategy, default_job_spec, validate_job_spec


def spec(**fields: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
        **fields,
    }  # fmt: skip
    default_job_spec(s)
    return s


def messages(s: dict[str, Any]) -> list[str]:
    return [str(err) for err in validate_job_spec(s)]


def indexed(**fields: Any) -> dict[str, Any]:
    return spec(completionMode="Indexed", completions=4, **fields)


EXIT = {"operator": "In", "values": [1]}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backoffLimitPerIndex": 1},
         "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"),
        ({"completionMode": "Indexed", "completions": 4, "maxFailedIndexes": 1},
         "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"),
        ({"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": -1},
         "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0"),
        ({"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1, "maxFailedIndexes": 5},
         "spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions"),
        ({"completionMode": "Indexed", "completions": 200_000, "parallelism": 1, "backoffLimitPerIndex": 1},
         "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000"),
        ({"completionMode": "Indexed", "parallelism": 2},
         "spec.completions: Required value: when completion mode is Indexed"),
        ({"completionMode": "Indexed", "completions": 4, "podFailurePolicy": {"rules": [
            {"action": "FailIndex", "onExitCodes": EXIT}]}},
         'spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
        ({"podFailurePolicy": {"rules": [{"action": "Retry", "onExitCodes": EXIT}]}},
         'spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", '
         '"FailJob", "Ignore"'),
        ({"podFailurePolicy": {"rules": [{"action": "Count"}]}},
         "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is "
         "required"),
        ({"podFailurePolicy": {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [2, 1]}}]}},
         "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{2, 1}: must be ordered"),
        ({"podFailurePolicy": {"rules": [{"action": "Count", "onExitCodes": {"containerName": "x", **EXIT}}]}},
         'spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "x": must be one of the container '
         "or initContainer names in the pod template"),
        ({"podFailurePolicy": {"rules": []}, "podReplacementPolicy": "TerminatingOrFailed"},
         'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"'),
        ({"successPolicy": {"rules": [{"succeededCount": 1}]}},
         'spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode'),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": []}},
         "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is "
         "specified"),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": [{}]}},
         "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be "
         "specified"),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": [{"succeededIndexes": "2-1"}]}},
         'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "2-1": error parsing succeededIndexes: '
         "non-increasing order, previous: 2, current: 1"),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": [{"succeededIndexes": "1-2-3"}]}},
         'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the '
         "fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated "
         "by '-'"),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": [
            {"succeededIndexes": "0,1", "succeededCount": 3}]}},
         "spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number "
         "of indexes in the specified succeededIndexes field)"),
        ({"completionMode": "Indexed", "completions": 4, "successPolicy": {"rules": [{"succeededCount": 5}]}},
         "spec.successPolicy.rules[0].succeededCount: Invalid value: 5: must be less than or equal to 4 (the number "
         "of specified completions)"),
    ],
)  # fmt: skip
def test_invalid_specs(fields, message):
    assert message in messages(spec(**fields))


def test_valid_specs_pass():
    rules = [{"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 42]}},
             {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]  # fmt: skip
    success = {"rules": [{"succeededIndexes": "0,2-3", "succeededCount": 2}, {"succeededCount": 4}]}
    ok = indexed(backoffLimitPerIndex=1, maxFailedIndexes=2, podFailurePolicy={"rules": rules}, successPolicy=success)
    assert messages(ok) == []


def test_defaults():
    # With a back-off limit per index the Job-wide limit is off; podReplacementPolicy is Failed only because of
    # a podFailurePolicy (upstream defaults it so for nothing else).
    s = indexed(backoffLimitPerIndex=1)
    assert (s["backoffLimit"], s["podReplacementPolicy"]) == (2147483647, "TerminatingOrFailed")
    s = indexed(backoffLimit=3, backoffLimitPerIndex=1)
    assert s["backoffLimit"] == 3
    s = indexed(podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    assert s["podReplacementPolicy"] == "Failed"
    assert s["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_the_policies_are_immutable():
    old = {"metadata": {"name": "j"}, "spec": indexed(backoffLimitPerIndex=1, successPolicy={
        "rules": [{"succeededCount": 1}]})}  # fmt: skip
    new = copy.deepcopy(old)
    new["spec"]["backoffLimitPerIndex"] = 2
    new["spec"]["successPolicy"] = {"rules": [{"succeededCount": 2}]}
    jobs = find_by_name(RESOURCES, "jobs.batch")
    assert jobs is not None
    errs = [str(err) for err in JobStrategy(jobs).validate_update(new, old)]
    assert "spec.backoffLimitPerIndex: Invalid value: 2: field is immutable" in errs
    assert any(err.startswith("spec.successPolicy: Invalid value:") and "field is immutable" in err for err in errs)
