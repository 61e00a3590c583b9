"""The horizontal pod autoscaler as a user drives it with kubectl on a cluster of real parts (API server, three
simulated nodes, scheduler, controller manager synced every second): `kubectl autoscale` scales a busy
Deployment up to its maximum, a quiet one is scaled down, and the metrics this cluster does not serve (custom
and external) and a missing target are reported in the status as a v1.32 cluster reports them.

Pods use what their `pyk8s.io/simulate` annotation says (the API server's metrics.k8s.io serves it). A pod's
CPU sample only counts once it was taken a metrics window (15 s) after the pod became Ready, so the scaling tests
wait 15-30 s for their pods to count before they create the autoscaler: an autoscaler synced every second while
its pods do not count yet records two Warning events a second, and past 25 the event spam filter (as upstream's)
would drop its SuccessfulRescale."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def busy_deployment(name: str, replicas: int, cpu: str) -> str:
    """Pods requesting 100m of CPU and using `cpu`."""
    container = {"name": "c", "image": "nginx:1", "resources": {"requests": {"cpu": "100m"}}}
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name},
                                           "annotations": {"pyk8s.io/simulate": json.dumps({"cpu": cpu})}},
                              "spec": {"containers": [container]}}},
    })  # fmt: skip


def conditions(hpa: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in hpa.get("status", {}).get("conditions", [])}


def events(cluster: APIServerProcess, ns: str, name: str) -> list[tuple[str, str, str]]:
    items = kubectl_json(cluster, "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}")["items"]
    return [
        (e["type"], e["reason"], e["message"]) for e in items if e["source"]["component"] == "horizontal-pod-autoscaler"
    ]


def start(cluster: APIServerProcess, ns: str, manifest: str, name: str = "web") -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest, check=True)
    res = cluster.kubectl("rollout", "status", "-n", ns, f"deploy/{name}", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_until_counted(cluster: APIServerProcess, ns: str, app: str) -> None:
    """Until every pod's CPU sample was taken a metrics window after the pod became Ready (the autoscaler's
    rule for pods in their first 5 minutes)."""

    def counted() -> bool:
        pods = kubectl_json(cluster, "get", "pods", "-n", ns, "-l", f"app={app}")["items"]
        raw = cluster.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods", check=True)
        samples = {m["metadata"]["name"]: m for m in json.loads(raw.stdout)["items"]}
        for pod in pods:
            ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
            sample = samples.get(pod["metadata"]["name"])
            if sample is None or ready["status"] != "True":
                return False
            window = dt.timedelta(seconds=int(sample["window"].rstrip("s")))
            if _time(sample["timestamp"]) < _time(ready["lastTransitionTime"]) + window:
                return False
        return bool(pods)

    wait_for(f"the samples of {app}'s pods to count", counted, timeout=45)


def test_kubectl_autoscale_scales_a_busy_deployment_up_to_its_maximum(cluster):
    ns = "hpa-up"
    cluster.create_namespace(ns)
    start(cluster, ns, busy_deployment("web", 1, "300m"))  # 300 % of the request against a 50 % target
    wait_until_counted(cluster, ns, "web")
    # kubectl autoscale creates the HorizontalPodAutoscaler through its typed client, in protobuf.
    made = cluster.kubectl("autoscale", "deployment", "web", "-n", ns, "--cpu-percent=50", "--min=1", "--max=4",
                           check=True).stdout  # fmt: skip
    assert made.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"

    def scaled() -> bool:
        return kubectl_json(cluster, "get", "deploy", "web", "-n", ns)["spec"]["replicas"] == 4

    wait_for("the deployment scaled to 4", scaled, timeout=20, logs=cluster.log_tail)
    # 6 replicas wanted (300 / 50 x 1), limited by maxReplicas; once rescaled the next sync finds nothing to do.
    want = {
        "AbleToScale": ("True", "ReadyForNewScale", "recommended size matches current size"),
        "ScalingActive": ("True", "ValidMetricFound", "the HPA was able to successfully calculate a replica count "
                          "from cpu resource utilization (percentage of request)"),
        "ScalingLimited": ("True", "TooManyReplicas", "the desired replica count is more than the maximum replica count"),
    }  # fmt: skip

    def settled() -> Any:
        hpa = kubectl_json(cluster, "get", "hpa", "web", "-n", ns)
        st = hpa.get("status", {})
        return (
            hpa
            if (st.get("currentReplicas"), st.get("desiredReplicas")) == (4, 4) and conditions(hpa) == want
            else None
        )

    hpa = wait_for("the autoscaler's status to settle", settled, timeout=20)
    assert [c["type"] for c in hpa["status"]["conditions"]] == ["AbleToScale", "ScalingActive", "ScalingLimited"]
    assert hpa["status"]["lastScaleTime"]
    # Only the first pod counts until the new ones have been Ready a window: its 300m is 300 % of its request.
    [current] = hpa["status"]["currentMetrics"]
    assert current["type"] == "Resource" and current["resource"]["name"] == "cpu"
    assert current["resource"]["current"] == {"averageUtilization": 300, "averageValue": "300m"}
    table = cluster.kubectl("get", "hpa", "web", "-n", ns, check=True).stdout.splitlines()
    assert table[1].split()[:6] == ["web", "Deployment/web", "cpu:", "300%/50%", "1", "4"]
    assert events(cluster, ns, "web") == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target",
        )
    ]


def test_a_quiet_deployment_is_scaled_down(cluster):
    ns = "hpa-down"
    cluster.create_namespace(ns)
    start(cluster, ns, busy_deployment("web", 3, "10m"))  # 10 % of the request against a 50 % target
    wait_until_counted(cluster, ns, "web")
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 4,
                 "metrics": [{"type": "Resource",
                              "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
                 # Scale down at once rather than after the 5 minutes' stabilization.
                 "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}},
    }  # fmt: skip
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(hpa), check=True)
    behavior = kubectl_json(cluster, "get", "hpa", "web", "-n", ns)["spec"]["behavior"]
    # The API server fills in the rest of the behavior as upstream's defaults do.
    assert behavior == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }  # fmt: skip

    def scaled() -> bool:
        return kubectl_json(cluster, "get", "deploy", "web", "-n", ns)["spec"]["replicas"] == 1

    wait_for("the deployment scaled down to 1", scaled, timeout=20, logs=cluster.log_tail)

    def settled() -> Any:
        got = kubectl_json(cluster, "get", "hpa", "web", "-n", ns)
        st = got.get("status", {})
        done = (st.get("currentReplicas"), st.get("desiredReplicas")) == (1, 1)
        return got if done and conditions(got).get("AbleToScale", ("",) * 3)[1] == "ReadyForNewScale" else None

    got = wait_for("the autoscaler's status to settle", settled, timeout=20)
    assert conditions(got)["ScalingActive"][:2] == ("True", "ValidMetricFound")
    assert conditions(got)["ScalingLimited"] == ("False", "DesiredWithinRange",
                                                 "the desired count is within the acceptable range")  # fmt: skip
    assert got["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 10
    assert ("Normal", "SuccessfulRescale", "New size: 1; reason: All metrics below target") in events(
        cluster, ns, "web"
    )


def test_custom_and_external_metrics_and_a_missing_target_are_reported(cluster):
    ns = "hpa-fail"
    cluster.create_namespace(ns)
    start(cluster, ns, busy_deployment("web", 1, "10m"))
    start(cluster, ns, busy_deployment("fresh", 1, "10m"), "fresh")

    def autoscaler(name: str, target: str, metric: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                         "maxReplicas": 3, "metrics": [metric]}}  # fmt: skip

    pods = {"type": "Pods", "pods": {"metric": {"name": "requests"},
                                     "target": {"type": "AverageValue", "averageValue": "10"}}}  # fmt: skip
    external = {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                                 "target": {"type": "Value", "value": "5"}}}  # fmt: skip
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    for item in (
        autoscaler("custom", "web", pods),
        autoscaler("gone", "nope", pods),
        autoscaler("fresh", "fresh", cpu),
    ):
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(item), check=True)

    def reported(name: str, kind: str) -> Any:
        def check() -> Any:
            return conditions(kubectl_json(cluster, "get", "hpa", name, "-n", ns)).get(kind)

        return wait_for(f"{name}'s {kind} condition", check, timeout=20)

    assert reported("custom", "ScalingActive") == (
        "False", "FailedGetPodsMetric",
        "the HPA was unable to compute the replica count: unable to get metric requests: unable to fetch metrics "
        "from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
    )  # fmt: skip
    # A pod that just became Ready has no sample that counts yet (the first of the 14-30 s this lasts).
    assert reported("fresh", "ScalingActive") == (
        "False", "FailedGetResourceMetric",
        "the HPA was unable to compute the replica count: failed to get cpu utilization: did not receive metrics for "
        "targeted pods (pods might be unready)",
    )  # fmt: skip
    assert reported("gone", "AbleToScale") == (
        "False", "FailedGetScale",
        'the HPA controller was unable to get the target\'s current scale: deployments.apps "nope" not found',
    )  # fmt: skip
    # One autoscaler per target: the first is removed before the external one takes the Deployment.
    cluster.kubectl("delete", "hpa", "custom", "-n", ns, check=True)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(autoscaler("external", "web", external)),
                    check=True)  # fmt: skip
    assert reported("external", "ScalingActive") == (
        "False", "FailedGetExternalMetric",
        "the HPA was unable to compute the replica count: unable to get external metric hpa-fail/queue/"
        "&LabelSelector{MatchLabels:map[string]string{q: a,},MatchExpressions:[]LabelSelectorRequirement{},}: "
        "unable to fetch metrics from external metrics API: the server could not find the requested resource "
        "(get queue.external.metrics.k8s.io)",
    )  # fmt: skip
    got = events(cluster, ns, "external")
    assert any(
        r == "FailedComputeMetricsReplicas" and m.startswith("invalid metrics (1 invalid out of 1), first error is: "
                                                             "failed to get queue external metric value: ")
        for _, r, m in got
    ), got  # fmt: skip
    assert kubectl_json(cluster, "get", "deploy", "web", "-n", ns)["spec"]["replicas"] == 1
