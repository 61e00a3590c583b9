"""Which admission plugins run, and in what order (upstream: pkg/kubeapiserver/options/plugins.go and the
generic `--enable-admission-plugins` / `--disable-admission-plugins` flags).

Every plugin name kube-apiserver v1.32 knows is accepted on the flags, so a command line written for upstream
works; the ones pyk8s does not implement are reported once and otherwise ignored. A name upstream does not know
is an error worded as upstream's. The order of the chain is upstream's AllOrderedPlugins, whatever the order of
the flags.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...api.meta import Object
from . import Chain, Plugin
from .certificates import CertificateApproval, CertificateSigning, CertificateSubjectRestriction
from .config import ConfigError, PluginConfigs, load_plugin_configs
from .default_ingress_class import DefaultIngressClass
from .default_storage_class import DefaultStorageClass
from .default_toleration_seconds import DEFAULT_SECONDS, DefaultTolerationSeconds
from .limit_ranger import LimitRanger
from .namespace_lifecycle import NamespaceLifecycle
from .node_restriction import NodeRestriction
from .node_taint import TaintNodesByCondition
from .podsecurity import PodSecurity
from .policy.validating import ValidatingAdmissionPolicy
from .priority import Priority
from .resource_quota import ResourceQuota
from .runtime_class import RuntimeClass
from .service_account import ServiceAccount
from .storage_object_in_use_protection import StorageObjectInUseProtection
from .webhook.mutating import MutatingAdmissionWebhook
from .webhook.validating import ValidatingAdmissionWebhook

log = logging.getLogger(__name__)

# kube-apiserver v1.32's AllOrderedPlugins.
ALL_ORDERED_PLUGINS = (
    "AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists",
    "LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount", "NodeRestriction", "TaintNodesByCondition",
    "AlwaysPullImages", "ImagePolicyWebhook", "PodSecurity", "PodNodeSelector", "Priority",
    "DefaultTolerationSeconds", "PodTolerationRestriction", "EventRateLimit", "ExtendedResourceToleration",
    "DefaultStorageClass", "StorageObjectInUseProtection", "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
    "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass", "DenyServiceExternalIPs",
    "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
    "ResourceQuota", "AlwaysDeny",
)  # fmt: skip

# Upstream's plugins on by default (DefaultOffAdmissionPlugins is everything else).
DEFAULT_ON = frozenset({
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "DefaultStorageClass", "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
    "StorageObjectInUseProtection", "Priority", "TaintNodesByCondition", "RuntimeClass", "CertificateApproval",
    "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
    "PodSecurity", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy",
})  # fmt: skip

IMPLEMENTED = (
    "NamespaceLifecycle", "TaintNodesByCondition", "DefaultTolerationSeconds", "DefaultStorageClass",
    "StorageObjectInUseProtection", "ValidatingAdmissionPolicy", "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook", "LimitRanger", "ServiceAccount", "Priority", "RuntimeClass", "DefaultIngressClass",
    "ResourceQuota", "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction",
    "PodSecurity", "NodeRestriction",
)  # fmt: skip


@dataclass(frozen=True)
class AdmissionOptions:
    enable_plugins: tuple[str, ...] = ()
    disable_plugins: tuple[str, ...] = ()
    default_not_ready_toleration_seconds: int = DEFAULT_SECONDS
    default_unreachable_toleration_seconds: int = DEFAULT_SECONDS
    config_file: str = ""  # --admission-control-config-file (config.py)

    def validate(self) -> list[str]:
        """Upstream's AdmissionOptions.Validate messages, then what is wrong with the configuration file."""
        errs = [f'enable-admission-plugins plugin "{n}" is unknown' for n in self.enable_plugins if n not in _KNOWN]
        errs += [f'disable-admission-plugins plugin "{n}" is unknown' for n in self.disable_plugins if n not in _KNOWN]
        both = sorted(set(self.enable_plugins) & set(self.disable_plugins))
        if both:
            errs.append(f"{both} in enable-admission-plugins and disable-admission-plugins overlapped")
        if not errs and self.config_file:
            try:
                self.plugin_configs()
            except ConfigError as err:
                errs.append(str(err))
        return errs

    def plugin_configs(self) -> PluginConfigs:
        """The enabled plugins' configurations from `config_file`; a ConfigError says what is wrong."""
        return load_plugin_configs(self.config_file, self.enabled())

    def enabled(self) -> list[str]:
        """The plugins that run, in upstream's order."""
        on = (DEFAULT_ON | set(self.enable_plugins)) - set(self.disable_plugins)
        return [n for n in ALL_ORDERED_PLUGINS if n in on]


_KNOWN = frozenset(ALL_ORDERED_PLUGINS)


def _with_kubeconfig(plugin: Any, configs: PluginConfigs) -> Any:
    """A webhook plugin with its WebhookAdmissionConfiguration (`webhook_admission`: the kubeconfig file and its
    users, the credentials for calling webhooks), kept for the webhook client; None when not configured."""
    plugin.webhook_admission = configs.webhooks.get(plugin.name)
    return plugin


def parse_plugin_list(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def build_chain(
    options: AdmissionOptions,
    get_namespace: Callable[[str], Awaitable[Object | None]],
    list_cached: Callable[[str, str], list[Object]] = lambda _gv, _plural: [],
    host: Any = None,
) -> Chain:
    """The chain `options` asks for; `list_cached(group_version, plural)` reads a resource's watch cache;
    `host` is the API server, read by plugins that need its stores and authorizer (policy.validating.Host)."""
    problems = options.validate()
    if problems:
        raise ValueError("; ".join(problems))
    configs = options.plugin_configs()
    factories: dict[str, Callable[[], Plugin]] = {
        "NamespaceLifecycle": lambda: NamespaceLifecycle(get_namespace),
        "TaintNodesByCondition": TaintNodesByCondition,
        "DefaultStorageClass": lambda: DefaultStorageClass(lambda: list_cached("storage.k8s.io/v1", "storageclasses")),
        "StorageObjectInUseProtection": StorageObjectInUseProtection,
        "DefaultTolerationSeconds": lambda: DefaultTolerationSeconds(
            options.default_not_ready_toleration_seconds, options.default_unreachable_toleration_seconds
        ),
        "DefaultIngressClass": lambda: DefaultIngressClass(
            lambda: list_cached("networking.k8s.io/v1", "ingressclasses")
        ),
        "CertificateSubjectRestriction": CertificateSubjectRestriction,
        "PodSecurity": lambda: PodSecurity(get_namespace, host, configs.pod_security),
    }
    if host is not None:
        factories["ValidatingAdmissionPolicy"] = lambda: ValidatingAdmissionPolicy(host)
        factories["MutatingAdmissionWebhook"] = lambda: _with_kubeconfig(MutatingAdmissionWebhook(host), configs)
        factories["ValidatingAdmissionWebhook"] = lambda: _with_kubeconfig(ValidatingAdmissionWebhook(host), configs)
        factories["LimitRanger"] = lambda: LimitRanger(host)
        factories["ServiceAccount"] = lambda: ServiceAccount(host)
        factories["Priority"] = lambda: Priority(host)
        factories["RuntimeClass"] = lambda: RuntimeClass(host)
        factories["ResourceQuota"] = lambda: ResourceQuota(host, config=configs.resource_quota)
        factories["CertificateApproval"] = lambda: CertificateApproval(host)
        factories["CertificateSigning"] = lambda: CertificateSigning(host)
        factories["NodeRestriction"] = lambda: NodeRestriction(host)
    names = options.enabled()
    missing = [n for n in names if n not in factories and n in options.enable_plugins]
    if missing:
        log.warning("admission plugins not implemented by pyk8s, ignored: %s", ", ".join(missing))
    plugins: Sequence[Plugin] = [factories[n]() for n in names if n in factories]
    log.info("admission plugins: %s", ", ".join(p.name for p in plugins))
    return Chain(list(plugins))
