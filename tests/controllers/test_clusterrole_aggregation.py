"""The ClusterRole aggregation controller against a real API server: the default `admin`, `edit` and `view`
fill with their aggregated rules, a new ClusterRole labelled `aggregate-to-admin` adds its rules to `admin`
(written by server-side apply as `clusterrole-aggregation-controller`), and they leave again with the label."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from pyk8s.client.cache import SharedInformerFactory
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.clusterroleaggregation import FIELD_MANAGER, ClusterRoleAggregationController
from pyk8s.controllers.clusterroleaggregation.clusterroleaggregation_controller import aggregated_rules
from pyk8s.testing.cluster import APIServerProcess

WIDGETS = {"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]}


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


@pytest.fixture
async def client(server: APIServerProcess) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)) as c:
        yield c


@pytest.fixture
async def controller(client: RESTClient) -> AsyncIterator[ClusterRoleAggregationController]:
    factory = SharedInformerFactory(client)
    ctrl = ClusterRoleAggregationController(client, factory)
    factory.start()
    task = asyncio.create_task(ctrl.run())
    yield ctrl
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await factory.shutdown()


async def until(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := await check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return got


async def test_admin_gains_and_loses_a_labelled_roles_rules(
    client: RESTClient, controller: ClusterRoleAggregationController
) -> None:
    async def admin_rules() -> list[dict[str, Any]]:
        return list((await client.get("clusterroles", "admin")).get("rules") or [])

    # the defaults aggregate: view's reads reach admin through edit
    await until("admin to hold view's rules", lambda: _has(admin_rules, "pods/log"))

    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-admin", "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
        "rules": [WIDGETS],
    }  # fmt: skip
    await client.create("clusterroles", role)

    async def admin_has_widgets() -> bool:
        return WIDGETS in await admin_rules()

    await until("admin to hold the widget rules", admin_has_widgets)
    admin = await client.get("clusterroles", "admin")
    managers = {(m["manager"], m["operation"]) for m in admin["metadata"].get("managedFields", [])}
    assert (FIELD_MANAGER, "Apply") in managers
    edit = await client.get("clusterroles", "edit")
    assert WIDGETS not in (edit.get("rules") or [])

    await client.patch("clusterroles", "widget-admin", {"metadata": {"labels": None}}, patch_type="merge")

    async def admin_lost_widgets() -> bool:
        return WIDGETS not in await admin_rules()

    await until("admin to drop the widget rules", admin_lost_widgets)
    assert await _has(admin_rules, "pods/log")


async def _has(rules: Callable[[], Any], resource: str) -> bool:
    return any(resource in r.get("resources", ()) for r in await rules())


def test_aggregated_rules_are_ordered_by_role_name_and_unique() -> None:
    def role(name: str, labels: dict[str, str], *rules: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": labels}, "rules": list(rules)}

    a = {"verbs": ["get"], "apiGroups": [""], "resources": ["a"]}
    b = {"verbs": ["get"], "apiGroups": [""], "resources": ["b"], "resourceNames": []}
    b_again = {"verbs": ["get"], "apiGroups": [""], "resources": ["b"]}
    agg = {
        "metadata": {"name": "agg", "labels": {"x": "1"}},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "1"}}, {"matchLabels": {"y": "1"}}]},
    }
    roles = [role("zz", {"x": "1"}, a), role("aa", {"x": "1"}, b), role("mm", {"y": "1"}, b_again, a), agg]
    # selector by selector, names sorted, the aggregate itself skipped, repeats (semantically equal) dropped
    assert aggregated_rules(agg, roles) == [b, a]
