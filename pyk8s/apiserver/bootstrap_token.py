"""What `pyk8s up` sets up so that nodes can join by TLS bootstrap, as kubeadm's `bootstrap-token` phase does:
a bootstrap token (a `kube-system/bootstrap-token-<id>` Secret, group
`system:bootstrappers:kubeadm:default-node-token`, valid 24 h), the ClusterRoleBindings that let that group ask
for node client certificates and have them approved automatically (and nodes renew theirs), and
`bootstrap-kubelet.conf`, the kubeconfig that carries the token.

A token still valid for an hour is kept across restarts; a new one replaces it (its Secret deleted) otherwise.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
import string
from pathlib import Path
from typing import Any

import yaml

from ..api import errors
from ..file_modes import write_private_file
from .authn import UserInfo
from .authn.bootstrap import NAMESPACE, SECRET_PREFIX, SECRET_TYPE
from .certs import ADMIN_GROUP, ADMIN_USER, PKI, _b64
from .registry.rest import Context, DeleteOptions

NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
TOKEN_TTL = dt.timedelta(hours=24)  # kubeadm's default
KEEP_IF_VALID_FOR = dt.timedelta(hours=1)
_ALPHABET = string.ascii_lowercase + string.digits
_RBAC = "rbac.authorization.k8s.io"


def _binding(name: str, role: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": group}],
    }  # fmt: skip


# kubeadm's names for them (cmd/kubeadm/app/phases/bootstraptoken/node).
NODE_BOOTSTRAP_BINDINGS = (
    _binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", NODE_TOKEN_GROUP),
    _binding(
        "kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        NODE_TOKEN_GROUP,
    ),
    _binding(
        "kubeadm:node-autoapprove-certificate-rotation",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes",
    ),
)  # fmt: skip


def new_token() -> tuple[str, str]:
    """A token's id (6) and secret (16): lower-case letters and digits, as bootstrap tokens are."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(6)), "".join(secrets.choice(_ALPHABET) for _ in range(16))


def token_secret(token_id: str, token_secret_: str, expires: dt.datetime) -> dict[str, Any]:
    data = {
        "token-id": token_id, "token-secret": token_secret_,
        "expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
        "auth-extra-groups": NODE_TOKEN_GROUP, "description": "The token simulated nodes join with (pyk8s up).",
    }  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
        "metadata": {"name": SECRET_PREFIX + token_id, "namespace": NAMESPACE},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }  # fmt: skip


def _token_in(path: Path) -> str | None:
    try:
        doc = yaml.safe_load(path.read_text())
        return str(doc["users"][0]["user"]["token"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None


def _still_valid(secret: dict[str, Any], now: dt.datetime) -> bool:
    raw = (secret.get("data") or {}).get("expiration")
    if not raw:
        return True
    try:
        expires = dt.datetime.fromisoformat(base64.b64decode(raw).decode().replace("Z", "+00:00"))
    except ValueError:
        return False
    return expires - KEEP_IF_VALID_FOR > now


async def ensure_node_bootstrap(server: Any, path: Path, pki: PKI) -> None:
    """The bindings, a valid token and `path` (the bootstrap kubeconfig) for the API server `server`."""
    ctx = Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,)))
    bindings = server.rest(f"{_RBAC}/v1", "clusterrolebindings")
    for obj in NODE_BOOTSTRAP_BINDINGS:
        try:
            await bindings.create("", obj, ctx)
        except errors.AlreadyExists:
            pass
    store = server.rest("v1", "secrets")
    now = dt.datetime.now(dt.UTC)
    old = _token_in(path)
    if old and "." in old:
        try:
            secret = await store.get(NAMESPACE, SECRET_PREFIX + old.split(".", 1)[0])
        except errors.NotFound:
            secret = None
        if secret is not None and _still_valid(secret, now):
            return
        if secret is not None:
            await store.delete(NAMESPACE, secret["metadata"]["name"], DeleteOptions(), ctx)
    token_id, secret_ = new_token()
    await store.create(NAMESPACE, token_secret(token_id, secret_, now + TOKEN_TTL), ctx)
    write_private_file(path, bootstrap_kubeconfig(server.url, _b64(pki.ca_cert), f"{token_id}.{secret_}"))


def bootstrap_kubeconfig(server: str, ca_data: str, token: str) -> bytes:
    """A kubeconfig reaching `server` (CA `ca_data`, base64) with bootstrap token `token`, as kubeadm writes
    `bootstrap-kubelet.conf`."""
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "pyk8s", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": "tls-bootstrap-token-user", "user": {"token": token}}],
        "contexts": [{"name": "tls-bootstrap-token-user@pyk8s",
                      "context": {"cluster": "pyk8s", "user": "tls-bootstrap-token-user"}}],
        "current-context": "tls-bootstrap-token-user@pyk8s",
    }  # fmt: skip
    return yaml.safe_dump(config, sort_keys=False).encode()
