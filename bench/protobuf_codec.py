"""Protobuf against JSON for the objects the API server encodes and decodes most: a pod as the server stores it
(managedFields, status, conditions), a list of them, and a small ConfigMap, each encoded and decoded with the C
protobuf codec, the Python reference codec, and orjson, in the same run. Issue 16's target: protobuf costs no more
than JSON with orjson (encode + decode, the last column at most 1).

Run: python bench/protobuf_codec.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.api.protobuf import codec
from pyk8s.api.protobuf.schema import message, message_name_for

console = Console(width=150)


def stored_pod(i: int) -> dict[str, Any]:
    """A pod as a Deployment's ReplicaSet makes it and a node reports it running."""
    # the seconds a pod's life writes: created and scheduled, then started, then ready
    ts, started, ready = "2026-11-28T12:00:00Z", "2026-11-28T12:00:02Z", "2026-11-28T12:00:03Z"
    when = {"PodScheduled": ts, "Initialized": started, "PodReadyToStartContainers": started}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"web-7d4b9c8f5-{i:05d}", "generateName": "web-7d4b9c8f5-", "namespace": "default",
            "uid": f"5f0c1d7e-3b2a-4c1d-9e8f-{i:012d}", "resourceVersion": str(100000 + i),
            "creationTimestamp": ts, "labels": {"app": "web", "pod-template-hash": "7d4b9c8f5"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f5",
                                 "uid": "0a1b2c3d-0000-0000-0000-000000000001", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                     ".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {".": {}, 'k:{"uid":"0a1b"}': {}}},
                     "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ready, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}},
                                           "f:podIP": {}}}, "subresource": "status"},
            ],
        },
        "spec": {
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}],
                "defaultMode": 420}}],
            "containers": [{"name": "web", "image": "registry.k8s.io/nginx:1.27", "ports": [
                {"containerPort": 80, "protocol": "TCP"}], "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"memory": "128Mi"}}, "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}], "terminationMessagePath":
                "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": f"node-{i % 1000}",
            "securityContext": {}, "schedulerName": "default-scheduler", "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running", "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": when.get(t, ready)}
                for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}],
            "startTime": ts, "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": started}},
                "lastState": {}, "ready": True, "restartCount": 0, "image": "registry.k8s.io/nginx:1.27",
                "imageID": "", "started": True}], "qosClass": "Burstable",
        },
    }  # fmt: skip


def per_call(fn: Callable[[], Any], seconds: float) -> float:
    """Microseconds per call: the best of five timed batches."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds / 10:  # size a batch
        fn()
        n += 1
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def measure(obj: dict[str, Any], seconds: float) -> tuple[list[str], str]:
    """One table row for an object: orjson, the C codec and the Python codec, and the C/orjson ratio."""
    name = message_name_for(obj["apiVersion"], obj["kind"])
    assert name is not None
    msg = message(name)
    js = orjson.dumps(obj)
    pb = codec.encode_message(msg, obj)
    assert codec.decode_message(msg, pb) is not None
    j_enc = per_call(lambda: orjson.dumps(obj), seconds)
    j_dec = per_call(lambda: orjson.loads(js), seconds)
    c_enc = per_call(lambda: codec.encode_message(msg, obj), seconds)
    c_dec = per_call(lambda: codec.decode_message(msg, pb), seconds)
    py = per_call(lambda: codec.py_decode_message(msg, codec.py_encode_message(msg, obj)), seconds / 4)
    row = [f"{j_enc:,.2f}", f"{j_dec:,.2f}", f"{c_enc:,.2f}", f"{c_dec:,.2f}", f"{py:,.1f}",
           f"{(c_enc + c_dec) / (j_enc + j_dec):.2f}"]  # fmt: skip
    return row, f"JSON {len(js):,} bytes, protobuf {len(pb):,} bytes"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="shorter timings")
    args = p.parse_args()
    seconds = 0.5 if args.quick else 2.0
    if not codec.fast():
        console.print("[red]the C codec is not built: `pip install -e .` compiles it[/]")
    pods = [stored_pod(i) for i in range(1000)]
    objects = {
        "pod (as stored, 2.9 KB JSON)": stored_pod(1),
        "ConfigMap (small)": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "cm",
                "namespace": "default",
                "uid": "u",
                "resourceVersion": "9",
                "creationTimestamp": "2026-11-28T12:00:00Z",
            },
            "data": {"a": "1", "b": "two"},
        },
        "PodList of 1,000 pods": {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": "9"},
            "items": pods,
        },
    }
    table = Table(title="encode + decode, microseconds per object (best of 5 batches), same run")
    for col in ("object", "orjson enc", "orjson dec", "pb C enc", "pb C dec", "pb Python enc+dec", "C/orjson"):
        table.add_column(col, justify="right")
    for label, obj in objects.items():
        row, sizes = measure(obj, seconds)
        table.add_row(label, *row)
        console.print(f"{label}: {sizes}")
    console.print(table)


if __name__ == "__main__":
    main()
