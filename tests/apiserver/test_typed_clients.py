"""Typed clients read every kind pyk8s serves: the official `kubernetes` client's typed API (its models refuse
an object missing a field the Go type always writes, such as a StatefulSet's status.replicas) creates, reads
and lists the workloads and Events, and lightkube's models (stricter still) read one object of every kind."""

from __future__ import annotations

import importlib

import pytest
from kubernetes import client, config

from tests.apiserver.test_api_semantics import ok

POD_TEMPLATE = {
    "metadata": {"labels": {"app": "w"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
}  # fmt: skip
SELECTOR = {"matchLabels": {"app": "w"}}
CERT_REQUEST = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIdk1JR1ZBZ0VBTURNeEZUQVRCZ05WQkFvTURITjVjM1JsYlRwdWIyUmxjekVhTUJnR0ExVUVBd3dSYzNsegpkR1Z0T201dlpHVTZibTlrWlRFd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFUWXlqN2RqQjdKCmJGWEQxcE9yVUhRdXl4eTlXVlowSVROSUdVbXpvOHBZdlV3YzNPVTB3NVlOSlpta3hUYlR0cXJrQXFySWpFL0EKTlNPbDFKUE5USDZWb0FBd0NnWUlLb1pJemowRUF3SURTUUF3UmdJaEFMWmRTaE1sVnFvTmlRNHUvY2dBUFkrZApZTWJXalcyczlvV08wYWliOXNNVEFpRUFqbzZVcHF2aTBXZCtPLzRSMEhLeHhmRGViNFpoRkcxZ1lWaVZLYi82CmhvVT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="

# (lightkube module, kind, collection path, body): one object of every kind pyk8s stores
KINDS = [
    ("core_v1", "ConfigMap", "/api/v1/namespaces/{ns}/configmaps", {"data": {"a": "1"}}),
    ("core_v1", "Endpoints", "/api/v1/namespaces/{ns}/endpoints",
     {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
    ("core_v1", "Event", "/api/v1/namespaces/{ns}/events",
     {"involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m", "type": "Normal"}),
    ("core_v1", "LimitRange", "/api/v1/namespaces/{ns}/limitranges",
     {"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}),
    ("core_v1", "Namespace", "/api/v1/namespaces", {}),
    ("core_v1", "Node", "/api/v1/nodes", {"status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    ("core_v1", "PersistentVolumeClaim", "/api/v1/namespaces/{ns}/persistentvolumeclaims",
     {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    ("core_v1", "PersistentVolume", "/api/v1/persistentvolumes",
     {"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}}),
    ("core_v1", "Pod", "/api/v1/namespaces/{ns}/pods", {"spec": POD_TEMPLATE["spec"]}),
    ("core_v1", "PodTemplate", "/api/v1/namespaces/{ns}/podtemplates", {"template": POD_TEMPLATE}),
    ("core_v1", "ReplicationController", "/api/v1/namespaces/{ns}/replicationcontrollers",
     {"spec": {"replicas": 0, "selector": {"app": "w"}, "template": POD_TEMPLATE}}),
    ("core_v1", "ResourceQuota", "/api/v1/namespaces/{ns}/resourcequotas", {"spec": {"hard": {"pods": "10"}}}),
    ("core_v1", "Secret", "/api/v1/namespaces/{ns}/secrets", {"data": {"k": "dmFsdWU="}, "stringData": {"s": "v"}}),
    ("core_v1", "ServiceAccount", "/api/v1/namespaces/{ns}/serviceaccounts", {}),
    ("core_v1", "Service", "/api/v1/namespaces/{ns}/services",
     {"spec": {"selector": {"app": "w"}, "ports": [{"port": 80, "targetPort": "http"}]}}),
    ("apps_v1", "ControllerRevision", "/apis/apps/v1/namespaces/{ns}/controllerrevisions",
     {"revision": 1, "data": {"spec": {"template": POD_TEMPLATE}}}),
    ("apps_v1", "DaemonSet", "/apis/apps/v1/namespaces/{ns}/daemonsets",
     {"spec": {"selector": SELECTOR, "template": POD_TEMPLATE}}),
    ("apps_v1", "Deployment", "/apis/apps/v1/namespaces/{ns}/deployments",
     {"spec": {"replicas": 0, "selector": SELECTOR, "template": POD_TEMPLATE}}),
    ("apps_v1", "ReplicaSet", "/apis/apps/v1/namespaces/{ns}/replicasets",
     {"spec": {"replicas": 0, "selector": SELECTOR, "template": POD_TEMPLATE}}),
    ("apps_v1", "StatefulSet", "/apis/apps/v1/namespaces/{ns}/statefulsets",
     {"spec": {"replicas": 0, "serviceName": "w", "selector": SELECTOR, "template": POD_TEMPLATE}}),
    ("events_v1", "Event", "/apis/events.k8s.io/v1/namespaces/{ns}/events",
     {"eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "test/c", "reportingInstance": "i",
      "action": "Do", "reason": "R", "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal"}),
    ("autoscaling_v2", "HorizontalPodAutoscaler", "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
     {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"}, "maxReplicas": 3,
               "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                                             "target": {"type": "Utilization", "averageUtilization": 50}}}]}}),
    ("autoscaling_v1", "HorizontalPodAutoscaler", "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers",
     {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"}, "maxReplicas": 3,
               "targetCPUUtilizationPercentage": 60}}),
    ("batch_v1", "CronJob", "/apis/batch/v1/namespaces/{ns}/cronjobs",
     {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
         "spec": {**POD_TEMPLATE["spec"], "restartPolicy": "OnFailure"}}}}}}),
    ("batch_v1", "Job", "/apis/batch/v1/namespaces/{ns}/jobs",
     {"spec": {"suspend": True, "template": {"spec": {**POD_TEMPLATE["spec"], "restartPolicy": "Never"}}}}),
    ("certificates_v1", "CertificateSigningRequest", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
     {"spec": {"request": CERT_REQUEST, "signerName": "example.com/signer", "usages": ["digital signature"]}}),
    ("networking_v1", "IngressClass", "/apis/networking.k8s.io/v1/ingressclasses",
     {"spec": {"controller": "example.com/ingress"}}),
    ("networking_v1", "Ingress", "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
     {"spec": {"rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
      "backend": {"service": {"name": "w", "port": {"number": 80}}}}]}}]}}),
    ("networking_v1", "NetworkPolicy", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
     {"spec": {"podSelector": SELECTOR, "ingress": [{"ports": [{"port": 80}]}]}}),
    ("policy_v1", "PodDisruptionBudget", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
     {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    ("rbac_authorization_v1", "ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
     {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
      "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}),
    ("rbac_authorization_v1", "ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
     {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    ("rbac_authorization_v1", "RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
     {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
      "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
    ("rbac_authorization_v1", "Role", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
     {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
    ("storage_v1", "CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", {"spec": {"attachRequired": False}}),
    ("storage_v1", "CSINode", "/apis/storage.k8s.io/v1/csinodes",
     {"spec": {"drivers": [{"name": "d.example.com", "nodeID": "n1"}]}}),
    ("storage_v1", "CSIStorageCapacity", "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities",
     {"storageClassName": "fast", "capacity": "10Gi"}),
    ("storage_v1", "StorageClass", "/apis/storage.k8s.io/v1/storageclasses", {"provisioner": "example.com/p"}),
    ("storage_v1", "VolumeAttachment", "/apis/storage.k8s.io/v1/volumeattachments",
     {"spec": {"attacher": "d.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}}}),
    ("scheduling_v1", "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", {"value": 1000}),
    ("coordination_v1", "Lease", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
     {"spec": {"holderIdentity": "h", "leaseDurationSeconds": 40, "renewTime": "2024-01-01T00:00:00.000000Z"}}),
    ("node_v1", "RuntimeClass", "/apis/node.k8s.io/v1/runtimeclasses", {"handler": "runc"}),
    ("discovery_v1", "EndpointSlice", "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
     {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
]  # fmt: skip


def _name(kind: str, module: str) -> str:
    return f"{kind.lower()}-{module.split('_')[0]}"[:40]


@pytest.fixture
def lightkube_client(cluster):
    lightkube = pytest.importorskip("lightkube")
    from lightkube.config.kubeconfig import KubeConfig

    return lightkube.Client(config=KubeConfig.from_file(str(cluster.kubeconfig)))


@pytest.mark.parametrize("module, kind, path, body", KINDS, ids=[f"{m}.{k}" for m, k, _, _ in KINDS])
def test_lightkube_models_read_every_kind(cluster, ns, lightkube_client, module, kind, path, body):
    name = _name(kind, module)
    obj = {"metadata": {"name": name}, **body}
    created = ok(cluster.request("POST", path.format(ns=ns), obj), 201)
    resource = getattr(importlib.import_module(f"lightkube.resources.{module}"), kind)
    namespaced = "{ns}" in path
    got = lightkube_client.get(resource, name, namespace=ns if namespaced else None)
    assert got.metadata.name == name and got.metadata.uid == created["metadata"]["uid"]
    listed = list(lightkube_client.list(resource, namespace=ns if namespaced else None))
    assert name in [o.metadata.name for o in listed]
    if not namespaced:
        ok(cluster.request("DELETE", f"{path}/{name}"))


def _api(cluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


WORKLOADS = [
    ("Deployment", "create_namespaced_deployment", "read_namespaced_deployment", "list_namespaced_deployment",
     {"replicas": 0, "selector": SELECTOR, "template": POD_TEMPLATE}),
    ("ReplicaSet", "create_namespaced_replica_set", "read_namespaced_replica_set", "list_namespaced_replica_set",
     {"replicas": 0, "selector": SELECTOR, "template": POD_TEMPLATE}),
    ("StatefulSet", "create_namespaced_stateful_set", "read_namespaced_stateful_set", "list_namespaced_stateful_set",
     {"replicas": 0, "serviceName": "w", "selector": SELECTOR, "template": POD_TEMPLATE}),
    ("DaemonSet", "create_namespaced_daemon_set", "read_namespaced_daemon_set", "list_namespaced_daemon_set",
     {"selector": SELECTOR, "template": POD_TEMPLATE}),
]  # fmt: skip


@pytest.mark.parametrize("kind, create, read, list_, spec", WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_official_client_typed_api_on_workloads(cluster, ns, kind, create, read, list_, spec):
    apps = client.AppsV1Api(_api(cluster))
    body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}
    created = getattr(apps, create)(ns, body)
    assert created.metadata.name == "w" and created.status is not None
    got = getattr(apps, read)("w", ns)
    assert got.metadata.uid == created.metadata.uid
    assert got.spec.template.spec.containers[0].resources.requests == {"cpu": "100m", "memory": "64Mi"}
    listed = getattr(apps, list_)(ns)  # one object a client cannot read fails the whole list
    assert [o.metadata.name for o in listed.items] == ["w"]


def test_official_client_typed_api_on_batch_and_core_workloads(cluster, ns):
    api = _api(cluster)
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    job_spec = {"suspend": True, "template": {"spec": {**POD_TEMPLATE["spec"], "restartPolicy": "Never"}}}
    batch.create_namespaced_job(
        ns, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": job_spec}
    )
    assert batch.read_namespaced_job("j", ns).spec.suspend is True
    assert [j.metadata.name for j in batch.list_namespaced_job(ns).items] == ["j"]
    cron = {"schedule": "@hourly", "jobTemplate": {"spec": job_spec}}
    batch.create_namespaced_cron_job(ns, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                                          "spec": cron})  # fmt: skip
    assert batch.read_namespaced_cron_job("c", ns).spec.schedule == "@hourly"
    rc = {"replicas": 0, "selector": {"app": "w"}, "template": POD_TEMPLATE}
    core.create_namespaced_replication_controller(ns, {"apiVersion": "v1", "kind": "ReplicationController",
                                                       "metadata": {"name": "rc"}, "spec": rc})  # fmt: skip
    assert core.read_namespaced_replication_controller("rc", ns).status.replicas == 0
    assert len(core.list_namespaced_replication_controller(ns).items) == 1


def test_official_client_typed_api_on_events(cluster, ns):
    api = _api(cluster)
    core, events = client.CoreV1Api(api), client.EventsV1Api(api)
    core.create_namespaced_event(ns, {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns}, "reason": "Started", "message": "m",
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:05Z", "count": 2,
        # without one, events.k8s.io/v1 shows eventTime: null (Go writes a zero MicroTime so), which client 37's
        # models refuse against a real API server too
        "eventTime": "2024-01-01T00:00:00.500000Z",
        "type": "Normal", "source": {"component": "kubelet"},
    })  # fmt: skip
    # (client 37 re-writes a datetime with Python's isoformat, which drops zero microseconds: a real API server
    # then refuses the MicroTime as pyk8s does, so this one has some)
    events.create_namespaced_event(ns, {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"},
        "eventTime": "2024-01-01T00:00:00.250000Z", "reportingController": "test/c", "reportingInstance": "i",
        "action": "Scheduled", "reason": "Scheduled", "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
        "note": "assigned", "type": "Normal",
    })  # fmt: skip
    core_events = core.list_namespaced_event(ns).items
    assert sorted(e.metadata.name for e in core_events) == ["e1", "e2"]
    assert next(e for e in core_events if e.metadata.name == "e1").count == 2
    new_events = events.list_namespaced_event(ns).items
    assert sorted(e.metadata.name for e in new_events) == ["e1", "e2"]
    e2 = events.read_namespaced_event("e2", ns)
    assert e2.note == "assigned" and e2.event_time is not None
