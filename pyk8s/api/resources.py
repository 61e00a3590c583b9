"""The resource table: every API resource pyk8s serves, described once.

Discovery, routing, storage keys, `kubectl api-resources` and the registry all read this table; nothing
about a resource's name, scope, verbs or subresources is written anywhere else. The content follows what a
v1.32 kube-apiserver serves for the resources that mean something without real containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class Subresource:
    """A subresource such as `status` or `scale`; `kind` is what it reads and writes."""

    name: str
    verbs: tuple[str, ...]
    kind: str = ""  # "" means the parent's kind
    group: str | None = None  # for kinds from another group (autoscaling/v1 Scale, policy/v1 Eviction)
    version: str | None = None


STATUS = Subresource("status", STATUS_VERBS)
SCALE = Subresource("scale", STATUS_VERBS, "Scale", "autoscaling", "v1")
CONNECT_VERBS = ("create", "get")  # exec, attach, portforward: POST or GET (WebSocket) upgrades
PROXY_VERBS = ("create", "delete", "get", "patch", "update")


@dataclass(frozen=True)
class Resource:
    """One resource at one group/version."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    # Storage: the key segment (upstream keeps a few historical ones) and the group/version objects are
    # stored in, when another version of the same resource is the storage version.
    storage_name: str = ""
    storage_group_version: str = ""
    singular: str = field(default="")
    # A custom resource, defined by a CustomResourceDefinition and served by pyk8s.apiextensions: JSON only,
    # its schema from the CRD rather than upstream's definitions.
    custom: bool = False

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def qualified_name(self) -> str:
        """`plural.group` (`deployments.apps`), or the plural for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def key_prefix(self) -> str:
        """The storage directory of this resource: `/registry/<plural>/`, or upstream's historical name."""
        return f"/registry/{self.storage_name or self.plural}/"

    def subresource(self, name: str) -> Subresource | None:
        for s in self.subresources:
            if s.name == name:
                return s
        return None

    def key(self, namespace: str, name: str) -> str:
        prefix = self.key_prefix
        return f"{prefix}{namespace}/{name}" if self.namespaced else f"{prefix}{name}"

    def collection_key(self, namespace: str = "") -> str:
        return f"{self.key_prefix}{namespace}/" if self.namespaced and namespace else self.key_prefix


def _r(
    group_version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    short: Iterable[str] = (),
    categories: Iterable[str] = (),
    sub: Iterable[Subresource] = (),
    verbs: tuple[str, ...] = STANDARD_VERBS,
    storage_name: str = "",
    storage_gv: str = "",
) -> Resource:
    group, _, version = group_version.rpartition("/")
    return Resource(
        group, version, kind, plural, namespaced, tuple(short), tuple(categories), tuple(sub), verbs,
        storage_name, storage_gv,
    )  # fmt: skip


ALL = ("all",)

RESOURCES: tuple[Resource, ...] = (
    # core/v1
    _r("v1", "Binding", "bindings", True, verbs=("create",)),
    _r("v1", "ConfigMap", "configmaps", True, ["cm"]),
    _r("v1", "Endpoints", "endpoints", True, ["ep"], storage_name="services/endpoints"),
    _r("v1", "Event", "events", True, ["ev"]),
    _r("v1", "LimitRange", "limitranges", True, ["limits"]),
    _r("v1", "Namespace", "namespaces", False, ["ns"],
       sub=[Subresource("finalize", ("update",)), STATUS], verbs=NO_COLLECTION_VERBS),
    _r("v1", "Node", "nodes", False, ["no"], sub=[Subresource("proxy", PROXY_VERBS, "NodeProxyOptions"), STATUS],
       storage_name="minions"),
    _r("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"], sub=[STATUS]),
    _r("v1", "PersistentVolume", "persistentvolumes", False, ["pv"], sub=[STATUS]),
    _r("v1", "Pod", "pods", True, ["po"], ALL, sub=[
        Subresource("attach", CONNECT_VERBS, "PodAttachOptions"),
        Subresource("binding", ("create",), "Binding"),
        Subresource("ephemeralcontainers", STATUS_VERBS),
        Subresource("eviction", ("create",), "Eviction", "policy", "v1"),
        Subresource("exec", CONNECT_VERBS, "PodExecOptions"),
        Subresource("log", ("get",)),
        Subresource("portforward", CONNECT_VERBS, "PodPortForwardOptions"),
        Subresource("proxy", PROXY_VERBS, "PodProxyOptions"),
        STATUS,
    ]),
    _r("v1", "PodTemplate", "podtemplates", True),
    _r("v1", "ReplicationController", "replicationcontrollers", True, ["rc"], ALL, sub=[SCALE, STATUS],
       storage_name="controllers"),
    _r("v1", "ResourceQuota", "resourcequotas", True, ["quota"], sub=[STATUS]),
    _r("v1", "Secret", "secrets", True),
    _r("v1", "ServiceAccount", "serviceaccounts", True, ["sa"],
       sub=[Subresource("token", ("create",), "TokenRequest", "authentication.k8s.io", "v1")]),
    _r("v1", "Service", "services", True, ["svc"], ALL, sub=[STATUS], storage_name="services/specs"),
    # apps/v1
    _r("apps/v1", "ControllerRevision", "controllerrevisions", True),
    _r("apps/v1", "DaemonSet", "daemonsets", True, ["ds"], ALL, sub=[STATUS]),
    _r("apps/v1", "Deployment", "deployments", True, ["deploy"], ALL, sub=[SCALE, STATUS]),
    _r("apps/v1", "ReplicaSet", "replicasets", True, ["rs"], ALL, sub=[SCALE, STATUS]),
    _r("apps/v1", "StatefulSet", "statefulsets", True, ["sts"], ALL, sub=[SCALE, STATUS]),
    # events.k8s.io/v1: the same objects as core/v1 events, in another shape
    _r("events.k8s.io/v1", "Event", "events", True, ["ev"], storage_name="events", storage_gv="v1"),
    # authentication.k8s.io/v1: token and self reviews, asked and answered, never stored
    # (apiserver.registry.authentication)
    _r("authentication.k8s.io/v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=("create",)),
    _r("authentication.k8s.io/v1", "TokenReview", "tokenreviews", False, verbs=("create",)),
    # authorization.k8s.io/v1: access reviews, asked and answered, never stored (apiserver.registry.authorization)
    _r("authorization.k8s.io/v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", True, verbs=("create",)),
    _r("authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, verbs=("create",)),
    _r("authorization.k8s.io/v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False, verbs=("create",)),
    _r("authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", False, verbs=("create",)),
    # autoscaling: v2 is the storage version; v1 is converted
    _r("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ["hpa"], ALL,
       sub=[STATUS]),
    _r("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ["hpa"], ALL,
       sub=[STATUS], storage_gv="autoscaling/v2"),
    # batch/v1
    _r("batch/v1", "CronJob", "cronjobs", True, ["cj"], ALL, sub=[STATUS]),
    _r("batch/v1", "Job", "jobs", True, categories=ALL, sub=[STATUS]),
    # certificates.k8s.io/v1
    _r("certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", False, ["csr"],
       sub=[Subresource("approval", STATUS_VERBS), STATUS]),
    # networking.k8s.io/v1
    _r("networking.k8s.io/v1", "IngressClass", "ingressclasses", False),
    _r("networking.k8s.io/v1", "Ingress", "ingresses", True, ["ing"], sub=[STATUS], storage_name="ingress"),
    _r("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, ["netpol"]),
    # policy/v1
    _r("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"], sub=[STATUS]),
    # rbac.authorization.k8s.io/v1
    _r("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _r("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    _r("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    _r("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    # storage.k8s.io/v1
    _r("storage.k8s.io/v1", "CSIDriver", "csidrivers", False),
    _r("storage.k8s.io/v1", "CSINode", "csinodes", False),
    _r("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", True),
    _r("storage.k8s.io/v1", "StorageClass", "storageclasses", False, ["sc"]),
    _r("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", False, sub=[STATUS]),
    # scheduling.k8s.io/v1
    _r("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, ["pc"]),
    # coordination.k8s.io/v1
    _r("coordination.k8s.io/v1", "Lease", "leases", True),
    # node.k8s.io/v1
    _r("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", False),
    # discovery.k8s.io/v1
    _r("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True),
    # apiextensions.k8s.io/v1: the definitions of custom resources (pyk8s.apiextensions)
    _r("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False, ["crd", "crds"],
       ["api-extensions"], sub=[STATUS]),
    # apiregistration.k8s.io/v1: the API services the aggregator serves here or proxies to (pyk8s.aggregator)
    _r("apiregistration.k8s.io/v1", "APIService", "apiservices", False, categories=["api-extensions"], sub=[STATUS]),
    # admissionregistration.k8s.io/v1: admission webhooks (pyk8s.apiserver.admission.webhook) and policies
    # (pyk8s.apiserver.admission.policy)
    _r("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False,
       categories=["api-extensions"]),
    _r("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False,
       categories=["api-extensions"], sub=[STATUS]),
    _r("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
       False, categories=["api-extensions"]),
    _r("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False,
       categories=["api-extensions"]),
)  # fmt: skip

# The order groups appear in discovery (upstream lists them in this order too); the first version listed
# for a group is its preferred version.
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",  # the aggregator's own group comes first in /apis
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
)


def find_by_name(resources: Sequence[Resource], name: str) -> Resource | None:
    """The resource a user means by `name`, as kubectl reads it: a short name (tried first, as kubectl's
    shortcut expander runs before its mapper), else a plural, singular or kind, optionally qualified as
    `plural.group` or `plural.version.group`. `resources` are in preference order (groups in discovery
    order, each group's preferred version first); the first match wins."""
    lowered = name.lower()
    for r in resources:
        if lowered in r.short_names:
            return r
    plural, _, rest = lowered.partition(".")
    candidates: list[tuple[str, str, str]] = [("", "", lowered)]
    if rest:
        candidates.append((rest, "", plural))
        first, _, after = rest.partition(".")
        if after:
            candidates.append((after, first, plural))
    for group, version, word in candidates:
        for r in resources:
            if rest and word != lowered and r.group != group:
                continue
            if version and r.version != version:
                continue
            if word in (r.plural, r.singular_name, r.kind.lower()):
                return r
    return None


class ResourceTable:
    """Lookups over a set of resources: by group/version/plural, by kind, by short name."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.resources = tuple(resources)
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        self._by_kind: dict[tuple[str, str, str], Resource] = {}
        self.versions: dict[str, list[str]] = {}
        self._preferred: list[Resource] | None = None
        # Clients resolve a resource name on every call (the scheduler twice per pod): remembered answers.
        self._found: dict[str, Resource | None] = {}
        for r in self.resources:
            self._by_path[(r.group, r.version, r.plural)] = r
            self._by_kind.setdefault((r.group, r.version, r.kind), r)
            versions = self.versions.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)

    def get(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_path.get((group, version, plural))

    def for_kind(self, group: str, version: str, kind: str) -> Resource | None:
        return self._by_kind.get((group, version, kind))

    def for_api_version(self, api_version: str, kind: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        return self.for_kind(group, version, kind)

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.resources if r.group == group and r.version == version]

    def groups(self) -> list[str]:
        known = [g for g in GROUP_ORDER if g in self.versions]
        return known + sorted(g for g in self.versions if g not in GROUP_ORDER)

    def preferred_version(self, group: str) -> str:
        return self.versions[group][0]

    def in_preference_order(self) -> list[Resource]:
        """Groups in discovery order, each group's preferred version first (what `find` searches)."""
        if self._preferred is None:
            groups = self.groups()
            self._preferred = sorted(
                self.resources, key=lambda r: (groups.index(r.group), self.versions[r.group].index(r.version))
            )
        return self._preferred

    def find(self, name: str) -> Resource | None:
        """A resource by the names kubectl accepts (see `find_by_name`)."""
        try:
            return self._found[name]
        except KeyError:
            pass
        found = find_by_name(self.in_preference_order(), name)
        if len(self._found) >= _FOUND_LIMIT:  # names come from users too: keep the memo bounded
            self._found.clear()
        self._found[name] = found
        return found

    def stored(self) -> list[Resource]:
        """The resources with storage of their own: not another version's view (events.k8s.io Events,
        autoscaling/v1 HPAs) and not write-only (bindings). One watch cache each; what controllers watch."""
        return [r for r in self.resources if not r.storage_group_version and "list" in r.verbs]

    def storage_resource(self, r: Resource) -> Resource:
        """The resource whose objects back `r` (itself unless another version is the storage version)."""
        if not r.storage_group_version:
            return r
        group, _, version = r.storage_group_version.rpartition("/")
        stored = self.get(group, version, r.storage_name or r.plural) or self.get(group, version, r.plural)
        return stored or r


_FOUND_LIMIT = 4096

TABLE = ResourceTable(RESOURCES)
