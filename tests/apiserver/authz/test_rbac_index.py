"""The RBAC index of a server in this process follows the watch caches: a binding written through the store
decides the next request, and a watch that ends (a consumer the cache dropped) is replaced by the current state,
deletions made meanwhile included."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import Attributes
from pyk8s.apiserver.registry.rest import Context, DeleteOptions
from pyk8s.apiserver.server import APIServer, APIServerOptions
from pyk8s.testing.etcd import free_port

G = "rbac.authorization.k8s.io"
ADMIN = Context(UserInfo("admin", groups=("system:masters",)))


async def test_index_follows_the_stores(tmp_path: Path) -> None:
    opts = APIServerOptions(data_dir=tmp_path, secure_port=free_port(), authorization_modes=("RBAC",))
    server = APIServer(opts)
    await server.start()
    try:
        rbac = server.rbac
        assert rbac is not None
        crs = server.rest(f"{G}/v1", "clusterroles")
        crbs = server.rest(f"{G}/v1", "clusterrolebindings")
        ask = Attributes(UserInfo("zed", groups=("system:authenticated",)), "get", True, "", "", "v1", "nodes", "", "n")
        assert not rbac.authorize(ask).allowed
        rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}
        await crs.create("", {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": "nr"},
                              "rules": [rule]}, ADMIN)  # fmt: skip
        crb = {"apiVersion": f"{G}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "zed"},
               "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "nr"},
               "subjects": [{"apiGroup": G, "kind": "User", "name": "zed"}]}  # fmt: skip
        await crbs.create("", crb, ADMIN)
        await rbac.fresh()
        assert rbac.authorize(ask).allowed
        # the watch ends as a too-slow consumer's does; the binding goes meanwhile
        rbac._follower._watchers["clusterrolebindings"].stop()
        await crbs.delete("", "zed", DeleteOptions(), ADMIN)
        await crbs.create("", {**crb, "metadata": {"name": "zed2"}}, ADMIN)
        for _ in range(100):
            await rbac.fresh()
            if rbac.authorize(ask).reason.startswith('RBAC: allowed by ClusterRoleBinding "zed2"'):
                break
            await asyncio.sleep(0.02)
        assert rbac.authorize(ask).reason.startswith('RBAC: allowed by ClusterRoleBinding "zed2"')
        assert "zed" not in rbac.cluster_role_bindings
    finally:
        await server.stop()
