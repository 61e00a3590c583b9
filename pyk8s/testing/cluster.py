"""A real `pyk8s apiserver` in its own process, and the real `kubectl` pointed at it, for tests.

The server gets a temporary data directory (SQLite) or an etcd URL, a free port, and writes its
admin.kubeconfig there; `kubectl()` runs the 1.32 binary with HOME and KUBECONFIG in a temporary
directory, so a user's own configuration is never touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ..supervisor import component_command, component_env
from .etcd import free_port


def kubectl_binary() -> str:
    """The kubectl 1.32 binary: the dispatcher's `kubectl.1.32` when present (no /version round trip)."""
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl is not installed")
    direct = Path(os.path.realpath(found)).parent / "kubectl.1.32"
    return str(direct) if direct.exists() else found


# As upstream's integration tests start their API servers (test/integration/util InitTestAPIServer): bare Nodes
# with no node lifecycle controller must not keep TaintNodesByCondition's not-ready taint, or nothing schedules.
TEST_ADMISSION_ARGS = (
    "--disable-admission-plugins",
    "ServiceAccount,TaintNodesByCondition,StorageObjectInUseProtection",
)


class APIServerProcess:
    def __init__(
        self,
        *,
        etcd_url: str = "",
        extra_args: tuple[str, ...] = (),
        admission_args: tuple[str, ...] = TEST_ADMISSION_ARGS,
    ) -> None:
        """`admission_args` replace the test default (`()`: every upstream default plugin pyk8s has, as `pyk8s up`)."""
        self.etcd_url = etcd_url
        self.extra_args = (*admission_args, *extra_args)
        self.dir = Path(tempfile.mkdtemp(prefix="pyk8s-apiserver-"))
        self.data_dir = self.dir / "data"
        self.home = self.dir / "home"
        self.home.mkdir()
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    @property
    def token(self) -> str:
        return (self.data_dir / "pki" / "admin.token").read_text().strip()

    @property
    def ca_file(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    def start(self, timeout: float = 60.0) -> APIServerProcess:
        self.port = free_port()
        return self._start(timeout)

    def restart(self, timeout: float = 60.0) -> APIServerProcess:
        """Start again on the same port and data (after `stop()` or `kill()`): clients reconnect as they
        would to a restarted kube-apiserver."""
        self.stop()
        return self._start(timeout)

    def kill(self) -> None:
        """SIGKILL: a crash, with no clean shutdown."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.stop()

    def _start(self, timeout: float) -> APIServerProcess:
        # `python -P -m pyk8s` with our package's directory on PYTHONPATH: the server runs this very pyk8s
        # whatever the current directory holds (see pyk8s.supervisor).
        args = component_command("apiserver", "--data-dir", str(self.data_dir), "--secure-port", str(self.port))
        if self.etcd_url:
            args += ["--etcd-servers", self.etcd_url.removeprefix("etcd://")]
        args += list(self.extra_args)
        self._log = open(self.dir / "apiserver.log", "ab")
        self.proc = subprocess.Popen(
            args, stdout=self._log, stderr=self._log, start_new_session=True, env=component_env()
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"apiserver exited with {self.proc.returncode}: {self.log_tail()}")
            if self.kubeconfig.exists() and self._ready():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"apiserver not ready after {timeout}s: {self.log_tail()}")

    def _ready(self) -> bool:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        req = urllib.request.Request(f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def raw_request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        """One authenticated request, answered as sent: (status, headers, body bytes), error statuses included."""
        import urllib.error

        req = urllib.request.Request(
            f"{self.url}{path}", data=body, method=method,
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )  # fmt: skip
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, object]:
        """One authenticated request; returns (status, decoded JSON body or text)."""
        import json

        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, _, raw = self.raw_request(method, path, data, {"Content-Type": content_type, **(headers or {})})
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def create_namespace(self, name: str) -> None:
        status, body = self.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        if status != 201:
            raise AssertionError(f"creating namespace {name}: {status} {body}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return (self.dir / "apiserver.log").read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = False, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        env = {
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.environ.get("PATH", ""),
            "KUBECTL_COMMAND_HEADERS": "false",
        }
        res = subprocess.run(
            [kubectl_binary(), *args], input=input, capture_output=True, text=True, env=env, timeout=timeout
        )
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def apply(self, *objects: dict[str, Any]) -> None:
        """`kubectl apply` the objects (as one List), failing the test when kubectl does."""
        import json

        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
                     check=True)  # fmt: skip

    def apply_crds(self, manifest: str, *names: str, timeout: float = 20.0) -> None:
        """`kubectl apply` CustomResourceDefinitions, then wait until each of `names` is Established. A new CRD
        has `conditions: null` until the naming controller's first write, which `kubectl wait` cannot read
        (kubernetes#66439, on a real cluster too): it is asked again then."""
        self.kubectl("apply", "-f", "-", input=manifest, check=True)
        deadline = time.monotonic() + timeout
        for name in names:
            while True:
                res = self.kubectl("wait", "--for=condition=Established", f"crd/{name}", f"--timeout={timeout:.0f}s")
                if res.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"CRD {name} not Established: {res.stderr}")
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        if getattr(self, "_log", None):
            self._log.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> APIServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
