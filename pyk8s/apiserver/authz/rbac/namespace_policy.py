"""The default namespaced Roles and RoleBindings (upstream:
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/namespace_policy.go), in kube-system and kube-public:
reading the extension API server's authentication ConfigMap, the control plane's leader locks, and the
bootstrap-signer, cloud-provider and token-cleaner controllers."""

from __future__ import annotations

from .bootstrap_policy import (
    COORDINATION,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    LEGACY,
    READ,
    Object,
    events_rule,
    role,
    role_binding,
    rule,
    service_account,
    user,
)

KUBE_SYSTEM = "kube-system"
KUBE_PUBLIC = "kube-public"


def _leader_locking(component: str) -> Object:
    return role(KUBE_SYSTEM, f"system::leader-locking-{component}", [
        rule("watch", LEGACY, "configmaps"),
        rule("get update", LEGACY, "configmaps", component),
        rule("create get list update watch", COORDINATION, "leases"),
        rule("create get list update watch", COORDINATION, "leasecandidates"),
    ])  # fmt: skip


def namespace_roles() -> list[Object]:
    """Upstream: NamespaceRoles, flattened."""
    return [
        # what extension API servers read to authenticate the front proxy's requests
        role(KUBE_SYSTEM, "extension-apiserver-authentication-reader", [
            rule(READ, LEGACY, "configmaps", "extension-apiserver-authentication"),
        ]),
        _leader_locking("kube-controller-manager"),
        _leader_locking("kube-scheduler"),
        role(KUBE_SYSTEM, "system:controller:bootstrap-signer", [rule(READ, LEGACY, "secrets")]),
        role(KUBE_SYSTEM, "system:controller:cloud-provider", [rule("create get list watch", LEGACY, "configmaps")]),
        role(KUBE_SYSTEM, "system:controller:token-cleaner", [
            rule("delete get list watch", LEGACY, "secrets"),
            events_rule(),
        ]),
        role(KUBE_PUBLIC, "system:controller:bootstrap-signer", [
            rule(READ, LEGACY, "configmaps"),
            rule("update", LEGACY, "configmaps", "cluster-info"),
            events_rule(),
        ]),
    ]  # fmt: skip


def namespace_role_bindings() -> list[Object]:
    """Upstream: NamespaceRoleBindings, flattened."""
    return [
        role_binding(KUBE_SYSTEM, "system::extension-apiserver-authentication-reader",
                     "extension-apiserver-authentication-reader",
                     user(KUBE_CONTROLLER_MANAGER), user(KUBE_SCHEDULER)),
        role_binding(KUBE_SYSTEM, "system::leader-locking-kube-controller-manager",
                     "system::leader-locking-kube-controller-manager",
                     user(KUBE_CONTROLLER_MANAGER), service_account(KUBE_SYSTEM, "kube-controller-manager"),
                     service_account(KUBE_SYSTEM, "leader-election-controller")),
        role_binding(KUBE_SYSTEM, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
                     user(KUBE_SCHEDULER), service_account(KUBE_SYSTEM, "kube-scheduler")),
        role_binding(KUBE_SYSTEM, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     service_account(KUBE_SYSTEM, "bootstrap-signer")),
        role_binding(KUBE_SYSTEM, "system:controller:cloud-provider", "system:controller:cloud-provider",
                     service_account(KUBE_SYSTEM, "cloud-provider")),
        role_binding(KUBE_SYSTEM, "system:controller:token-cleaner", "system:controller:token-cleaner",
                     service_account(KUBE_SYSTEM, "token-cleaner")),
        role_binding(KUBE_PUBLIC, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     service_account(KUBE_SYSTEM, "bootstrap-signer")),
    ]  # fmt: skip
