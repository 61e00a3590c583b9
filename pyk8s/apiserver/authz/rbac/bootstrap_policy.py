"""The default ClusterRoles and ClusterRoleBindings every cluster has (upstream:
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, as its golden files list them for v1.32 with the
default feature gates), and the small builders the controller and namespace policies share.

Every object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and the annotation
`rbac.authorization.kubernetes.io/autoupdate: "true"`; the API server reconciles them at each start (see
`ensure`). The data are upstream's facts; gates that are off by default in 1.32 add nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Rule = dict[str, Any]
Object = dict[str, Any]

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_VERSION = f"{RBAC_GROUP}/v1"
AUTO_UPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}

LEGACY = ""
APPS = "apps"
AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
AUTOSCALING = "autoscaling"
BATCH = "batch"
CERTIFICATES = "certificates.k8s.io"
COORDINATION = "coordination.k8s.io"
DISCOVERY = "discovery.k8s.io"
EVENTS = "events.k8s.io"
EXTENSIONS = "extensions"
NETWORKING = "networking.k8s.io"
NODE = "node.k8s.io"
POLICY = "policy"
STORAGE = "storage.k8s.io"
ADMISSION_REGISTRATION = "admissionregistration.k8s.io"

READ = "get list watch"
READ_WRITE = "get list watch create update patch delete deletecollection"
WRITE = "create update patch delete deletecollection"

AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"

# users and groups the policy names (upstream: k8s.io/apiserver/pkg/authentication/user)
SYSTEM_PRIVILEGED_GROUP = "system:masters"
MONITORING_GROUP = "system:monitoring"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
KUBE_PROXY = "system:kube-proxy"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"

# the built-in signers (upstream: k8s.io/api/certificates/v1)
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"


# -- builders (upstream: rbacv1helpers.NewRule(...).Groups(...).Resources(...).RuleOrDie()) ---------------


def _words(value: str | Iterable[str]) -> list[str]:
    return value.split() if isinstance(value, str) else list(value)


def rule(verbs: str | Iterable[str], groups: str | Iterable[str], resources: str | Iterable[str],
         names: str | Iterable[str] = ()) -> Rule:  # fmt: skip
    """A resource rule. `verbs`, `resources` and `names` are lists or space-separated words; `groups` is one
    group (a string, "" being the core group) or a list. Verbs, resources and names are sorted and groups kept
    in order, as upstream's builder does."""
    out: Rule = {
        "verbs": sorted(_words(verbs)),
        "apiGroups": [groups] if isinstance(groups, str) else list(groups),
        "resources": sorted(_words(resources)),
    }
    if names:
        out["resourceNames"] = sorted(_words(names))
    return out


def urls(verbs: str | Iterable[str], paths: str | Iterable[str]) -> Rule:
    """A non-resource rule."""
    return {"verbs": sorted(_words(verbs)), "nonResourceURLs": sorted(_words(paths))}


def events_rule() -> Rule:
    """What every component that records events needs (upstream: eventsRule)."""
    return rule("create update patch", [LEGACY, EVENTS], "events")


def default_metadata(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace:
        md["namespace"] = namespace
    md["labels"] = {**(labels or {}), **BOOTSTRAP_LABEL}
    md["annotations"] = {AUTO_UPDATE_ANNOTATION: "true"}
    return md


def cluster_role(name: str, rules: list[Rule], *, labels: dict[str, str] | None = None,
                 aggregate_from: str = "") -> Object:  # fmt: skip
    obj: Object = {"apiVersion": RBAC_VERSION, "kind": "ClusterRole", "metadata": default_metadata(name, labels=labels)}
    if aggregate_from:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_from: "true"}}]}
    if rules:
        obj["rules"] = rules
    return obj


def role(namespace: str, name: str, rules: list[Rule]) -> Object:
    return {"apiVersion": RBAC_VERSION, "kind": "Role", "metadata": default_metadata(name, namespace),
            "rules": rules}  # fmt: skip


def user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC_GROUP, "kind": "User", "name": name}


def group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC_GROUP, "kind": "Group", "name": name}


def service_account(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_role_binding(role_name: str, *subjects: dict[str, str], name: str = "") -> Object:
    """A binding named as its ClusterRole unless `name` is given (upstream: NewClusterBinding)."""
    obj: Object = {
        "apiVersion": RBAC_VERSION, "kind": "ClusterRoleBinding", "metadata": default_metadata(name or role_name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name},
    }  # fmt: skip
    if subjects:
        obj["subjects"] = list(subjects)
    return obj


def role_binding(namespace: str, name: str, role_name: str, *subjects: dict[str, str]) -> Object:
    return {
        "apiVersion": RBAC_VERSION, "kind": "RoleBinding", "metadata": default_metadata(name, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name}, "subjects": list(subjects),
    }  # fmt: skip


# -- the policy ---------------------------------------------------------------------------------------------


def node_rules() -> list[Rule]:
    """The rules of `system:node` (upstream: NodeRules); the Node authorizer asks them too."""
    return [
        # checking API access: creates that change nothing
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, "subjectaccessreviews localsubjectaccessreviews"),
        # the service lister that fills containers' environment
        rule(READ, LEGACY, "services"),
        # registering its Node, and its status (NodeRestriction keeps a node to its own)
        rule("create get list watch", LEGACY, "nodes"),
        rule("update patch", LEGACY, "nodes/status"),
        rule("update patch", LEGACY, "nodes"),
        rule("create update patch", LEGACY, "events"),
        rule(READ, LEGACY, "pods"),
        # mirror pods, pod status and evictions
        rule("create delete", LEGACY, "pods"),
        rule("update patch", LEGACY, "pods/status"),
        rule("create", LEGACY, "pods/eviction"),
        # volumes and environment (the Node authorizer keeps a node to what its pods use)
        rule(READ, LEGACY, "secrets configmaps"),
        rule("get", LEGACY, "persistentvolumeclaims persistentvolumes"),
        rule("get", LEGACY, "endpoints"),
        # rotating its own client certificate
        rule("create get list watch", CERTIFICATES, "certificatesigningrequests"),
        rule("get create update patch delete", COORDINATION, "leases"),
        rule("get", STORAGE, "volumeattachments"),
        rule("create", LEGACY, "serviceaccounts/token"),
        rule("get update patch", LEGACY, "persistentvolumeclaims/status"),
        rule(READ, STORAGE, "csidrivers"),
        rule("get create update patch delete", STORAGE, "csinodes"),
        rule(READ, NODE, "runtimeclasses"),
    ]


def _aggregate_to_edit_rules() -> list[Rule]:
    return [
        # read, and exec/attach/port-forward into pods; read secrets; act as service accounts
        rule(READ, LEGACY, "pods/attach pods/proxy pods/exec pods/portforward secrets services/proxy"),
        rule("impersonate", LEGACY, "serviceaccounts"),
        rule(WRITE, LEGACY, "pods pods/attach pods/proxy pods/exec pods/portforward"),
        rule("create", LEGACY, "pods/eviction"),
        rule(WRITE, LEGACY, "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                            "services/proxy persistentvolumeclaims configmaps secrets events"),
        rule("create", LEGACY, "serviceaccounts/token"),
        rule(WRITE, APPS, "statefulsets statefulsets/scale daemonsets deployments deployments/scale "
                          "deployments/rollback replicasets replicasets/scale"),
        rule(WRITE, AUTOSCALING, "horizontalpodautoscalers"),
        rule(WRITE, BATCH, "jobs cronjobs"),
        rule(WRITE, EXTENSIONS, "daemonsets deployments deployments/scale deployments/rollback ingresses "
                                "replicasets replicasets/scale replicationcontrollers/scale networkpolicies"),
        rule(WRITE, POLICY, "poddisruptionbudgets"),
        rule(WRITE, NETWORKING, "ingresses networkpolicies"),
        rule(READ_WRITE, COORDINATION, "leases"),
    ]  # fmt: skip


def _aggregate_to_view_rules() -> list[Rule]:
    return [
        rule(READ, LEGACY, "pods replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                           "services/status endpoints persistentvolumeclaims persistentvolumeclaims/status "
                           "configmaps"),
        rule(READ, LEGACY, "limitranges resourcequotas bindings events pods/status resourcequotas/status "
                           "namespaces/status replicationcontrollers/status pods/log"),
        # reading a namespace at namespace scope tells which namespaces one has access to
        rule(READ, LEGACY, "namespaces"),
        rule(READ, DISCOVERY, "endpointslices"),
        rule(READ, APPS, "controllerrevisions statefulsets statefulsets/status statefulsets/scale daemonsets "
                         "daemonsets/status deployments deployments/status deployments/scale replicasets "
                         "replicasets/status replicasets/scale"),
        rule(READ, AUTOSCALING, "horizontalpodautoscalers horizontalpodautoscalers/status"),
        rule(READ, BATCH, "jobs cronjobs cronjobs/status jobs/status"),
        rule(READ, EXTENSIONS, "daemonsets daemonsets/status deployments deployments/scale deployments/status "
                               "ingresses ingresses/status replicasets replicasets/scale replicasets/status "
                               "replicationcontrollers/scale networkpolicies"),
        rule(READ, POLICY, "poddisruptionbudgets poddisruptionbudgets/status"),
        rule(READ, NETWORKING, "ingresses ingresses/status networkpolicies"),
    ]  # fmt: skip


def _kube_scheduler_rules() -> list[Rule]:
    return [
        events_rule(),
        # leader election, and coordinated leader election's candidates (granted although that API is off)
        rule("create", COORDINATION, "leases"),
        rule("get list update watch", COORDINATION, "leases", names="kube-scheduler"),
        rule(READ_WRITE, COORDINATION, "leasecandidates"),
        rule(READ, LEGACY, "nodes"),
        rule("get list watch delete", LEGACY, "pods"),
        rule("create", LEGACY, "bindings pods/binding"),
        rule("patch update", LEGACY, "pods/status"),
        # what spreading and affinity look at
        rule(READ, LEGACY, "replicationcontrollers services"),
        rule(READ, [APPS, EXTENSIONS], "replicasets"),
        rule(READ, APPS, "statefulsets"),
        rule(READ, POLICY, "poddisruptionbudgets"),
        rule(READ, LEGACY, "persistentvolumeclaims persistentvolumes"),
        # authentication and authorization delegation
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, "subjectaccessreviews"),
        # volume limits
        rule(READ, STORAGE, "csinodes"),
        rule(READ, STORAGE, "volumeattachments"),
        # namespaceSelector in pod affinity
        rule(READ, LEGACY, "namespaces"),
        rule(READ, STORAGE, "csidrivers"),
        rule(READ, STORAGE, "csistoragecapacities"),
    ]


def _kube_controller_manager_rules() -> list[Rule]:
    return [
        events_rule(),
        # leader election
        rule("create", COORDINATION, "leases"),
        rule("get update", COORDINATION, "leases", names="kube-controller-manager"),
        # the service accounts and secrets that give each controller its own identity
        rule("create", LEGACY, "secrets serviceaccounts"),
        rule("delete", LEGACY, "secrets"),
        rule("get", LEGACY, "configmaps namespaces secrets serviceaccounts"),
        rule("update", LEGACY, "secrets serviceaccounts"),
        # authentication and authorization delegation
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, "subjectaccessreviews"),
        # the shared informers
        rule("list watch", "*", "*"),
        rule("create", LEGACY, "serviceaccounts/token"),
    ]


def _approver(signer: str, name: str) -> Object:
    return cluster_role(f"system:certificates.k8s.io:{name}", [rule("approve", CERTIFICATES, "signers", signer)])


def cluster_roles() -> list[Object]:
    """The 31 default ClusterRoles (upstream: ClusterRoles)."""
    return [
        # the root role: anything at all
        cluster_role("cluster-admin", [rule("*", "*", "*"), urls("*", "*")]),
        # enough to discover API versions and negotiate
        cluster_role("system:discovery", [urls("get", "/livez /readyz /healthz /version /version/ "
                                                      "/openapi /openapi/* /api /api/* /apis /apis/*")]),
        cluster_role("system:monitoring", [urls("get", "/livez /readyz /healthz /livez/* /readyz/* /healthz/* "
                                                       "/metrics /metrics/slis")]),
        # what a normal user needs to learn about itself
        cluster_role("system:basic-user", [
            rule("create", AUTHORIZATION, "selfsubjectaccessreviews selfsubjectrulesreviews"),
            rule("create", AUTHENTICATION, "selfsubjectreviews"),
        ]),
        # what anyone, authenticated or not, may read
        cluster_role("system:public-info-viewer", [urls("get", "/livez /readyz /healthz /version /version/")]),
        # the user-facing roles, filled by the aggregation controller
        cluster_role("admin", [], aggregate_from=AGGREGATE_TO_ADMIN),
        cluster_role("edit", [], aggregate_from=AGGREGATE_TO_EDIT, labels={AGGREGATE_TO_ADMIN: "true"}),
        cluster_role("view", [], aggregate_from=AGGREGATE_TO_VIEW, labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-admin", [
            rule("create", AUTHORIZATION, "localsubjectaccessreviews"),
            rule(READ_WRITE, RBAC_GROUP, "roles rolebindings"),
        ], labels={AGGREGATE_TO_ADMIN: "true"}),
        cluster_role("system:aggregate-to-edit", _aggregate_to_edit_rules(), labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-view", _aggregate_to_view_rules(), labels={AGGREGATE_TO_VIEW: "true"}),
        cluster_role("system:heapster", [
            rule(READ, LEGACY, "events pods nodes namespaces"),
            rule(READ, EXTENSIONS, "deployments"),
        ]),
        cluster_role("system:node", node_rules()),
        cluster_role("system:node-problem-detector", [
            rule("get", LEGACY, "nodes"),
            rule("patch", LEGACY, "nodes/status"),
            events_rule(),
        ]),
        cluster_role("system:kubelet-api-admin", [
            rule(READ, LEGACY, "nodes"),
            rule("proxy", LEGACY, "nodes"),
            rule("*", LEGACY, "nodes/proxy nodes/metrics nodes/stats nodes/log"),
        ]),
        cluster_role("system:node-bootstrapper", [
            rule("create get list watch", CERTIFICATES, "certificatesigningrequests"),
        ]),
        cluster_role("system:auth-delegator", [
            rule("create", AUTHENTICATION, "tokenreviews"),
            rule("create", AUTHORIZATION, "subjectaccessreviews"),
        ]),
        # the aggregator sees every service to know whether the ones it points to exist
        cluster_role("system:kube-aggregator", [rule(READ, LEGACY, "services endpoints")]),
        cluster_role("system:kube-controller-manager", _kube_controller_manager_rules()),
        cluster_role("system:kube-dns", [rule("list watch", LEGACY, "endpoints services")]),
        cluster_role("system:persistent-volume-provisioner", [
            rule("get list watch create delete", LEGACY, "persistentvolumes"),
            rule("get list watch update", LEGACY, "persistentvolumeclaims"),
            rule(READ, STORAGE, "storageclasses"),
            rule("watch", LEGACY, "events"),
            events_rule(),
        ]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule("create", CERTIFICATES, "certificatesigningrequests/nodeclient"),
        ]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule("create", CERTIFICATES, "certificatesigningrequests/selfnodeclient"),
        ]),
        cluster_role("system:volume-scheduler", [
            rule("get list watch patch update", LEGACY, "persistentvolumes"),
            rule(READ, STORAGE, "storageclasses"),
            rule("get list watch patch update", LEGACY, "persistentvolumeclaims"),
        ]),
        _approver(KUBE_APISERVER_CLIENT_SIGNER, "kube-apiserver-client-approver"),
        _approver(KUBE_APISERVER_CLIENT_KUBELET_SIGNER, "kube-apiserver-client-kubelet-approver"),
        _approver(KUBELET_SERVING_SIGNER, "kubelet-serving-approver"),
        _approver(LEGACY_UNKNOWN_SIGNER, "legacy-unknown-approver"),
        cluster_role("system:kube-scheduler", _kube_scheduler_rules()),
        cluster_role("system:node-proxier", [
            rule("list watch", LEGACY, "services endpoints"),
            rule(READ, LEGACY, "nodes"),
            events_rule(),
            rule("list watch", DISCOVERY, "endpointslices"),
        ]),
        cluster_role("system:service-account-issuer-discovery", [
            urls("get", "/.well-known/openid-configuration /.well-known/openid-configuration/ "
                        "/openid/v1/jwks /openid/v1/jwks/"),
        ]),
    ]  # fmt: skip


def cluster_role_bindings() -> list[Object]:
    """The 12 default ClusterRoleBindings (upstream: ClusterRoleBindings). `system:node` has no subjects:
    nodes are authorized by the Node authorizer."""
    return [
        cluster_role_binding("cluster-admin", group(SYSTEM_PRIVILEGED_GROUP)),
        cluster_role_binding("system:monitoring", group(MONITORING_GROUP)),
        cluster_role_binding("system:discovery", group(ALL_AUTHENTICATED)),
        cluster_role_binding("system:basic-user", group(ALL_AUTHENTICATED)),
        cluster_role_binding("system:public-info-viewer", group(ALL_AUTHENTICATED), group(ALL_UNAUTHENTICATED)),
        cluster_role_binding("system:node-proxier", user(KUBE_PROXY)),
        cluster_role_binding("system:kube-controller-manager", user(KUBE_CONTROLLER_MANAGER)),
        cluster_role_binding("system:kube-dns", service_account("kube-system", "kube-dns")),
        cluster_role_binding("system:kube-scheduler", user(KUBE_SCHEDULER)),
        cluster_role_binding("system:volume-scheduler", user(KUBE_SCHEDULER)),
        cluster_role_binding("system:node"),
        cluster_role_binding("system:service-account-issuer-discovery", group(ALL_SERVICE_ACCOUNTS)),
    ]


# Roles that were plain before 1.9 and are aggregated since: a pre-1.9 copy's rules move to the role it now
# aggregates from (upstream: ClusterRolesToAggregate).
CLUSTER_ROLES_TO_AGGREGATE = {
    "admin": "system:aggregate-to-admin",
    "edit": "system:aggregate-to-edit",
    "view": "system:aggregate-to-view",
}


def cluster_role_bindings_to_split() -> dict[str, Object]:
    """Bindings whose subjects seed a newer binding (upstream: ClusterRoleBindingsToSplit): 1.14 split
    `system:public-info-viewer` out of `system:discovery`."""
    by_name = {b["metadata"]["name"]: b for b in cluster_role_bindings()}
    return {"system:discovery": by_name["system:public-info-viewer"]}
