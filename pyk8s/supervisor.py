"""How `pyk8s up` runs its components (controller manager, scheduler) as child processes and keeps them running,
as a process supervisor does (systemd's `Restart=on-failure`, the kubelet's CrashLoopBackOff).

- A child is `python -P -m pyk8s <component> ...` (`component_command`) with PYTHONPATH naming the directory
  that holds the running `pyk8s` package when that is not already a site directory (`component_env`): `-m`
  alone puts the current directory first on sys.path, so a `pyk8s/` folder there (a checkout's parent, any
  folder of that name) would shadow the package; `-P` keeps it out, and PYTHONPATH makes the child import the
  very code its parent runs (a worktree's, in tests).
- Its stdout and stderr are read by the parent: every line is appended to `<log_dir>/<name>.log` (the previous
  run of `up` is kept as `<name>.log.1`), handed to `echo` (`up` shows them, prefixed with the component's
  name, at -v 1 or more), and the last lines are kept for when it exits.
- It writes its secure port to a port file (`--port-file`, so port 0 works); it counts as healthy once
  `/readyz` answers 200 there.
- When it exits, its last log lines are shown and it is started again after a back-off: 1 s, doubling up to
  30 s, back to 1 s once a run has stayed healthy for a minute. A component that cannot start at all keeps
  being retried (with its log shown each time) rather than taking the API server down with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import site
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import aiohttp

import pyk8s

from .client.workqueue import ItemExponentialFailureRateLimiter
from .file_modes import ensure_private_dir

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 30.0
RESET_AFTER = 60.0  # seconds of healthy running after which the next failure starts the back-off over
TAIL_LINES = 20
STOP_GRACE = 15.0  # seconds between SIGTERM and SIGKILL

Report = Callable[[str], None]


def package_root() -> Path:
    """The directory holding the running `pyk8s` package."""
    return Path(pyk8s.__file__).resolve().parent.parent


def component_command(*args: str) -> list[str]:
    """`python -P -m pyk8s ARGS`: see the module docstring."""
    return [sys.executable, "-P", "-m", "pyk8s", *args]


def component_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child started with `component_command`: `base` (default: ours) with the running
    package's directory first on PYTHONPATH, unless a site directory already holds it (a plain install),
    where adding it would put all of site-packages before the standard library."""
    env = dict(os.environ if base is None else base)
    root = str(package_root())
    site_dirs = {str(Path(d).resolve()) for d in [*site.getsitepackages(), site.getusersitepackages()]}
    if root in site_dirs:
        return env
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *rest])
    return env


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class SupervisedComponent:
    """One component under supervision: `start()` runs it, and runs it again whenever it exits, until
    `stop()`.

    `args` are the component's own (`["scheduler", "--kubeconfig", ...]`); `--port-file` is added. `report`
    receives the supervisor's messages (exits, restarts, recoveries), `echo` each line of the component's
    output.
    """

    def __init__(
        self,
        name: str,
        args: list[str],
        *,
        log_dir: Path,
        run_dir: Path,
        report: Report,
        echo: Callable[[str, str], None],
    ) -> None:
        self.name = name
        self.args = args
        self.log_path = log_dir / f"{name}.log"
        self.port_file = run_dir / f"{name}.port"
        self.report = report
        self.echo = echo
        self.proc: asyncio.subprocess.Process | None = None
        self.port: int | None = None
        self.healthy = asyncio.Event()
        self.restarts = 0
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.status = "starting"
        self._backoff = ItemExponentialFailureRateLimiter(INITIAL_BACKOFF, MAX_BACKOFF)
        self._healthy_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def health_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/healthz"

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name=f"supervise {self.name}")
        self._task.add_done_callback(self._supervision_ended)

    def _supervision_ended(self, task: asyncio.Task[None]) -> None:
        # Only stop() should end supervision; anything else is a bug here, and must not pass in silence.
        if not task.cancelled() and task.exception() is not None:
            self.status = "not supervised"
            self.report(f"supervising {self.name} failed: {task.exception()!r}")

    async def stop(self) -> None:
        """Stop restarting, and end the running process: SIGTERM, then SIGKILL after a grace period."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _supervise(self) -> None:
        # Inside the (private) data directory, and private themselves: logs may quote the cluster's objects.
        ensure_private_dir(self.log_path.parent)
        ensure_private_dir(self.port_file.parent)
        if self.log_path.exists():
            os.replace(self.log_path, self.log_path.with_name(self.log_path.name + ".1"))
        async with aiohttp.ClientSession() as http:
            while True:
                started = time.monotonic()
                returncode = await self._run_once(http)
                now = time.monotonic()
                if self._healthy_at is not None and now - self._healthy_at >= RESET_AFTER:
                    self._backoff.forget(self.name)
                delay = self._backoff.when(self.name)
                how = describe_exit(returncode)
                lines = "\n".join(f"  {self.name} | {line}" for line in self.tail) or f"  ({self.name} wrote nothing)"
                self.report(
                    f"{self.name} exited ({how}) after {now - started:.1f}s; its last log lines ({self.log_path}):\n"
                    f"{lines}\nrestarting {self.name} in {delay:g}s"
                )
                self.status = f"exited ({how}), restarting in {delay:g}s"
                await asyncio.sleep(delay)
                self.restarts += 1

    async def _run_once(self, http: aiohttp.ClientSession) -> int:
        """One run of the process, to its exit; its return code."""
        self.port_file.unlink(missing_ok=True)
        self.port = None
        self._healthy_at = None
        self.healthy.clear()
        self.tail.clear()
        self.status = "starting"
        cmd = component_command(*self.args, "--port-file", str(self.port_file))
        with self.log_path.open("ab") as log:
            log.write(f"---- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(cmd)}\n".encode())
            log.flush()
            proc = self.proc = await asyncio.create_subprocess_exec(
                *cmd, env=component_env(), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            reader = asyncio.create_task(self._pump(proc, log))
            prober = asyncio.create_task(self._probe(http))
            try:
                returncode = await proc.wait()
                # The rest of its output, up to EOF (bounded: a grandchild could hold the pipe open).
                await asyncio.wait([reader], timeout=5)
            except asyncio.CancelledError:
                await _terminate(proc)
                raise
            finally:
                for task in (prober, reader):
                    task.cancel()
                await asyncio.gather(prober, reader, return_exceptions=True)
                self.healthy.clear()
        return returncode

    async def _pump(self, proc: asyncio.subprocess.Process, log: BinaryIO) -> None:
        """Copy the child's output to the log file, the tail and the console, line by line."""
        assert proc.stdout is not None
        partial = b""
        while chunk := await proc.stdout.read(65536):
            log.write(chunk)
            log.flush()
            *lines, partial = (partial + chunk).split(b"\n")
            for raw in lines:
                self._line(raw)
        if partial:
            log.write(b"\n")
            self._line(partial)

    def _line(self, raw: bytes) -> None:
        line = raw.decode(errors="replace").rstrip()
        self.tail.append(line)
        self.echo(self.name, line)

    async def _probe(self, http: aiohttp.ClientSession) -> None:
        """Wait for the port file, then for `/readyz` to answer 200 (the process's exit cancels this)."""
        while self.port is None:
            try:
                self.port = int(self.port_file.read_text().strip())
            except (OSError, ValueError):
                await asyncio.sleep(0.1)
        url = f"https://127.0.0.1:{self.port}/readyz"
        while True:
            try:
                # The component's certificate is self-signed (made at its start): there is nothing to verify.
                async with http.get(url, ssl=False, timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        break
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.2)
        self._healthy_at = time.monotonic()
        self.status = "healthy"
        self.healthy.set()
        if self.restarts:
            self.report(f"{self.name} is healthy again: pid {self.pid}, {self.health_url}")


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), STOP_GRACE)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
