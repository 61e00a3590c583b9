"""A real etcd (Debian's etcd-server) on free loopback ports in a temporary directory, for tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EtcdServer:
    """Start with `start()`, stop with `stop()` (by PID); `url` is the storage URL for pyk8s."""

    def __init__(self, *, progress_notify_interval: str = "1s", binary: str | None = None) -> None:
        self.binary = binary or shutil.which("etcd") or "/usr/bin/etcd"
        self.progress_notify_interval = progress_notify_interval
        self.dir: Path | None = None
        self.client_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def url(self) -> str:
        return f"etcd://{self.endpoint}"

    def start(self, timeout: float = 30.0) -> EtcdServer:
        if not os.path.exists(self.binary):
            raise RuntimeError("etcd is not installed: install Debian's etcd-server (apt-get install -y etcd-server)")
        self.dir = Path(tempfile.mkdtemp(prefix="pyk8s-etcd-"))
        self.client_port, peer_port = free_port(), free_port()
        client, peer = f"http://127.0.0.1:{self.client_port}", f"http://127.0.0.1:{peer_port}"
        args = [
            self.binary,
            "--name", "pyk8s-test",
            "--data-dir", str(self.dir / "data"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"pyk8s-test={peer}",
            "--experimental-watch-progress-notify-interval", self.progress_notify_interval,
            "--log-outputs", "stderr",
            "--logger", "zap",
            "--log-level", "error",
            "--quota-backend-bytes", str(4 * 1024**3),
        ]  # fmt: skip
        with open(self.dir / "etcd.log", "wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.client_port), timeout=0.2):
                    pass
                if self._healthy():
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"etcd did not become ready in {timeout}s: {self.log_tail()}")

    def _healthy(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=1) as r:
                return b'"health":"true"' in r.read()
        except OSError:
            return False

    def log_tail(self, n: int = 2000) -> str:
        if self.dir is None:
            return ""
        try:
            return (self.dir / "etcd.log").read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
