"""A pyk8s component (`pyk8s scheduler`, `pyk8s controller-manager`) in its own process against a test API
server: started with a kubeconfig and extra flags, killable, with its log kept for failure messages."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..supervisor import component_command, component_env
from .etcd import free_port


def get_unverified(url: str) -> tuple[int, str]:
    """(status, body) of a GET on a component's secure port: its certificate is self-signed, so unverified."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class ComponentProcess:
    def __init__(self, name: str, kubeconfig: Path, *args: str, log_dir: Path, secure_port: bool = True) -> None:
        self.name = name
        self.kubeconfig = kubeconfig
        self.args = list(args)
        self.port = free_port() if secure_port else -1
        self.log_path = log_dir / f"{name}-{self.port if secure_port else os.getpid()}-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait_healthy: float = 30.0) -> ComponentProcess:
        # The same pyk8s as ours, whatever the current directory holds (see pyk8s.supervisor).
        cmd = component_command(self.name, "--kubeconfig", str(self.kubeconfig), *self.args)
        if self.port > 0:
            cmd += ["--secure-port", str(self.port)]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True, env=component_env())
        if self.port > 0 and wait_healthy:
            deadline = time.monotonic() + wait_healthy
            while self.get("/healthz")[0] != 200:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} did not come up: {self.log_tail()}")
                time.sleep(0.1)
        return self

    def get(self, path: str) -> tuple[int, str]:
        """GET on the component's secure port; (0, "") when nothing answers."""
        try:
            return get_unverified(f"https://127.0.0.1:{self.port}{path}")
        except OSError:
            return 0, ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
