"""`pyk8s scheduler` as a component: two replicas with leader election never both schedule and the standby takes
over when the leader dies; `pyk8s scheduler evaluate` answers JSON offline; bad configuration is refused with
the field named."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess

from .test_integration import apply, get, node, pod, wait_for
from .wrappers import make_node, make_pod


def attempts(sched: ComponentProcess) -> int:
    status, text = sched.get("/metrics")
    assert status == 200
    found = re.findall(r'^scheduler_schedule_attempts_total\{[^}]*result="scheduled"[^}]*\} (\S+)$', text, re.M)
    return int(sum(float(v) for v in found))


def test_two_replicas_with_leader_election_never_both_schedule():
    server = APIServerProcess().start()
    replicas: list[ComponentProcess] = []
    try:
        for _ in range(2):
            replicas.append(
                ComponentProcess("scheduler", server.kubeconfig, "--leader-elect", log_dir=server.dir).start()
            )
        lease = wait_for("a leader", lambda: (get(server, "lease", "kube-scheduler", "-n", "kube-system")
                                              if server.kubectl("get", "lease", "kube-scheduler", "-n", "kube-system").returncode == 0
                                              else None))  # fmt: skip
        holder = lease["spec"]["holderIdentity"]
        server.create_namespace("le")
        apply(server, node("le-node"))
        apply(server, *[pod(f"a{i}") for i in range(5)], ns="le")
        try:
            wait_for("5 pods bound", lambda: all(
                p["spec"].get("nodeName") for p in get(server, "pods", "-n", "le")["items"]
            ))  # fmt: skip
        except AssertionError as e:
            raise AssertionError(f"{e}\n" + "\n".join(r.log_tail() for r in replicas)) from None
        counts = [attempts(r) for r in replicas]
        assert sorted(counts) == [0, 5], counts  # exactly one replica scheduled, all five pods
        leader = replicas[counts.index(5)]
        standby = replicas[counts.index(0)]
        leader.kill()  # no release: the standby must wait out the lease (15 s) and take over
        apply(server, *[pod(f"b{i}") for i in range(3)], ns="le")
        wait_for("3 more pods bound by the standby", lambda: all(
            p["spec"].get("nodeName") for p in get(server, "pods", "-n", "le")["items"]
        ), timeout=60)  # fmt: skip
        assert attempts(standby) == 3
        new_holder = get(server, "lease", "kube-scheduler", "-n", "kube-system")["spec"]["holderIdentity"]
        assert new_holder != holder
    finally:
        for r in replicas:
            r.stop()
        server.cleanup()


def run_cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyk8s", "scheduler", *args], input=input, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_evaluate_answers_every_plugin_offline(tmp_path):
    scenario = {
        "pod": make_pod("web", cpu="2", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        "nodes": [
            make_node("small", cpu="1"),
            make_node("big", cpu="8"),
            make_node("tainted", cpu="8", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
            make_node("cordoned", cpu="8", unschedulable=True),
        ],
        "existingPods": [make_pod("busy", cpu="6", node_name="big")],
    }
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    r = run_cli("evaluate", str(path))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    fit = out["filter"]["NodeResourcesFit"]
    assert fit["small"] == {"code": "Unschedulable", "reasons": ["Insufficient cpu"]}
    assert fit["big"]["code"] == "Success"
    assert out["filter"]["NodeUnschedulable"]["cordoned"] == {
        "code": "UnschedulableAndUnresolvable", "reasons": ["node(s) were unschedulable"]}  # fmt: skip
    assert out["filter"]["TaintToleration"]["tainted"]["code"] == "Success"  # tolerated
    # Every Filter plugin reports on every node, not stopping at the first failure.
    assert all(set(v) == {"small", "big", "tainted", "cordoned"} for v in out["filter"].values())
    # LeastAllocated prefers the emptier node; the cordoned one is scored too but never selected.
    assert out["score"]["NodeResourcesFit"]["tainted"] > out["score"]["NodeResourcesFit"]["big"]
    assert out["selectedNode"] == "tainted"
    # Only the named plugins, from stdin.
    scenario["plugins"] = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]
    r = run_cli("evaluate", "-", input=json.dumps(scenario))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out["filter"]) == ["NodeResourcesFit"]
    assert out["score"]["NodeResourcesFit"]["big"] > out["score"]["NodeResourcesFit"]["tainted"]  # MostAllocated


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 0\n",
         "parallelism"),
        ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
         "- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: NoSuchPlugin\n",
         "NoSuchPlugin"),
        ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogusField: 1\n",
         "bogusField"),
    ],
)  # fmt: skip
def test_bad_configuration_is_refused_naming_the_field(tmp_path, config, message):
    path = tmp_path / "config.yaml"
    path.write_text(config)
    r = run_cli("evaluate", "--config", str(path), "-", input=json.dumps({"pod": make_pod("p"), "nodes": []}))
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


def test_evaluate_refuses_a_bad_scenario():
    r = run_cli("evaluate", "-", input=json.dumps({"pod": make_pod("p")}))
    assert r.returncode != 0 and "nodes: Required value" in r.stderr
    r = run_cli("evaluate", "-", input="{not json")
    assert r.returncode != 0 and "not JSON" in r.stderr
