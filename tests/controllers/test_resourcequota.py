"""The resource quota controller against a real API server (whose ResourceQuota admission charges writes): it
copies spec.hard to status.hard and computes status.used from what the namespace holds, recomputes when the hard
limits change, and gives usage back when a pod finishes or an object is deleted (replenishment)."""

from __future__ import annotations

from typing import Any

from pyk8s.api import errors
from pyk8s.testing.polling import until


def quota(name: str, hard: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard, **spec}}


def pod(name: str, cpu: str = "", **spec: Any) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}} if cpu else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}], **spec}}  # fmt: skip


async def used(client: Any, ns: str, name: str) -> dict[str, str]:
    return ((await client.get("resourcequotas", name, ns)).get("status") or {}).get("used") or {}


async def test_usage_is_computed_and_replenished(client: Any, ns: str) -> None:
    await client.create("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}}, ns)
    await client.create("pods", pod("before", "100m"), ns)
    await client.create("resourcequotas", quota("q", {"pods": "3", "requests.cpu": "1", "count/secrets": "5",
                                                      "secrets": "5"}), ns)  # fmt: skip
    assert await until("the first usage", lambda: _equals(client, ns, "q", {
        "pods": "1", "requests.cpu": "100m", "count/secrets": "1", "secrets": "1"}))  # fmt: skip
    status = (await client.get("resourcequotas", "q", ns))["status"]
    assert status["hard"] == {"pods": "3", "requests.cpu": "1", "count/secrets": "5", "secrets": "5"}

    # Admission charges a new pod at once; a finished pod frees its compute usage.
    await client.create("pods", pod("worker", "300m"), ns)
    assert (await used(client, ns, "q"))["requests.cpu"] == "400m"
    worker = await client.get("pods", "worker", ns)
    worker["status"] = {**worker.get("status", {}), "phase": "Succeeded"}
    await client.update_status("pods", worker, ns)
    assert await until("the finished pod's usage given back",
                       lambda: _equals(client, ns, "q", {"pods": "1", "requests.cpu": "100m", "count/secrets": "1",
                                                         "secrets": "1"}))  # fmt: skip
    # A deleted secret frees its count.
    await client.delete("secrets", "s1", ns)
    assert await until("the secret's count given back",
                       lambda: _field_is(client, ns, "q", "count/secrets", "0"))  # fmt: skip


async def test_changing_hard_limits_and_scopes(client: Any, ns: str) -> None:
    await client.create("pods", pod("besteffort"), ns)
    await client.create("pods", pod("burstable", "200m"), ns)
    await client.create("resourcequotas", quota("be", {"pods": "5"}, scopes=["BestEffort"]), ns)
    assert await until("BestEffort pods counted", lambda: _equals(client, ns, "be", {"pods": "1"}))
    current = await client.get("resourcequotas", "be", ns)
    current["spec"]["hard"] = {"pods": "1", "count/configmaps": "2"}
    await client.update("resourcequotas", current, ns)
    assert await until(
        "the new hard limits", lambda: _hard_is(client, ns, "be", {"pods": "1", "count/configmaps": "2"})
    )
    # count/configmaps has no scope to match a BestEffort quota: nothing counts against it (upstream).
    assert await used(client, ns, "be") == {"pods": "1", "count/configmaps": "0"}
    try:
        await client.create("pods", pod("another"), ns)
        raise AssertionError("the second BestEffort pod was admitted")
    except errors.Forbidden as err:
        assert str(err) == ('pods "another" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, '
                            "limited: pods=1")  # fmt: skip


async def _equals(client: Any, ns: str, name: str, expected: dict[str, str]) -> bool:
    return await used(client, ns, name) == expected


async def _field_is(client: Any, ns: str, name: str, key: str, value: str) -> bool:
    return (await used(client, ns, name)).get(key) == value


async def _hard_is(client: Any, ns: str, name: str, expected: dict[str, str]) -> bool:
    return ((await client.get("resourcequotas", name, ns)).get("status") or {}).get("hard") == expected
