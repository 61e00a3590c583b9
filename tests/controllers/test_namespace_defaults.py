"""What every namespace gets from the controller manager, as on a real cluster: the `default` ServiceAccount and
the `kube-root-ca.crt` ConfigMap with the API server's CA, both put back when deleted or changed."""

from __future__ import annotations

from typing import Any

from pyk8s.api import errors
from pyk8s.testing.polling import until


async def get_or_none(client, resource: str, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, ns)
    except errors.NotFound:
        return None


async def test_default_service_account_is_created_and_restored(cluster, client, ns):
    sa = await until("default SA", lambda: get_or_none(client, "serviceaccounts", "default", ns))
    out = cluster.kubectl("get", "serviceaccount", "-n", ns, "--no-headers", check=True).stdout.split()
    assert out[0] == "default"
    cluster.kubectl("delete", "serviceaccount", "default", "-n", ns, check=True)

    async def recreated() -> dict[str, Any] | None:
        again = await get_or_none(client, "serviceaccounts", "default", ns)
        return again if again and again["metadata"]["uid"] != sa["metadata"]["uid"] else None

    await until("default SA re-created", recreated)


async def test_root_ca_config_map_is_published_and_kept(cluster, client, ns):
    ca = cluster.ca_file.read_text()
    cm = await until("kube-root-ca.crt", lambda: get_or_none(client, "configmaps", "kube-root-ca.crt", ns))
    assert cm["data"] == {"ca.crt": ca}
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle that can be")
    cm["data"] = {"ca.crt": "tampered"}
    await client.update("configmaps", cm, ns)

    async def restored() -> bool:
        got = await get_or_none(client, "configmaps", "kube-root-ca.crt", ns)
        return bool(got and got["data"] == {"ca.crt": ca})

    await until("kube-root-ca.crt restored", restored)
    cluster.kubectl("delete", "configmap", "kube-root-ca.crt", "-n", ns, check=True)
    await until("kube-root-ca.crt re-created", restored)
