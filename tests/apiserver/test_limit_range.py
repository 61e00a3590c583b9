"""LimitRanges as upstream stores them: a Container item's defaults filled in from max and min, and invalid
ranges refused with upstream's messages (422), nothing stored."""

from __future__ import annotations

from typing import Any

import pytest


def limit_range(name: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


def test_container_defaults_come_from_max_then_min(cluster, ns):
    item = {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
            "default": {"memory": "512Mi"}}  # fmt: skip
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/limitranges", limit_range("lr", item))
    assert status == 201, body
    stored = body["spec"]["limits"][0]
    # The default limit: what was given, else max; the default request: the default limit, else min.
    assert stored["default"] == {"memory": "512Mi", "cpu": "2"}
    assert stored["defaultRequest"] == {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Gi"}
    # A Pod item gets no defaults.
    pod_item = {"type": "Pod", "max": {"cpu": "4"}}
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/limitranges", limit_range("lr-pod", pod_item))
    assert status == 201, body
    assert "default" not in body["spec"]["limits"][0]


@pytest.mark.parametrize(
    ("items", "field", "message"),
    [
        ([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}], "spec.limits[0].min[cpu]",
         "min value 2 is greater than max value 1"),
        ([{"type": "Container", "max": {"memory": "1Gi"}, "default": {"memory": "2Gi"}}], "spec.limits[0].default[memory]",
         "default value 2Gi is greater than max value 1Gi"),
        ([{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}],
         "spec.limits[0].defaultRequest[cpu]", "default request value 2 is greater than default limit value 1"),
        ([{"type": "Pod", "default": {"cpu": "1"}}], "spec.limits[0].default",
         "may not be specified when `type` is 'Pod'"),
        ([{"type": "Container", "max": {"cpu": "1"}}, {"type": "Container", "max": {"cpu": "2"}}],
         "spec.limits[1].type", 'Duplicate value: "Container"'),
        ([{"type": "Gadget", "max": {"cpu": "1"}}], "spec.limits[0].type", "must be a standard limit type or fully qualified"),
        ([{"type": "Container", "max": {"gpus": "1"}}], "spec.limits[0].max[gpus]",
         "must be a standard resource for containers"),
        ([{"type": "PersistentVolumeClaim", "max": {"memory": "1Gi"}}], "spec.limits[0].limits",
         "either minimum or maximum storage value is required, but neither was provided"),
        ([{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}], "spec.limits[0].maxLimitRequestRatio[cpu]",
         "ratio 500m is less than 1"),
        ([{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}],
         "spec.limits[0].maxLimitRequestRatio[cpu]", "ratio 3 is greater than max/min = 2.000000"),
        ([{"type": "Container", "default": {"example.com/gpu": "2"}, "defaultRequest": {"example.com/gpu": "1"}}],
         "spec.limits[0].defaultRequest[example.com/gpu]",
         "default value 2 must equal to defaultRequest value 1 in example.com/gpu"),
    ],
)  # fmt: skip
def test_invalid_ranges_are_refused(cluster, ns, items, field, message):
    status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/limitranges", limit_range("bad", *items))
    assert status == 422, body
    assert body["reason"] == "Invalid"
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert any(f == field and message in m for f, m in causes), causes
    assert cluster.request("GET", f"/api/v1/namespaces/{ns}/limitranges/bad")[0] == 404
