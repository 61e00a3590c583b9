"""PodTopologySpread construction (args defaults and upstream's validation messages), the default selector
deduced from Services and controllers (upstream: helper.DefaultSelector), and the queueing hints
(upstream: plugin_test.go)."""

from __future__ import annotations

import copy

import pytest

from pyk8s.api.selectors import parse_label_selector
from pyk8s.scheduler.framework.handle import FrameworkHandle, StaticLister
from pyk8s.scheduler.framework.interface import NODE, POD, ActionType, QueueingHint
from pyk8s.scheduler.plugins.podtopologyspread import PodTopologySpread
from pyk8s.scheduler.plugins.podtopologyspread.common import default_selector
from tests.scheduler.test_podtopologyspread_support import (
    FOO,
    HOSTNAME,
    UNSCHEDULABLE_TAINT,
    ZONE,
    hard,
    make_plugin,
    node,
    pod,
    soft,
)

Q, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def dc(key: str = "zone", when: str = "DoNotSchedule", skew: int = 1, **extra: object) -> dict:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (None, None),
        ({}, None),
        ({"defaultingType": "System"}, None),
        ({"defaultingType": "List", "defaultConstraints": [dc(), dc("node", "ScheduleAnyway")]}, None),
        ({"defaultingType": "List", "defaultConstraints": [dc(skew=-1)]},
         "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)"),
        ({"defaultingType": "List", "defaultConstraints": [dc(key="")]},
         "defaultConstraints[0].topologyKey: Required value: can not be empty"),
        ({"defaultingType": "List", "defaultConstraints": [dc(when="")]},
         "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"),
        ({"defaultingType": "List", "defaultConstraints": [dc(when="Sometimes")]},
         'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: '
         '"DoNotSchedule", "ScheduleAnyway"'),
        ({"defaultingType": "List", "defaultConstraints": [dc("node"), dc("node")]},
         'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'),
        ({"defaultingType": "List", "defaultConstraints": [dc(labelSelector={})]},
         "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced "
         "for each pod"),
        ({"defaultConstraints": [dc()]},
         'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
        ({"defaultingType": "Unknown"}, 'defaultingType: Unsupported value: "Unknown": supported values: "System", "List"'),
        ({"defaultingType": "List", "defaultConstraints": [dc(skew=0, key="")]},
         "[defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf), "
         "defaultConstraints[0].topologyKey: Required value: can not be empty]"),
        ({"defaultingType": "List", "defaultConstraints": [dc(key="-bad")]},
         'defaultConstraints[0].topologyKey: Invalid value: "-bad": name part must consist of alphanumeric '
         "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ],
)  # fmt: skip
def test_args_validation(args: dict | None, error: str | None) -> None:
    handle = FrameworkHandle()
    if error is None:
        pl = PodTopologySpread.new(args, handle)
        assert pl.system_defaulted == ((args or {}).get("defaultingType", "System") == "System")
    else:
        with pytest.raises(ValueError) as exc:
            PodTopologySpread.new(args, handle)
        assert str(exc.value) == error


def test_system_defaults() -> None:
    pl = PodTopologySpread.new(None, FrameworkHandle())
    svc = {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    pl.handle.objects.add("services", svc)
    soft_cs = pl.get_soft_constraints(pod("p", labels={"app": "web"}))
    assert [(c.topology_key, c.max_skew, str(c.selector)) for c in soft_cs] == [
        (HOSTNAME, 3, "app=web"),
        (ZONE, 5, "app=web"),
    ]
    assert pl.get_constraints(pod("p", labels={"app": "web"})) == []  # the system defaults are all soft


def _owner(kind: str, name: str, api_version: str, controller: bool = True) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": name, "controller": controller}


OBJECTS = {
    "services": [
        {"metadata": {"name": "s1", "namespace": "default"}, "spec": {"selector": {"app": "web"}}},
        {"metadata": {"name": "s2", "namespace": "default"}, "spec": {"selector": {"tier": "front"}}},
        {"metadata": {"name": "s3", "namespace": "default"}, "spec": {}},  # no selector: matches nothing
        {"metadata": {"name": "s4", "namespace": "other"}, "spec": {"selector": {"app": "web"}}},
        {"metadata": {"name": "s5", "namespace": "default"}, "spec": {"selector": {"app": "db"}}},
    ],
    "replicationcontrollers": [{"metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"rc": "x"}}}],
    "replicasets": [
        {"metadata": {"name": "rs", "namespace": "default"},
         "spec": {"selector": {"matchExpressions": [{"key": "hash", "operator": "In", "values": ["h1"]}]}}},
    ],
    "statefulsets": [{"metadata": {"name": "ss", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"ss": "y"}}}}],
}  # fmt: skip


@pytest.mark.parametrize(
    ("labels", "owner", "want"),
    [
        ({"app": "web", "tier": "front"}, None, "app=web,tier=front"),
        ({"app": "web"}, _owner("ReplicaSet", "rs", "apps/v1"), "app=web,hash in (h1)"),
        ({"app": "web"}, _owner("StatefulSet", "ss", "apps/v1"), "app=web,ss=y"),
        ({"app": "web"}, _owner("ReplicationController", "rc", "v1"), "app=web,rc=x"),
        ({"app": "web"}, _owner("ReplicaSet", "rs", "apps/v1", controller=False), "app=web"),
        ({"app": "web"}, _owner("ReplicaSet", "rs", "extensions/v1beta1"), "app=web"),
        ({"app": "web"}, _owner("ReplicaSet", "missing", "apps/v1"), "app=web"),
        ({"other": "x"}, None, ""),
    ],
)
def test_default_selector(labels: dict, owner: dict | None, want: str) -> None:
    handle = FrameworkHandle(objects=StaticLister(OBJECTS))
    sel = default_selector(pod("p", labels=labels, owner=owner), handle)
    assert str(sel) == want
    assert sel == parse_label_selector(want)


# -- events and queueing hints ----------------------------------------------------------------------------------


def test_events_to_register() -> None:
    pl = make_plugin([])
    events = [(e.event.resource, e.event.action) for e in pl.events_to_register()]
    pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE | ActionType.UPDATE_POD_TOLERATIONS
    node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    assert events == [(POD, pod_actions), (NODE, node_actions)]
    pl = make_plugin([], feature_gates={"SchedulerQueueingHints": False})
    assert pl.events_to_register()[0].event.action == ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE


TARGET = pod("p", labels={"foo": ""}, spread=[hard(1, "zone", FOO), hard(1, "node", FOO)])
TARGET_HONOR = pod("p", labels={"foo": ""}, spread=[hard(1, "zone", FOO, taints_policy="Honor")])


def _with(obj: dict, path: tuple[str, ...], value: object) -> dict:
    out = copy.deepcopy(obj)
    d = out
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value
    return out


ASSIGNED_FOO = pod("q", "node-a", {"foo": ""})
ASSIGNED_BAR = pod("r", "node-a", {"bar": ""})


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    [
        ("add an assigned pod matching a selector", TARGET, None, ASSIGNED_FOO, Q),
        ("add an assigned pod matching no selector", TARGET, None, ASSIGNED_BAR, SKIP),
        ("add an unscheduled pod", TARGET, None, pod("q", None, {"foo": ""}), SKIP),
        ("add an assigned pod in another namespace", TARGET, None, pod("q", "node-a", {"foo": ""}, ns="other"), SKIP),
        ("delete an assigned pod matching a selector", TARGET, ASSIGNED_FOO, None, Q),
        ("delete an assigned pod matching no selector", TARGET, ASSIGNED_BAR, None, SKIP),
        ("update an assigned pod's labels into a match", TARGET, ASSIGNED_BAR,
         _with(ASSIGNED_BAR, ("metadata", "labels"), {"foo": ""}), Q),
        ("update an assigned pod's labels, match unchanged", TARGET, ASSIGNED_FOO,
         _with(ASSIGNED_FOO, ("metadata", "labels"), {"foo": "", "x": "y"}), SKIP),
        ("update an assigned pod without label change", TARGET, ASSIGNED_FOO,
         _with(ASSIGNED_FOO, ("spec", "priority"), 5), SKIP),
        ("the pod gets a toleration, Honor", TARGET_HONOR, TARGET_HONOR,
         _with(TARGET_HONOR, ("spec", "tolerations"), [{"operator": "Exists"}]), Q),
        ("the pod gets a toleration, Ignore", TARGET, TARGET,
         _with(TARGET, ("spec", "tolerations"), [{"operator": "Exists"}]), SKIP),
    ],
)  # fmt: skip
def test_pod_change_hint(name: str, target: dict, old: dict | None, new: dict | None, want: QueueingHint) -> None:
    pl = make_plugin([])
    assert pl.is_schedulable_after_pod_change(target, old, new) == want


ZN = node("n", {"zone": "z1", "node": "n"})


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("add a node with all topology keys", None, ZN, Q),
        ("add a node missing a topology key", None, node("n", {"zone": "z1"}), SKIP),
        ("delete a node with all topology keys", ZN, None, Q),
        ("delete a node missing a topology key", node("n", {"zone": "z1"}), None, SKIP),
        ("a node gains a missing topology key", node("n", {"zone": "z1"}), ZN, Q),
        ("a node loses a topology key", ZN, node("n", {"zone": "z1"}), Q),
        ("a node changes a topology value", ZN, node("n", {"zone": "z2", "node": "n"}), Q),
        ("a node changes an unrelated label", ZN, node("n", {"zone": "z1", "node": "n", "x": "y"}), SKIP),
        ("a matching node changes taints", ZN, node("n", {"zone": "z1", "node": "n"}, taints=UNSCHEDULABLE_TAINT), Q),
        ("a non-matching node changes taints", node("n", {"zone": "z1"}),
         node("n", {"zone": "z1"}, taints=UNSCHEDULABLE_TAINT), SKIP),
    ],
)  # fmt: skip
def test_node_change_hint(name: str, old: dict | None, new: dict | None, want: QueueingHint) -> None:
    pl = make_plugin([])
    assert pl.is_schedulable_after_node_change(TARGET, old, new) == want


def test_hints_for_a_pod_with_only_soft_constraints() -> None:
    # Only hard constraints matter to the hints; with none, any node update queues only on taint changes.
    pl = make_plugin([])
    target = pod("p", labels={"foo": ""}, spread=[soft(1, "zone", FOO)])
    assert pl.is_schedulable_after_node_change(target, None, ZN) == Q
    assert pl.is_schedulable_after_node_change(target, ZN, node("n", {"zone": "z9"})) == SKIP
    assert pl.is_schedulable_after_pod_change(target, None, ASSIGNED_FOO) == SKIP
