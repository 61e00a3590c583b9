"""autoscaling/v2 HorizontalPodAutoscaler defaulting and validation, case by case with upstream's messages
(upstream: pkg/apis/autoscaling/v2/defaults.go, pkg/apis/autoscaling/validation's TestValidateHorizontalPodAutoscaler
cases), and the same through a real API server and kubectl."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pyk8s.api.resources import TABLE
from pyk8s.apiserver.registry.autoscaling import HorizontalPodAutoscalerStrategy, default_hpa_spec, validate_hpa_spec

CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def spec(**fields: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"scaleTargetRef": dict(REF), "minReplicas": 1, "maxReplicas": 5, "metrics": [CPU], **fields}
    return s


def messages(s: dict[str, Any], bound: int = 1) -> list[str]:
    return [str(err) for err in validate_hpa_spec(s, bound)]


def test_defaults():
    s: dict[str, Any] = {"scaleTargetRef": dict(REF), "maxReplicas": 3}
    default_hpa_spec(s)
    assert s["minReplicas"] == 1
    assert s["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    assert "behavior" not in s  # no behavior given, none made: the controller's behavior-less rules apply

    s = spec(behavior={"scaleUp": {"selectPolicy": "Min"}, "scaleDown": {"policies": [{"type": "Pods", "value": 1,
                                                                                       "periodSeconds": 60}]}})  # fmt: skip
    default_hpa_spec(s)
    assert s["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Min",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        # The window stays unset: the controller's --horizontal-pod-autoscaler-downscale-stabilization decides.
        "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
    }  # fmt: skip


def test_a_valid_spec_has_no_errors():
    assert messages(spec()) == []
    s = spec(behavior={})
    default_hpa_spec(s)
    assert messages(s) == []


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"minReplicas": 0}, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"),
        ({"maxReplicas": 0}, "spec.maxReplicas: Invalid value: 0: must be greater than 0"),
        ({"minReplicas": 3, "maxReplicas": 2}, "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"),
        ({"scaleTargetRef": {"name": "web"}}, "spec.scaleTargetRef.kind: Required value"),
        ({"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}},
         "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'"),
        ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                  "averageUtilization": 0}}}]},
         "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"),
        ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
         "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or "
         "a target utilization"),
        ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50, "averageValue": "100m"}}}]},
         "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target "
         "utilization"),
        ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Bogus",
                                                                                  "averageUtilization": 5}}}]},
         'spec.metrics[0].resource.target.type: Invalid value: "Bogus": must be either Utilization, Value, or '
         "AverageValue"),
        ({"metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue"}}}]},
         "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue"),
        ({"metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"},
                                                "target": {"type": "AverageValue", "averageValue": "-1"}}}]},
         'spec.metrics[0].pods.target.averageValue: Invalid value: "-1": must be positive'),
        ({"metrics": [{"type": "Object", "object": {"describedObject": REF, "metric": {"name": "q"},
                                                    "target": {"type": "Value"}}}]},
         "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or averageValue"),
        ({"metrics": [{"type": "External", "external": {"metric": {"name": "q"},
                                                        "target": {"type": "Value", "value": "1", "averageValue": "1"}}}]},
         "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod "
         "target"),
        ({"metrics": [{"type": "ContainerResource", "containerResource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]},
         "spec.metrics[0].containerResource.container: Required value: must specify a container"),
        ({"metrics": [{"type": "Pods", "resource": CPU["resource"]}]},
         "spec.metrics[0].pods: Required value: must populate information for the given metric source"),
        ({"metrics": [{"type": "Resource", "resource": CPU["resource"], "pods": {"metric": {"name": "q"}}}]},
         # Only the first source present is looked into (pods comes before resource), and the other is refused.
         "spec.metrics[0].pods: Forbidden: must populate the given metric source only"),
        ({"metrics": [{"type": "Bogus"}]},
         'spec.metrics[0].type: Unsupported value: "Bogus": supported values: "ContainerResource", "External", '
         '"Object", "Pods", "Resource"'),
        ({"behavior": {"scaleUp": {"stabilizationWindowSeconds": 3601, "policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 15}]}}},
         "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600"),
        ({"behavior": {"scaleDown": {"stabilizationWindowSeconds": -1, "policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 15}]}}},
         "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero"),
        ({"behavior": {"scaleDown": {"selectPolicy": "Most", "policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 15}]}}},
         'spec.behavior.scaleDown.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"'),
        ({"behavior": {"scaleDown": {"policies": []}}},
         "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy"),
        ({"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}},
         "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero"),
        ({"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}},
         "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"),
        ({"behavior": {"scaleUp": {"policies": [{"type": "Nodes", "value": 1, "periodSeconds": 15}]}}},
         'spec.behavior.scaleUp.policies[0].type: Unsupported value: "Nodes": supported values: "Percent", "Pods"'),
    ],
)  # fmt: skip
def test_invalid(fields: dict[str, Any], want: str):
    s = spec(**copy.deepcopy(fields))
    assert want in messages(s), messages(s)


def test_scale_to_zero_needs_the_gate_or_an_object_that_has_it():
    strategy = HorizontalPodAutoscalerStrategy(TABLE.for_kind("autoscaling", "v2", "HorizontalPodAutoscaler"))
    zero = {"spec": spec(minReplicas=0)}
    assert "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1" in map(str, strategy.validate(zero))
    # An object created with minReplicas 0 may keep it; it then needs an Object or External metric.
    assert [str(e) for e in strategy.validate_update(zero, zero)] == [
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero "
        "replicas"
    ]
    bad = {"status": {"currentReplicas": -1, "desiredReplicas": 2}}
    assert [str(e) for e in strategy.validate_status_update(bad, bad)] == [
        "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_through_the_api_server(cluster, ns):
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": REF, "maxReplicas": 3,
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}  # fmt: skip
    out = cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(hpa), check=True)
    assert out.stdout.strip() == "horizontalpodautoscaler.autoscaling/h created"
    got = json.loads(cluster.kubectl("get", "hpa", "h", "-n", ns, "-o", "json", check=True).stdout)["spec"]
    assert got["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 0
    assert got["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    hpa["metadata"]["name"] = "bad"
    hpa["spec"]["behavior"] = {"scaleUp": {"selectPolicy": "Most"}}
    res = cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(hpa))
    assert res.returncode == 1
    assert (
        'The HorizontalPodAutoscaler "bad" is invalid: spec.behavior.scaleUp.selectPolicy: Unsupported value: "Most": '
        'supported values: "Disabled", "Max", "Min"' in res.stderr
    ), res.stderr
