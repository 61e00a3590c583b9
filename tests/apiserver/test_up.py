"""`pyk8s up`, the README's command: starts, prints how to use it, stops cleanly on Ctrl-C, keeps state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pyk8s.testing.cluster import kubectl_binary
from pyk8s.testing.etcd import free_port


def start_up(data_dir, port):
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyk8s", "up", "--data-dir", str(data_dir), "--secure-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    export = proc.stdout.readline().strip()
    hint = proc.stdout.readline().strip()
    return proc, export, hint


def kubectl(home, kubeconfig, *args):
    env = {"HOME": str(home), "KUBECONFIG": kubeconfig, "PATH": os.environ["PATH"]}
    return subprocess.run([kubectl_binary(), *args], capture_output=True, text=True, env=env, timeout=60)


def test_up_serves_stops_on_ctrl_c_and_keeps_state(tmp_path):
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    port = free_port()
    proc, export, hint = start_up(data, port)
    try:
        assert export == f"export KUBECONFIG={data / 'admin.kubeconfig'}"
        assert hint == "kubectl get namespaces"
        kubeconfig = export.split("=", 1)[1]
        out = kubectl(home, kubeconfig, "get", "namespaces")
        assert out.returncode == 0 and "kube-system" in out.stdout
        cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, namespace: default}\ndata: {a: b}\n"
        env = {"HOME": str(home), "KUBECONFIG": kubeconfig, "PATH": os.environ["PATH"]}
        subprocess.run(
            [kubectl_binary(), "apply", "-f", "-"], input=cm, text=True, env=env, check=True, capture_output=True
        )
        # The controller manager came up too: deleting a namespace completes (its content removed, then it).
        doomed = "apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed}\n---\n" + cm.replace("default", "doomed")
        subprocess.run(
            [kubectl_binary(), "apply", "-f", "-"], input=doomed, text=True, env=env, check=True, capture_output=True
        )
        out = kubectl(home, kubeconfig, "delete", "namespace", "doomed", "--timeout=50s")
        assert out.returncode == 0, out.stderr
        assert kubectl(home, kubeconfig, "get", "namespace", "doomed").returncode == 1
        # And the scheduler: a pod is bound to the only node.
        node = (
            "apiVersion: v1\nkind: Node\nmetadata: {name: up-node}\n"
            "status: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}, capacity: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: up-pod, namespace: default}\n"
            "spec: {containers: [{name: c, image: pause}]}\n"
        )
        subprocess.run(
            [kubectl_binary(), "apply", "-f", "-"], input=node, text=True, env=env, check=True, capture_output=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = kubectl(home, kubeconfig, "get", "pod", "up-pod", "-o", "jsonpath={.spec.nodeName}")
            if got.stdout == "up-node":
                break
            time.sleep(0.3)
        assert got.stdout == "up-node", got.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in err
    # The next start finds the same cluster.
    proc, export, _ = start_up(data, port)
    try:
        out = kubectl(home, export.split("=", 1)[1], "get", "cm", "kept", "-o", "jsonpath={.data.a}")
        assert out.returncode == 0 and out.stdout == "b"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    time.sleep(0)
