"""The controller manager's flags, named and defaulted as kube-controller-manager v1.32's
(cmd/kube-controller-manager/app/options: the workers of each controller, `--concurrent_rc_syncs` with upstream's
underscores, hpacontroller.go, nodelifecyclecontroller.go, nodeipamcontroller.go, podgccontroller.go,
endpointslicecontroller.go, csrsigningcontroller.go, and the shared --allocate-node-cidrs / --cluster-cidr), turned
into the options the controller initializers read.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import click

from ..component_options import go_bool_option

_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--concurrent-gc-syncs", default=20, show_default=True, help="Garbage collector workers."),
    click.option("--concurrent-namespace-syncs", default=10, show_default=True, help="Namespace controller workers."),
    click.option("--concurrent-deployment-syncs", default=5, show_default=True, help="Deployment controller workers."),
    click.option("--concurrent-replicaset-syncs", default=5, show_default=True, help="ReplicaSet controller workers."),
    click.option("--concurrent_rc_syncs", "concurrent_rc_syncs", default=5, show_default=True,
                 help="ReplicationController manager workers (upstream spells this flag with underscores)."),
    click.option("--concurrent-daemonset-syncs", default=2, show_default=True, help="DaemonSet controller workers."),
    click.option("--concurrent-statefulset-syncs", default=5, show_default=True,
                 help="StatefulSet controller workers."),
    click.option("--concurrent-job-syncs", default=5, show_default=True, help="Job controller workers."),
    click.option("--concurrent-cron-job-syncs", default=5, show_default=True, help="CronJob controller workers."),
    click.option("--concurrent-ttl-after-finished-syncs", default=5, show_default=True,
                 help="TTL-after-finished controller workers."),
    click.option("--concurrent-horizontal-pod-autoscaler-syncs", default=5, show_default=True,
                 help="Horizontal pod autoscaler workers."),
    click.option("--horizontal-pod-autoscaler-sync-period", default="15s", show_default=True,
                 help="How often each horizontal pod autoscaler is synced."),
    click.option("--horizontal-pod-autoscaler-tolerance", default=0.1, show_default=True,
                 help="How far the usage ratio must leave 1.0 before the autoscaler scales."),
    click.option("--horizontal-pod-autoscaler-downscale-stabilization", default="5m0s", show_default=True,
                 help="How far back the autoscaler looks for a higher recommendation before it scales down."),
    click.option("--horizontal-pod-autoscaler-cpu-initialization-period", default="5m0s", show_default=True,
                 help="After a pod starts, how long its CPU samples are only trusted once it is Ready."),
    click.option("--horizontal-pod-autoscaler-initial-readiness-delay", default="30s", show_default=True,
                 help="After a pod starts, how long a readiness change counts as its first."),
    click.option("--concurrent-endpoint-syncs", default=5, show_default=True, help="Endpoints controller workers."),
    click.option("--concurrent-service-endpoint-syncs", default=5, show_default=True,
                 help="EndpointSlice controller workers."),
    click.option("--max-endpoints-per-slice", type=click.IntRange(1, 1000), default=100, show_default=True,
                 help="Endpoints in one EndpointSlice at most."),
    click.option("--pvclaimbinder-sync-period", default="15s", show_default=True,
                 help="How often the PV controller syncs every volume and claim."),
    go_bool_option("--use-service-account-credentials", False,
                   "Each controller uses its own service account's credentials (kube-system/<controller>)."),
    click.option("--root-ca-file", default="",
                 help="CA bundle published in every namespace as kube-root-ca.crt (default: the kubeconfig's CA)."),
    click.option("--cluster-signing-cert-file", default="",
                 help="PEM CA certificate the CSR signer issues cluster-scoped certificates with."),
    click.option("--cluster-signing-key-file", default="", help="PEM private key of --cluster-signing-cert-file."),
    click.option("--cluster-signing-kubelet-serving-cert-file", default="",
                 help="CA certificate for kubernetes.io/kubelet-serving (not with --cluster-signing-cert-file)."),
    click.option("--cluster-signing-kubelet-serving-key-file", default="",
                 help="Its key (--cluster-signing-kubelet-serving-cert-file)."),
    click.option("--cluster-signing-kubelet-client-cert-file", default="",
                 help="CA certificate for kubernetes.io/kube-apiserver-client-kubelet."),
    click.option("--cluster-signing-kubelet-client-key-file", default="",
                 help="Its key (--cluster-signing-kubelet-client-cert-file)."),
    click.option("--cluster-signing-kube-apiserver-client-cert-file", default="",
                 help="CA certificate for kubernetes.io/kube-apiserver-client."),
    click.option("--cluster-signing-kube-apiserver-client-key-file", default="",
                 help="Its key (--cluster-signing-kube-apiserver-client-cert-file)."),
    click.option("--cluster-signing-legacy-unknown-cert-file", default="",
                 help="CA certificate for kubernetes.io/legacy-unknown."),
    click.option("--cluster-signing-legacy-unknown-key-file", default="",
                 help="Its key (--cluster-signing-legacy-unknown-cert-file)."),
    click.option("--cluster-signing-duration", default="8760h0m0s", show_default=True,
                 help="The longest a signed certificate lasts (a CSR's expirationSeconds may ask for less)."),
    click.option("--node-monitor-period", default="5s", show_default=True,
                 help="How often the node lifecycle controller checks node health."),
    click.option("--node-monitor-grace-period", default="50s", show_default=True,
                 help="How long a node may go without a heartbeat before it is marked Unknown."),
    click.option("--node-startup-grace-period", default="1m", show_default=True,
                 help="How long a new node may go without reporting before it is marked Unknown."),
    click.option("--node-eviction-rate", default=0.1, show_default=True,
                 help="Nodes per second tainted for eviction in a healthy zone."),
    click.option("--secondary-node-eviction-rate", default=0.01, show_default=True,
                 help="Nodes per second tainted in an unhealthy zone (0 below --large-cluster-size-threshold)."),
    click.option("--unhealthy-zone-threshold", default=0.55, show_default=True,
                 help="Fraction of not-Ready nodes (at least 3) that makes a zone unhealthy."),
    click.option("--large-cluster-size-threshold", default=50, show_default=True,
                 help="Above this many nodes a zone's evictions slow down rather than stop when it is unhealthy."),
    click.option("--terminated-pod-gc-threshold", default=12500, show_default=True,
                 help="Terminated pods kept before the pod garbage collector deletes the oldest (0: no limit)."),
    go_bool_option("--allocate-node-cidrs", False,
                   "Give each node a podCIDR from --cluster-cidr (node-ipam-controller); --allocate-node-cidrs=false too."),
    click.option("--cluster-cidr", default="", help="CIDR range of pods (one IPv4, one IPv6, or both)."),
    click.option("--service-cluster-ip-range", default="", help="Service CIDR, kept out of the pod ranges."),
    click.option("--node-cidr-mask-size", default=0, help="Mask size of each node's CIDR (24 IPv4, 64 IPv6)."),
    click.option("--node-cidr-mask-size-ipv4", default=0, help="Mask size of each node's IPv4 CIDR (dual stack)."),
    click.option("--node-cidr-mask-size-ipv6", default=0, help="Mask size of each node's IPv6 CIDR (dual stack)."),
]  # fmt: skip

# Passed through as they are.
_PLAIN = (
    "concurrent_gc_syncs", "concurrent_namespace_syncs", "concurrent_deployment_syncs", "concurrent_replicaset_syncs",
    "concurrent_rc_syncs", "concurrent_daemonset_syncs", "concurrent_statefulset_syncs",
    "concurrent_job_syncs", "concurrent_cron_job_syncs", "concurrent_horizontal_pod_autoscaler_syncs",
    "horizontal_pod_autoscaler_tolerance",
    "concurrent_ttl_after_finished_syncs",
    "concurrent_endpoint_syncs", "concurrent_service_endpoint_syncs", "max_endpoints_per_slice",
    "root_ca_file", "use_service_account_credentials",
    "cluster_signing_cert_file", "cluster_signing_key_file",
    "cluster_signing_kubelet_serving_cert_file", "cluster_signing_kubelet_serving_key_file",
    "cluster_signing_kubelet_client_cert_file", "cluster_signing_kubelet_client_key_file",
    "cluster_signing_kube_apiserver_client_cert_file", "cluster_signing_kube_apiserver_client_key_file",
    "cluster_signing_legacy_unknown_cert_file", "cluster_signing_legacy_unknown_key_file",
)  # fmt: skip

# Go durations, passed on in seconds.
_DURATIONS = (
    "horizontal_pod_autoscaler_sync_period", "horizontal_pod_autoscaler_downscale_stabilization",
    "horizontal_pod_autoscaler_cpu_initialization_period", "horizontal_pod_autoscaler_initial_readiness_delay",
    "cluster_signing_duration",
)  # fmt: skip

KEYS = (
    "node_monitor_period", "node_monitor_grace_period", "node_startup_grace_period", "node_eviction_rate",
    "secondary_node_eviction_rate", "unhealthy_zone_threshold", "large_cluster_size_threshold",
    "terminated_pod_gc_threshold", "allocate_node_cidrs", "cluster_cidr", "service_cluster_ip_range",
    "node_cidr_mask_size", "node_cidr_mask_size_ipv4", "node_cidr_mask_size_ipv6",
)  # fmt: skip


def controller_flags(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f


def controller_settings(kw: dict[str, Any], parse_duration: Callable[[str], float]) -> dict[str, Any]:
    """The options dict from the flags (popped from `kw`); ValueError for values that cannot work."""
    out = {k: kw.pop(k) for k in _PLAIN}
    out.update({k: parse_duration(str(kw.pop(k))) for k in _DURATIONS})
    out["pvclaimbinder_sync_period"] = parse_duration(str(kw.pop("pvclaimbinder_sync_period")))
    from .certificates.signer import check_signer_files

    check_signer_files(out)  # contradicting CA flags and unusable CA files fail here, before anything starts
    out.update(node_controller_settings(kw, parse_duration))
    return out


def node_controller_settings(kw: dict[str, Any], parse_duration: Callable[[str], float]) -> dict[str, Any]:
    from .nodeipam import mask_sizes, parse_cluster_cidrs

    raw = {k: kw.pop(k) for k in KEYS}
    out: dict[str, Any] = {
        k: parse_duration(str(raw[k]))
        for k in ("node_monitor_period", "node_monitor_grace_period", "node_startup_grace_period")
    }
    out.update({k: raw[k] for k in KEYS if k not in out})
    if out["allocate_node_cidrs"]:
        cidrs = parse_cluster_cidrs(str(raw["cluster_cidr"]))
        out["cluster_cidrs"] = cidrs
        out["node_mask_sizes"] = mask_sizes(
            cidrs, raw["node_cidr_mask_size"], raw["node_cidr_mask_size_ipv4"], raw["node_cidr_mask_size_ipv6"]
        )
        if raw["service_cluster_ip_range"]:
            try:
                out["service_cidr"] = ipaddress.ip_network(str(raw["service_cluster_ip_range"]).split(",")[0])
            except ValueError:
                raise ValueError(
                    f"--service-cluster-ip-range: invalid CIDR {raw['service_cluster_ip_range']!r}"
                ) from None
    return out
