"""The controller manager: runs the chosen controllers over one shared informer factory, optionally behind
leader election (upstream: cmd/kube-controller-manager, NewControllerInitializers).

Controllers are named as upstream names them for `--controllers` (`garbage-collector-controller`, with the
short alias `garbagecollector`, …); `*` means every controller on by default and `-name` turns one off.
Each controller is an object with `async run()` built from the shared REST client and informer factory.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..client.cache import SharedInformerFactory
from ..client.cache.shared_informer import drop_managed_fields
from ..client.rest import RESTClient
from ..client.workqueue import WORKQUEUE_REGISTRY
from ..component_server import ComponentServer
from ..gc_policy import freeze_long_lived
from .certificates import (
    CSRApprovingController,
    CSRCleanerController,
    CSRSigningController,
    RootCACertPublisher,
    signer_files,
)
from .clientbuilder import ControllerClientBuilder
from .clusterroleaggregation import ClusterRoleAggregationController
from .cronjob import CronJobController
from .daemon import DaemonSetsController
from .deployment import DeploymentController
from .disruption import DisruptionController
from .endpoint import EndpointsController
from .endpointslice import EndpointSliceController
from .garbagecollector import GarbageCollector
from .job import JobController
from .namespace import NamespaceController
from .nodeipam import NodeIpamController
from .nodelifecycle import NodeLifecycleController
from .nodelifecycle.zones import EvictionRates
from .podautoscaler import HorizontalController
from .podgc import DEFAULT_TERMINATED_POD_GC_THRESHOLD, PodGCController
from .replicaset import ReplicaSetController
from .replication import replication_manager
from .resourcequota import ResourceQuotaController
from .serviceaccount import ServiceAccountsController
from .statefulset import StatefulSetController
from .tainteviction import TaintEvictionController
from .ttlafterfinished import TTLAfterFinishedController
from .validatingadmissionpolicystatus import ValidatingAdmissionPolicyStatusController
from .volume.local_path_provisioner import LocalPathProvisioner
from .volume.persistentvolume import PersistentVolumeController
from .volume.pv_protection import PVProtectionController
from .volume.pvc_protection import PVCProtectionController

log = logging.getLogger(__name__)

Initializer = Callable[[RESTClient, SharedInformerFactory, dict[str, Any]], Any]


def new_controller_initializers() -> dict[str, Initializer]:
    """Every controller this manager can run, by its upstream name."""
    return {
        "garbage-collector-controller": lambda c, f, o: GarbageCollector(
            c, f, workers=o.get("concurrent_gc_syncs", 20)
        ),
        "namespace-controller": lambda c, f, o: NamespaceController(
            c, f, workers=o.get("concurrent_namespace_syncs", 10)
        ),
        "node-lifecycle-controller": _node_lifecycle,
        "taint-eviction-controller": lambda c, f, o: TaintEvictionController(c, f),
        "node-ipam-controller": _node_ipam,
        "pod-garbage-collector-controller": lambda c, f, o: PodGCController(
            c, f, terminated_pod_threshold=o.get("terminated_pod_gc_threshold", DEFAULT_TERMINATED_POD_GC_THRESHOLD)
        ),
        "deployment-controller": lambda c, f, o: DeploymentController(
            c, f, workers=o.get("concurrent_deployment_syncs", 5)
        ),
        "replicaset-controller": lambda c, f, o: ReplicaSetController(
            c, f, workers=o.get("concurrent_replicaset_syncs", 5)
        ),
        "replicationcontroller-controller": lambda c, f, o: replication_manager(
            c, f, workers=o.get("concurrent_rc_syncs", 5)
        ),
        "job-controller": lambda c, f, o: JobController(c, f, workers=o.get("concurrent_job_syncs", 5)),
        "daemonset-controller": lambda c, f, o: DaemonSetsController(
            c, f, workers=o.get("concurrent_daemonset_syncs", 2)
        ),
        "disruption-controller": lambda c, f, o: DisruptionController(c, f),
        "horizontal-pod-autoscaler-controller": _horizontal_pod_autoscaler,
        "statefulset-controller": lambda c, f, o: StatefulSetController(
            c, f, workers=o.get("concurrent_statefulset_syncs", 5)
        ),
        "cronjob-controller": lambda c, f, o: CronJobController(c, f, workers=o.get("concurrent_cron_job_syncs", 5)),
        "ttl-after-finished-controller": lambda c, f, o: TTLAfterFinishedController(
            c, f, workers=o.get("concurrent_ttl_after_finished_syncs", 5)
        ),
        "serviceaccount-controller": lambda c, f, o: ServiceAccountsController(c, f),
        "clusterrole-aggregation-controller": lambda c, f, o: ClusterRoleAggregationController(c, f),
        "resourcequota-controller": lambda c, f, o: ResourceQuotaController(
            c,
            f,
            workers=o.get("concurrent_resource_quota_syncs", 5),
            sync_period=o.get("resource_quota_sync_period", 300.0),
        ),
        "endpoints-controller": lambda c, f, o: EndpointsController(
            c, f, workers=o.get("concurrent_endpoint_syncs", 5)
        ),
        "endpointslice-controller": lambda c, f, o: EndpointSliceController(
            c,
            f,
            workers=o.get("concurrent_service_endpoint_syncs", 5),
            max_endpoints_per_slice=o.get("max_endpoints_per_slice", 100),
        ),
        "root-ca-certificate-publisher-controller": _root_ca_publisher,
        "certificatesigningrequest-signing-controller": _csr_signing,
        "certificatesigningrequest-approving-controller": lambda c, f, o: CSRApprovingController(c, f),
        "certificatesigningrequest-cleaner-controller": lambda c, f, o: CSRCleanerController(c, f),
        "persistentvolume-binder-controller": lambda c, f, o: PersistentVolumeController(
            c, f, sync_period=o.get("pvclaimbinder_sync_period", 15.0)
        ),
        "persistentvolumeclaim-protection-controller": lambda c, f, o: PVCProtectionController(c, f),
        "persistentvolume-protection-controller": lambda c, f, o: PVProtectionController(c, f),
        # Not a kube-controller-manager controller: the provisioner k3s ships, simulated (see its module).
        "validatingadmissionpolicy-status-controller": lambda c, f, o: ValidatingAdmissionPolicyStatusController(c, f),
        "local-path-provisioner": lambda c, f, o: LocalPathProvisioner(c, f),
    }


def _node_lifecycle(c: RESTClient, f: SharedInformerFactory, o: dict[str, Any]) -> NodeLifecycleController:
    rates = EvictionRates(
        eviction_rate=o.get("node_eviction_rate", 0.1),
        secondary_eviction_rate=o.get("secondary_node_eviction_rate", 0.01),
        large_cluster_threshold=o.get("large_cluster_size_threshold", 50),
        unhealthy_zone_threshold=o.get("unhealthy_zone_threshold", 0.55),
    )
    return NodeLifecycleController(
        c, f, node_monitor_period=o.get("node_monitor_period", 5.0),
        node_startup_grace_period=o.get("node_startup_grace_period", 60.0),
        node_monitor_grace_period=o.get("node_monitor_grace_period", 50.0), rates=rates,
    )  # fmt: skip


def _horizontal_pod_autoscaler(c: RESTClient, f: SharedInformerFactory, o: dict[str, Any]) -> HorizontalController:
    return HorizontalController(
        c, f, workers=o.get("concurrent_horizontal_pod_autoscaler_syncs", 5),
        sync_period=o.get("horizontal_pod_autoscaler_sync_period", 15.0),
        tolerance=o.get("horizontal_pod_autoscaler_tolerance", 0.1),
        downscale_stabilization=o.get("horizontal_pod_autoscaler_downscale_stabilization", 300.0),
        cpu_initialization_period=o.get("horizontal_pod_autoscaler_cpu_initialization_period", 300.0),
        delay_of_initial_readiness_status=o.get("horizontal_pod_autoscaler_initial_readiness_delay", 30.0),
    )  # fmt: skip


def _root_ca_publisher(c: RESTClient, f: SharedInformerFactory, o: dict[str, Any]) -> RootCACertPublisher | None:
    """The CA bundle is --root-ca-file's, else the one this manager trusts the API server with (as upstream)."""
    path = o.get("root_ca_file") or c.config.ca_file
    if path:
        ca = Path(path).read_text()
    elif c.config.ca_data:
        ca = c.config.ca_data.decode()
    else:
        log.info("controller-manager: no root CA (--root-ca-file, or a CA in the kubeconfig) to publish")
        return None
    return RootCACertPublisher(c, f, ca)


def _csr_signing(c: RESTClient, f: SharedInformerFactory, o: dict[str, Any]) -> CSRSigningController | None:
    # As upstream: without a CA (--cluster-signing-*-file) the signer is not started (and not an error).
    files = signer_files(o)
    if files is None:
        log.info("controller-manager: skipping CSR signer controller because no csr cert/key was specified")
        return None
    return CSRSigningController(c, f, files, cert_ttl=o.get("cluster_signing_duration", 365 * 24 * 3600.0))


def _node_ipam(c: RESTClient, f: SharedInformerFactory, o: dict[str, Any]) -> NodeIpamController | None:
    # As upstream: without --allocate-node-cidrs the controller is not started (and not an error).
    if not o.get("allocate_node_cidrs"):
        return None
    return NodeIpamController(
        c, f, cluster_cidrs=o["cluster_cidrs"], node_mask_sizes=o["node_mask_sizes"], service_cidr=o.get("service_cidr")
    )


ALIASES = {
    "validatingadmissionpolicy-status": "validatingadmissionpolicy-status-controller",
    "garbagecollector": "garbage-collector-controller",
    "namespace": "namespace-controller",
    "nodelifecycle": "node-lifecycle-controller",
    "nodeipam": "node-ipam-controller",
    "podgc": "pod-garbage-collector-controller",
    "deployment": "deployment-controller",
    "replicaset": "replicaset-controller",
    "replicationcontroller": "replicationcontroller-controller",
    "job": "job-controller",
    "cronjob": "cronjob-controller",
    "statefulset": "statefulset-controller",
    "disruption": "disruption-controller",
    "horizontalpodautoscaling": "horizontal-pod-autoscaler-controller",
    "daemonset": "daemonset-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "serviceaccount": "serviceaccount-controller",
    "clusterrole-aggregation": "clusterrole-aggregation-controller",
    "resourcequota": "resourcequota-controller",
    "endpoint": "endpoints-controller",
    "endpointslice": "endpointslice-controller",
    "root-ca-cert-publisher": "root-ca-certificate-publisher-controller",
    "csrsigning": "certificatesigningrequest-signing-controller",
    "csrapproving": "certificatesigningrequest-approving-controller",
    "csrcleaner": "certificatesigningrequest-cleaner-controller",
    "persistentvolume-binder": "persistentvolume-binder-controller",
    "pvc-protection": "persistentvolumeclaim-protection-controller",
    "pv-protection": "persistentvolume-protection-controller",
}


def enabled_controllers(spec: list[str]) -> list[str]:
    """Resolve a `--controllers` list (`*`, names, aliases, `-name`) to controller names."""
    known = new_controller_initializers()
    chosen: list[str] = []
    star = False
    disabled: set[str] = set()
    for raw in spec:
        item = raw.strip()
        if not item:
            continue
        if item == "*":
            star = True
            continue
        negate = item.startswith("-")
        name = ALIASES.get(item.lstrip("-"), item.lstrip("-"))
        if name not in known:
            raise ValueError(f'"{item.lstrip("-")}" is not in the list of known controllers')
        if negate:
            disabled.add(name)
        elif name not in chosen:
            chosen.append(name)
    if star:
        chosen += [n for n in known if n not in chosen]
    return [n for n in chosen if n not in disabled]


class ControllerManager:
    def __init__(
        self,
        client: RESTClient,
        controllers: list[str] | None = None,
        *,
        leader_elect: bool = False,
        options: dict[str, Any] | None = None,
        bind_address: str = "127.0.0.1",
        secure_port: int = -1,
        port_file: Path | None = None,
    ) -> None:
        """`secure_port` serves /healthz, /livez, /readyz and /metrics (upstream's is 10257); -1 serves none."""
        self.client = client
        self.names = enabled_controllers(controllers or ["*"])
        self.leader_elect = leader_elect
        self.options = options or {}
        self.controllers: dict[str, Any] = {}
        self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        self.leading = False
        self._synced = False
        self._leader_seen = ""
        self.serving = ComponentServer(
            "controller-manager", bind_address=bind_address, secure_port=secure_port,
            ready_checks={"informer-sync": self.informers_synced}, registries=[WORKQUEUE_REGISTRY],
            port_file=port_file,
        )  # fmt: skip

    async def informers_synced(self) -> bool:
        """The readiness check (`/readyz`): the shared informers have made their first lists. A standby
        replica, waiting for the lease, is ready too (as a standby kube-scheduler is)."""
        if self.leader_elect and not self.leading:
            # Upstream's standby is ready from its start; ours once it has seen another replica hold the lease,
            # so that a lone replica about to lead is not reported ready before its informers synced.
            return self._leader_seen not in ("", self.identity)
        return self._synced

    async def run(self) -> None:
        """Serve health and metrics, and run until cancelled (or, with leader election, until leadership is
        lost)."""
        await self.serving.start()
        try:
            if not self.leader_elect:
                await self._run_controllers()
                return
            from ..client.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock

            lock = LeaseLock(self.client, "kube-system", "kube-controller-manager", self.identity)

            def stopped() -> None:
                log.info("controller-manager: %s stopped leading", self.identity)

            def new_leader(identity: str) -> None:
                self._leader_seen = identity

            config = LeaderElectionConfig(
                lock=lock, on_started_leading=self._run_controllers, on_stopped_leading=stopped,
                on_new_leader=new_leader, release_on_cancel=True,
            )  # fmt: skip
            await LeaderElector(config).run()
        finally:
            await self.serving.stop()

    async def _run_controllers(self) -> None:
        factory = SharedInformerFactory(self.client, transform=drop_managed_fields)
        init = new_controller_initializers()
        # --use-service-account-credentials: each controller writes as its own service account (the
        # informers read as the manager, as upstream's shared informers do)
        builder = ControllerClientBuilder(self.client) if self.options.get("use_service_account_credentials") else None
        for name in self.names:
            client = await builder.client_for(name) if builder is not None else self.client
            controller = init[name](client, factory, self.options)
            if controller is None:
                log.info("controller-manager: %s is disabled by its flags; not started", name)
                continue
            self.controllers[name] = controller
            log.info("controller-manager: started %s", name)
        factory.start()
        self.leading = True
        tasks = [asyncio.create_task(c.run(), name=n) for n, c in self.controllers.items()]
        synced = asyncio.create_task(self._wait_synced(factory))
        try:
            await asyncio.gather(*tasks)
        finally:
            self.leading = self._synced = False
            synced.cancel()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await factory.shutdown()
            if builder is not None:
                await builder.close()

    async def _wait_synced(self, factory: SharedInformerFactory) -> None:
        await factory.wait_for_cache_sync()
        freeze_long_lived()  # the informers hold every pod, node, ... for good: see gc_policy
        self._synced = True
