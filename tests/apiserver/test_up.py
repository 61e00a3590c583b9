"""`pyk8s up`, the README's command: starts, prints how to use it, stops cleanly on Ctrl-C, keeps state; its
components come up healthy whatever folder it is started from, and one that dies is restarted."""

from __future__ import annotations

import ipaddress
import json
import os
import queue
import re
import signal
import stat
import subprocess
import threading
import time

import pytest

from pyk8s.supervisor import component_command, component_env
from pyk8s.testing.cluster import kubectl_binary
from pyk8s.testing.components import get_unverified
from pyk8s.testing.etcd import free_port


class Up:
    """A `pyk8s up` process started as its console script would be: the cwd is not on its sys.path, the package
    is this checkout's (PYTHONPATH). Its stdout and stderr are read on threads, so neither pipe fills."""

    def __init__(self, data_dir, port, *, cwd=None, extra=()):
        args = component_command("up", "--data-dir", str(data_dir), "--secure-port", str(port), *extra)
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=component_env()
        )
        self.stdout: queue.Queue[str] = queue.Queue()
        self.err_lines: list[str] = []
        self._err_cond = threading.Condition()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.stdout.put(line.rstrip("\n"))

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._err_cond:
                self.err_lines.append(line.rstrip("\n"))
                self._err_cond.notify_all()

    @property
    def stderr(self) -> str:
        with self._err_cond:
            return "\n".join(self.err_lines)

    def stdout_line(self, timeout=90.0) -> str:
        try:
            return self.stdout.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"pyk8s up printed nothing on stdout in {timeout}s; stderr:\n{self.stderr}") from None

    def wait_stderr(self, pattern, timeout=60.0, start=0) -> re.Match:
        """The first stderr line from index `start` on that matches `pattern`."""
        deadline = time.monotonic() + timeout
        with self._err_cond:
            while True:
                for line in self.err_lines[start:]:
                    if m := re.search(pattern, line):
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no stderr line matching {pattern!r}; stderr:\n{self.stderr}")
                self._err_cond.wait(min(left, 0.5))

    def components(self) -> dict[str, tuple[int, str]]:
        """{name: (pid, health URL)} from the lines `up` prints once the cluster is up."""
        found = {}
        for name, pattern in (
            ("controller-manager", r"^controller manager \("),
            ("scheduler", r"^scheduler \("),
            ("nodes", r"^3 simulated node\(s\)"),
        ):
            m = self.wait_stderr(pattern + r".*: pid (\d+), (https://127\.0\.0\.1:\d+/healthz)$")
            found[name] = (int(m.group(1)), m.group(2))
        return found

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"pyk8s up did not stop on SIGINT; stderr:\n{self.stderr}") from None


def kubectl(home, kubeconfig, *args):
    env = {"HOME": str(home), "KUBECONFIG": kubeconfig, "PATH": os.environ["PATH"]}
    return subprocess.run([kubectl_binary(), *args], capture_output=True, text=True, env=env, timeout=60)


def test_up_serves_stops_on_ctrl_c_and_keeps_state(tmp_path):
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    port = free_port()
    up = Up(data, port)
    try:
        export, hint = up.stdout_line(), up.stdout_line()
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
        # And the scheduler and the simulated nodes: `kubectl run` ends in a Running pod on one of the three.
        nodes = kubectl(home, kubeconfig, "get", "nodes", "--no-headers")
        assert [line.split()[:2] for line in nodes.stdout.splitlines()] == [[f"node-{i}", "Ready"] for i in range(3)], (
            nodes.stdout + nodes.stderr
        )
        # Each node joined by TLS bootstrap: its certificate asked for with the bootstrap token, approved and
        # signed by the controller manager; it then works as system:node:<name> with no Forbidden anywhere.
        csrs = json.loads(kubectl(home, kubeconfig, "get", "csr", "-o", "json").stdout)["items"]
        kubelet = [c for c in csrs if c["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"]
        assert len(kubelet) == 3 and all(c["status"].get("certificate") for c in kubelet), csrs
        assert all(c["spec"]["username"].startswith("system:bootstrap:") for c in kubelet)
        for name in ("nodes", "controller-manager", "scheduler"):
            assert "forbidden" not in (data / "logs" / f"{name}.log").read_text().lower(), name
        out = kubectl(home, kubeconfig, "run", "up-pod", "--image=nginx")
        assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = kubectl(home, kubeconfig, "get", "pod", "up-pod", "-o", "jsonpath={.status.phase} {.spec.nodeName}")
            if got.stdout.startswith("Running "):
                break
            time.sleep(0.3)
        phase, node = got.stdout.split(" ")
        assert phase == "Running" and node in {"node-0", "node-1", "node-2"}, got.stdout + got.stderr
        # Its IP is from its node's podCIDR (the node IPAM controller's); a pod echoing succeeds and logs its line;
        # kubectl top reads the API server's metrics.k8s.io.
        ip = kubectl(home, kubeconfig, "get", "pod", "up-pod", "-o", "jsonpath={.status.podIP}").stdout
        cidr = kubectl(home, kubeconfig, "get", "node", node, "-o", "jsonpath={.spec.podCIDR}").stdout
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidr), (ip, cidr)
        out = kubectl(home, kubeconfig, "run", "hello", "--image=busybox", "--restart=Never", "--", "echo", "hi")
        assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = kubectl(home, kubeconfig, "get", "pod", "hello", "-o", "jsonpath={.status.phase}")
            if got.stdout == "Succeeded":
                break
            time.sleep(0.3)
        assert got.stdout == "Succeeded", got.stdout + got.stderr
        assert kubectl(home, kubeconfig, "logs", "hello").stdout == "hi\n"
        top = kubectl(home, kubeconfig, "top", "nodes", "--no-headers")
        assert sorted(line.split()[0] for line in top.stdout.splitlines()) == ["node-0", "node-1", "node-2"], (
            top.stdout + top.stderr
        )
    finally:
        code = up.stop()
    assert code == 0, up.stderr
    assert "stopped" in up.stderr
    # The next start finds the same cluster.
    up = Up(data, port)
    try:
        out = kubectl(home, up.stdout_line().split("=", 1)[1], "get", "cm", "kept", "-o", "jsonpath={.data.a}")
        assert out.returncode == 0 and out.stdout == "b"
    finally:
        up.stop()


def bogus_package(folder):
    """A `pyk8s/` package in the folder that breaks whoever imports it."""
    (folder / "pyk8s").mkdir()
    (folder / "pyk8s" / "__init__.py").write_text("raise ImportError('the wrong pyk8s was imported')\n")


def checkout_parent(folder):
    """The folder a checkout was cloned into: `pyk8s/` has no __init__.py (a namespace package to `python -m`)."""
    (folder / "pyk8s" / "pyk8s").mkdir(parents=True)
    (folder / "pyk8s" / "pyproject.toml").write_text("[project]\nname = 'pyk8s'\n")


@pytest.mark.parametrize("make_folder", [bogus_package, checkout_parent], ids=["bogus-package", "checkout-parent"])
def test_up_from_a_folder_holding_a_pyk8s_dir_has_healthy_components(tmp_path, make_folder):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    make_folder(cwd)
    up = Up(tmp_path / "data", 0, cwd=cwd)
    try:
        assert up.stdout_line().startswith("export KUBECONFIG=")
        for name, (_, url) in up.components().items():
            assert get_unverified(url) == (200, "ok"), name
            assert get_unverified(url.replace("/healthz", "/readyz")) == (200, "ok"), name
        assert "exited" not in up.stderr
        # The data directory `up` made is private (tests/apiserver/test_data_dir_modes.py has the details).
        for d in (tmp_path / "data", tmp_path / "data" / "logs"):
            assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    finally:
        assert up.stop() == 0, up.stderr


def test_a_killed_component_is_reported_restarted_and_healthy_again(tmp_path):
    up = Up(tmp_path / "data", 0, extra=("--v", "1"))  # -v 1: the components log what they do, so a tail exists
    try:
        assert up.stdout_line().startswith("export KUBECONFIG=")
        before = up.components()
        mark = len(up.err_lines)
        for pid, _ in before.values():
            os.kill(pid, signal.SIGKILL)
        for name, (old_pid, _) in before.items():
            up.wait_stderr(rf"^{name} exited \(killed by SIGKILL\) after [\d.]+s; its last log lines", start=mark)
            up.wait_stderr(rf"^restarting {name} in 1s$", start=mark)
            m = up.wait_stderr(rf"^{name} is healthy again: pid (\d+), (https://\S+/healthz)$", start=mark)
            assert int(m.group(1)) != old_pid
            assert get_unverified(m.group(2)) == (200, "ok")
        # The tail shown was the component's own output (at -v 1 it says where it serves health).
        assert re.search(r"^  scheduler \| .*serving health and metrics", up.stderr, re.M), up.stderr
        log = (tmp_path / "data" / "logs" / "scheduler.log").read_text()
        assert log.count("starting: ") == 2 and "serving health and metrics" in log
    finally:
        assert up.stop() == 0, up.stderr
