"""Each controller as its own service account (`--use-service-account-credentials`; upstream:
k8s.io/controller-manager/pkg/clientbuilder, DynamicControllerClientBuilder).

The controller manager's own identity only makes the ServiceAccount `kube-system/<name>` of each controller
(upstream's names: `deployment-controller`, `generic-garbage-collector`, ...) and asks the TokenRequest API
for its tokens; the controller's client sends that token, renewed before it expires. Under RBAC each
controller then has exactly the rights of its `system:controller:<name>` ClusterRole. The shared informers
keep the manager's own identity, as upstream's do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..api import errors
from ..client.rest import RESTClient

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
EXPIRATION_SECONDS = 3600  # what upstream's dynamic builder asks for
RENEW_AT = 0.8  # of a token's life: renewed with a fifth of it left

# The service account each controller runs as (upstream: the name each controller's start function gives
# ClientOrDie). Controllers not listed use the manager's own identity.
SERVICE_ACCOUNTS = {
    "garbage-collector-controller": "generic-garbage-collector",
    "namespace-controller": "namespace-controller",
    "node-lifecycle-controller": "node-controller",
    "taint-eviction-controller": "node-controller",
    "node-ipam-controller": "node-controller",
    "pod-garbage-collector-controller": "pod-garbage-collector",
    "deployment-controller": "deployment-controller",
    "replicaset-controller": "replicaset-controller",
    "replicationcontroller-controller": "replication-controller",
    "job-controller": "job-controller",
    "daemonset-controller": "daemon-set-controller",
    "disruption-controller": "disruption-controller",
    "horizontal-pod-autoscaler-controller": "horizontal-pod-autoscaler",
    "statefulset-controller": "statefulset-controller",
    "cronjob-controller": "cronjob-controller",
    "ttl-after-finished-controller": "ttl-after-finished-controller",
    "serviceaccount-controller": "service-account-controller",
    "endpoints-controller": "endpoint-controller",
    "endpointslice-controller": "endpointslice-controller",
    "root-ca-certificate-publisher-controller": "root-ca-cert-publisher",
    "certificatesigningrequest-signing-controller": "certificate-controller",
    "certificatesigningrequest-approving-controller": "certificate-controller",
    "certificatesigningrequest-cleaner-controller": "certificate-controller",
    "persistentvolume-binder-controller": "persistent-volume-binder",
    "persistentvolumeclaim-protection-controller": "pvc-protection-controller",
    "persistentvolume-protection-controller": "pv-protection-controller",
    "resourcequota-controller": "resourcequota-controller",
    "clusterrole-aggregation-controller": "clusterrole-aggregation-controller",
    "validatingadmissionpolicy-status-controller": "validatingadmissionpolicy-status-controller",
    # an add-on, not upstream's: its account is bound to the role in volume/local_path_provisioner.rbac_objects
    "local-path-provisioner": "local-path-provisioner-service-account",
}


class _Token:
    """A service account's current token, renewed in the background."""

    def __init__(self, root: RESTClient, name: str) -> None:
        self.root = root
        self.name = name
        self.value = ""
        self._renewer: asyncio.Task[None] | None = None

    async def fetch(self) -> float:
        """A new token; returns how many seconds it is valid."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": EXPIRATION_SECONDS}}  # fmt: skip
        path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{self.name}/token"
        answer: dict[str, Any] = await self.root.request("POST", path, body=body)
        self.value = answer["status"]["token"]
        return float(answer["spec"].get("expirationSeconds") or EXPIRATION_SECONDS)

    def start(self, lifetime: float) -> None:
        self._renewer = asyncio.get_running_loop().create_task(self._renew(lifetime))

    async def _renew(self, lifetime: float) -> None:
        while True:
            await asyncio.sleep(lifetime * RENEW_AT)
            try:
                lifetime = await self.fetch()
            except Exception as err:  # the old token is good for a while yet: try again soon
                log.warning("renewing the token of service account %s/%s: %s", NAMESPACE, self.name, err)
                lifetime = max(10.0, lifetime * (1 - RENEW_AT))

    def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()

    def __call__(self) -> str:
        return self.value


class ControllerClientBuilder:
    """Clients acting as each controller's service account, made from the manager's `root` client."""

    def __init__(self, root: RESTClient) -> None:
        self.root = root
        self._tokens: dict[str, _Token] = {}
        self._clients: list[RESTClient] = []

    async def _ensure_service_account(self, name: str) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts"
        try:
            await self.root.request("GET", f"{path}/{name}")
            return
        except errors.StatusError as err:
            if err.code != 404:
                raise
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}}
        try:
            await self.root.request("POST", path, body=body)
        except errors.StatusError as err:
            if err.code != 409:
                raise

    async def client_for(self, controller: str) -> RESTClient:
        """The client `controller` runs with: its service account's, or the root client when it has none."""
        name = SERVICE_ACCOUNTS.get(controller)
        if name is None:
            return self.root
        token = self._tokens.get(name)
        if token is None:
            await self._ensure_service_account(name)
            token = _Token(self.root, name)
            deadline = time.monotonic() + 30
            while True:  # a new account's token may be refused for a moment (the API server's caches)
                try:
                    lifetime = await token.fetch()
                    break
                except errors.StatusError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.5)
            token.start(lifetime)
            self._tokens[name] = token
        cfg = self.root.config.with_options(
            token=None, token_file=None, client_cert_data=None, client_key_data=None, client_cert_file=None,
            client_key_file=None, username=None, password=None, impersonate_user=None, impersonate_groups=(),
            token_source=token, user_agent=f"{self.root.user_agent}/{name}",
        )  # fmt: skip
        client = RESTClient(cfg)
        self._clients.append(client)
        return client

    async def close(self) -> None:
        for t in self._tokens.values():
            t.stop()
        for c in self._clients:
            await c.close()
