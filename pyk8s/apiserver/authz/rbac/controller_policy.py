"""The roles of the kube-controller-manager's controllers (upstream:
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go): one ClusterRole
`system:controller:<name>` per controller, bound by a ClusterRoleBinding of the same name to the
ServiceAccount `kube-system/<name>` the controller runs as under `--use-service-account-credentials`.
The 33 of v1.32 with the default feature gates: DynamicResourceAllocation, MultiCIDRServiceAllocator,
VolumeAttributesClass, ClusterTrustBundle, StorageVersionAPI, StorageVersionMigrator and SELinuxChangePolicy,
all off by default in 1.32, would each add a controller; StatefulSetAutoDeletePVC (GA) adds two rules."""

from __future__ import annotations

import copy

from .bootstrap_policy import (
    ADMISSION_REGISTRATION,
    APPS,
    AUTHORIZATION,
    AUTOSCALING,
    BATCH,
    CERTIFICATES,
    DISCOVERY,
    EXTENSIONS,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    KUBE_APISERVER_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    LEGACY,
    LEGACY_UNKNOWN_SIGNER,
    POLICY,
    RBAC_GROUP,
    READ,
    STORAGE,
    Object,
    Rule,
    cluster_role,
    cluster_role_binding,
    events_rule,
    rule,
    service_account,
)

ROLE_PREFIX = "system:controller:"
NAMESPACE = "kube-system"

_CONTROLLER_RULES: dict[str, list[Rule]] = {
    "attachdetach-controller": [
        rule("list watch", LEGACY, "persistentvolumes persistentvolumeclaims"),
        rule(READ, LEGACY, "nodes"),
        rule("patch update", LEGACY, "nodes/status"),
        rule("list watch", LEGACY, "pods"),
        events_rule(),
        rule("get create delete list watch", STORAGE, "volumeattachments"),
        rule(READ, STORAGE, "csidrivers"),
        rule(READ, STORAGE, "csinodes"),
    ],
    "clusterrole-aggregation-controller": [
        # escalate: it writes rules into roles that it need not hold itself
        rule("escalate get list patch update watch", RBAC_GROUP, "clusterroles"),
    ],
    "cronjob-controller": [
        rule("get list watch update", BATCH, "cronjobs"),
        rule("get list watch create update delete patch", BATCH, "jobs"),
        rule("update", BATCH, "cronjobs/status"),
        rule("update", BATCH, "cronjobs/finalizers"),
        rule("list watch delete", LEGACY, "pods"),
        events_rule(),
    ],
    "daemon-set-controller": [
        rule(READ, [APPS, EXTENSIONS], "daemonsets"),
        rule("update", [APPS, EXTENSIONS], "daemonsets/status"),
        rule("update", [APPS, EXTENSIONS], "daemonsets/finalizers"),
        rule("list watch", LEGACY, "nodes"),
        rule("list watch create delete patch", LEGACY, "pods"),
        rule("create", LEGACY, "pods/binding"),
        rule("get list watch create delete update patch", APPS, "controllerrevisions"),
        events_rule(),
    ],
    "deployment-controller": [
        rule("get list watch update", [APPS, EXTENSIONS], "deployments"),
        rule("update", [APPS, EXTENSIONS], "deployments/status"),
        rule("update", [APPS, EXTENSIONS], "deployments/finalizers"),
        rule("get list watch create update patch delete", [APPS, EXTENSIONS], "replicasets"),
        # pods are only read and relabelled (the adoption of orphans)
        rule("get list watch update", LEGACY, "pods"),
        events_rule(),
    ],
    "disruption-controller": [
        rule(READ, [APPS, EXTENSIONS], "deployments"),
        rule(READ, [APPS, EXTENSIONS], "replicasets"),
        rule(READ, LEGACY, "replicationcontrollers"),
        rule(READ, POLICY, "poddisruptionbudgets"),
        rule(READ, APPS, "statefulsets"),
        rule("update", POLICY, "poddisruptionbudgets/status"),
        rule("patch update", LEGACY, "pods/status"),
        rule("get", "*", "*/scale"),
        events_rule(),
    ],
    "endpoint-controller": [
        rule(READ, LEGACY, "services pods"),
        rule("get list watch create update delete", LEGACY, "endpoints"),
        rule("create", LEGACY, "endpoints/restricted"),
        events_rule(),
    ],
    "endpointslice-controller": [
        rule(READ, LEGACY, "services pods nodes"),
        # services/finalizers: the owner references to a service with blockOwnerDeletion
        rule("update", LEGACY, "services/finalizers"),
        rule("get list watch create update delete", DISCOVERY, "endpointslices"),
        events_rule(),
    ],
    "endpointslicemirroring-controller": [
        rule(READ, LEGACY, "services endpoints"),
        # its slices are owned by the service or the Endpoints they mirror, with blockOwnerDeletion
        rule("update", LEGACY, "services/finalizers"),
        rule("update", LEGACY, "endpoints/finalizers"),
        rule("get list watch create update delete", DISCOVERY, "endpointslices"),
        events_rule(),
    ],
    "expand-controller": [
        rule("get list watch update patch", LEGACY, "persistentvolumes"),
        rule("update patch", LEGACY, "persistentvolumeclaims/status"),
        rule(READ, LEGACY, "persistentvolumeclaims"),
        events_rule(),
        # the portworx volume plugin looks up its service
        rule("get", LEGACY, "services"),
    ],
    "ephemeral-volume-controller": [
        rule(READ, LEGACY, "pods"),
        rule("update", LEGACY, "pods/finalizers"),
        rule("get list watch create", LEGACY, "persistentvolumeclaims"),
        events_rule(),
    ],
    "generic-garbage-collector": [
        # list/watch, selective gets and updates against any resource
        rule("get list watch patch update delete", "*", "*"),
        events_rule(),
    ],
    "horizontal-pod-autoscaler": [
        rule(READ, AUTOSCALING, "horizontalpodautoscalers"),
        rule("update", AUTOSCALING, "horizontalpodautoscalers/status"),
        rule("get update", "*", "*/scale"),
        rule("list watch", LEGACY, "pods"),
        # resource, custom and external metrics
        rule("list watch", "metrics.k8s.io", "pods"),
        rule(READ, "custom.metrics.k8s.io", "*"),
        rule(READ, "external.metrics.k8s.io", "*"),
        events_rule(),
    ],
    "job-controller": [
        rule("get list watch update patch", BATCH, "jobs"),
        rule("update", BATCH, "jobs/status"),
        rule("update", BATCH, "jobs/finalizers"),
        rule("list watch create delete patch", LEGACY, "pods"),
        events_rule(),
    ],
    "namespace-controller": [
        rule("get list watch delete", LEGACY, "namespaces"),
        rule("update", LEGACY, "namespaces/finalize namespaces/status"),
        rule("get list watch delete deletecollection", "*", "*"),
    ],
    "node-controller": [
        rule("get list watch update delete patch", LEGACY, "nodes"),
        rule("patch update", LEGACY, "nodes/status"),
        # pod deletion
        rule("patch update", LEGACY, "pods/status"),
        rule("list watch get delete", LEGACY, "pods"),
        events_rule(),
    ],
    "persistent-volume-binder": [
        rule("get list watch update create delete", LEGACY, "persistentvolumes"),
        rule("update", LEGACY, "persistentvolumes/status"),
        rule("get list watch update", LEGACY, "persistentvolumeclaims"),
        rule("update", LEGACY, "persistentvolumeclaims/status"),
        rule("list watch get create delete", LEGACY, "pods"),
        rule(READ, STORAGE, "storageclasses"),
        rule("list watch", LEGACY, "nodes"),
        events_rule(),
        # the recycler watches its pod's events
        rule("watch", LEGACY, "events"),
        # the portworx volume plugin looks up its service
        rule("get", LEGACY, "services"),
    ],
    "pod-garbage-collector": [
        rule("list watch delete", LEGACY, "pods"),
        rule(READ, LEGACY, "nodes"),
        rule("patch", LEGACY, "pods/status"),
    ],
    "replicaset-controller": [
        rule("get list watch update", [APPS, EXTENSIONS], "replicasets"),
        rule("update", [APPS, EXTENSIONS], "replicasets/status"),
        rule("update", [APPS, EXTENSIONS], "replicasets/finalizers"),
        rule("list watch patch create delete", LEGACY, "pods"),
        events_rule(),
    ],
    "replication-controller": [
        # 1.0 controllers needed get and update: without them old controllers break on new servers
        rule("get list watch update", LEGACY, "replicationcontrollers"),
        rule("update", LEGACY, "replicationcontrollers/status"),
        rule("update", LEGACY, "replicationcontrollers/finalizers"),
        rule("list watch patch create delete", LEGACY, "pods"),
        events_rule(),
    ],
    "resourcequota-controller": [
        # quota can count anything, so it sees everything
        rule("list watch", "*", "*"),
        rule("update", LEGACY, "resourcequotas/status"),
        events_rule(),
    ],
    "route-controller": [
        rule("list watch", LEGACY, "nodes"),
        rule("patch", LEGACY, "nodes/status"),
        events_rule(),
    ],
    "service-account-controller": [
        rule("create", LEGACY, "serviceaccounts"),
        events_rule(),
    ],
    "service-controller": [
        rule(READ, LEGACY, "services"),
        rule("patch update", LEGACY, "services/status"),
        rule("list watch", LEGACY, "nodes"),
        events_rule(),
    ],
    "statefulset-controller": [
        rule("list watch", LEGACY, "pods"),
        rule(READ, APPS, "statefulsets"),
        rule("update", APPS, "statefulsets/status"),
        rule("update", APPS, "statefulsets/finalizers"),
        rule("get create delete update patch", LEGACY, "pods"),
        rule("get create delete update patch list watch", APPS, "controllerrevisions"),
        rule("get create list watch", LEGACY, "persistentvolumeclaims"),
        events_rule(),
        # StatefulSetAutoDeletePVC (GA in 1.32): the claims' owner references and their deletion
        rule("update delete", LEGACY, "persistentvolumeclaims"),
        rule("update", LEGACY, "pods/finalizers"),
    ],
    "ttl-controller": [
        rule("update patch list watch", LEGACY, "nodes"),
        events_rule(),
    ],
    "certificate-controller": [
        rule("get list watch delete", CERTIFICATES, "certificatesigningrequests"),
        rule("update", CERTIFICATES, "certificatesigningrequests/status certificatesigningrequests/approval"),
        rule("approve", CERTIFICATES, "signers", KUBE_APISERVER_CLIENT_KUBELET_SIGNER),
        rule("sign", CERTIFICATES, "signers", [LEGACY_UNKNOWN_SIGNER, KUBE_APISERVER_CLIENT_SIGNER,
                                               KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBELET_SERVING_SIGNER]),
        rule("create", AUTHORIZATION, "subjectaccessreviews"),
        events_rule(),
    ],
    "pvc-protection-controller": [
        rule("get list watch update", LEGACY, "persistentvolumeclaims"),
        rule("list watch get", LEGACY, "pods"),
        events_rule(),
    ],
    "pv-protection-controller": [
        rule("get list watch update", LEGACY, "persistentvolumes"),
        events_rule(),
    ],
    "ttl-after-finished-controller": [
        rule("get list watch delete", BATCH, "jobs"),
        events_rule(),
    ],
    "root-ca-cert-publisher": [
        rule("create update", LEGACY, "configmaps"),
        events_rule(),
    ],
    "validatingadmissionpolicy-status-controller": [
        rule(READ, ADMISSION_REGISTRATION, "validatingadmissionpolicies"),
        rule("get patch update", ADMISSION_REGISTRATION, "validatingadmissionpolicies/status"),
        events_rule(),
    ],
    "legacy-service-account-token-cleaner": [
        rule("get", LEGACY, "configmaps", "kube-apiserver-legacy-service-account-token-tracking"),
        rule("delete patch", LEGACY, "secrets"),
    ],
}  # fmt: skip

CONTROLLER_NAMES: tuple[str, ...] = tuple(_CONTROLLER_RULES)


def controller_roles() -> list[Object]:
    """The `system:controller:*` ClusterRoles (upstream: ControllerRoles)."""
    return [cluster_role(ROLE_PREFIX + name, copy.deepcopy(rules)) for name, rules in _CONTROLLER_RULES.items()]


def controller_role_bindings() -> list[Object]:
    """Each controller's role bound to its service account in kube-system (upstream: ControllerRoleBindings)."""
    return [cluster_role_binding(ROLE_PREFIX + name, service_account(NAMESPACE, name)) for name in _CONTROLLER_RULES]
