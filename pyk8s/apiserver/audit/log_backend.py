"""The audit log backend (`--audit-log-path` and its rotation flags): one audit.k8s.io/v1 Event per line, as
JSON or upstream's legacy one-line text (upstream: apiserver/plugin/pkg/audit/log, rotated as the lumberjack
logger kube-apiserver uses: past `maxsize` MB the file is renamed `<name>-<UTC time>.<ext>`, optionally
gzipped, and backups beyond `maxbackup` files or `maxage` days are removed).

Writes are blocking, as upstream's default `--audit-log-mode=blocking`: an event is on disk (in the OS's
buffers) before the request goes on. `batch` buffers events and writes them from a background task.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

MEGABYTE = 1024 * 1024
DEFAULT_MAX_SIZE_MB = 100  # lumberjack's default when --audit-log-maxsize is 0
_BACKUP_TIME = "%Y-%m-%dT%H-%M-%S"
MODES = ("blocking", "blocking-strict", "batch")
FORMATS = ("json", "legacy")


@dataclass(frozen=True)
class LogOptions:
    path: str = ""  # "": no log backend; "-": standard output
    max_age_days: int = 0
    max_backups: int = 0
    max_size_mb: int = 0
    compress: bool = False
    format: str = "json"
    mode: str = "blocking"
    version: str = "audit.k8s.io/v1"

    def validate(self) -> list[str]:
        """Upstream's AuditLogOptions.Validate messages."""
        errs: list[str] = []
        if not self.path:
            return errs
        if self.max_age_days < 0:
            errs.append(f"--audit-log-maxage {self.max_age_days} can't be a negative number")
        if self.max_backups < 0:
            errs.append(f"--audit-log-maxbackup {self.max_backups} can't be a negative number")
        if self.max_size_mb < 0:
            errs.append(f"--audit-log-maxsize {self.max_size_mb} can't be a negative number")
        if self.format not in FORMATS:
            errs.append(f"invalid audit log format {self.format}, allowed formats are {','.join(FORMATS)}")
        if self.mode not in MODES:
            errs.append(f"invalid audit log mode {self.mode}, allowed modes are {','.join(MODES)}")
        if self.version != "audit.k8s.io/v1":
            errs.append(f"invalid audit log version {self.version}, allowed versions are audit.k8s.io/v1")
        return errs


def _quoted(values: list[str]) -> str:
    return ",".join(orjson.dumps(v).decode() for v in values)


def event_string(ev: dict[str, Any]) -> str:
    """An event as upstream's legacy one-line format (audit.EventString)."""
    user = ev.get("user") or {}
    username, groups = "<none>", "<none>"
    if user.get("username"):
        username = user["username"]
        if user.get("groups"):
            groups = _quoted(user["groups"])
    as_user, as_groups = "<self>", "<lookup>"
    imp = ev.get("impersonatedUser")
    if imp is not None:
        as_user = imp.get("username", "")
        if imp.get("groups") is not None:
            as_groups = _quoted(imp["groups"])
    ref = ev.get("objectRef") or {}
    status = ev.get("responseStatus")
    ips = ev.get("sourceIPs") or []

    def q(s: str) -> str:
        return orjson.dumps(s).decode()

    return (f'{ev.get("requestReceivedTimestamp", "")} AUDIT: id={q(ev.get("auditID", ""))} '
            f'stage={q(ev.get("stage", ""))} ip={q(ips[0] if ips else "<unknown>")} method={q(ev.get("verb", ""))} '
            f"user={q(username)} groups={q(groups)} as={q(as_user)} asgroups={q(as_groups)} "
            f'user-agent={q(ev.get("userAgent", ""))} namespace={q(ref.get("namespace") or "<none>")} '
            f'uri={q(ev.get("requestURI", ""))} '
            f'response="{status.get("code", 0) if status is not None else "<deferred>"}"')  # fmt: skip


class RotatingFile:
    """A file that rotates past `max_size_mb` as lumberjack does (backups named by their rotation time, UTC)."""

    def __init__(self, path: str, max_size_mb: int, max_backups: int, max_age_days: int, compress: bool) -> None:
        self.path = Path(path)
        self.max_bytes = (max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE
        self.max_backups = max_backups
        self.max_age = max_age_days * 86400
        self.compress = compress
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] = open(self.path, "ab")
        os.chmod(self.path, 0o600)  # (upstream writes it 0600 too: it holds request bodies)
        self._size = self._file.tell()

    def write(self, data: bytes) -> None:
        if self._size + len(data) > self.max_bytes and self._size > 0:
            self._rotate()
        self._file.write(data)
        self._size += len(data)

    def flush(self) -> None:
        self._file.flush()

    def _backup_name(self) -> Path:
        stamp = dt.datetime.now(dt.UTC)
        name = f"{self.path.stem}-{stamp.strftime(_BACKUP_TIME)}.{stamp.microsecond // 1000:03d}{self.path.suffix}"
        return self.path.with_name(name)

    def _rotate(self) -> None:
        self._file.close()
        backup = self._backup_name()
        os.replace(self.path, backup)
        if self.compress:
            with open(backup, "rb") as src, gzip.open(f"{backup}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            backup.unlink()
        self._file = open(self.path, "ab")
        os.chmod(self.path, 0o600)
        self._size = 0
        self._remove_old()

    def backups(self) -> list[Path]:
        """The rotated files, newest first."""
        prefix = f"{self.path.stem}-"
        found = [p for p in self.path.parent.iterdir()
                 if p.name.startswith(prefix) and p != self.path
                 and (p.name.endswith(self.path.suffix) or p.name.endswith(self.path.suffix + ".gz"))]  # fmt: skip
        return sorted(found, key=lambda p: p.name, reverse=True)

    def _remove_old(self) -> None:
        backups = self.backups()
        doomed: list[Path] = []
        if self.max_backups > 0:
            doomed += backups[self.max_backups :]
        if self.max_age > 0:
            cutoff = time.time() - self.max_age
            doomed += [p for p in backups if p.stat().st_mtime < cutoff]
        for p in set(doomed):
            p.unlink(missing_ok=True)

    def close(self) -> None:
        self._file.close()


class LogBackend:
    """Writes events to the audit log."""

    def __init__(self, opts: LogOptions) -> None:
        self.opts = opts
        self._stdout = opts.path == "-"
        self._file = (
            None
            if self._stdout
            else RotatingFile(opts.path, opts.max_size_mb, opts.max_backups, opts.max_age_days, opts.compress)
        )
        self._batch: list[bytes] = []
        self._flusher: asyncio.Task[None] | None = None

    def _line(self, ev: dict[str, Any]) -> bytes:
        if self.opts.format == "legacy":
            return event_string(ev).encode() + b"\n"
        return orjson.dumps(ev) + b"\n"

    def process(self, ev: dict[str, Any]) -> None:
        line = self._line(ev)
        if self.opts.mode == "batch":
            self._batch.append(line)
            if self._flusher is None or self._flusher.done():
                self._flusher = asyncio.get_running_loop().create_task(self._flush_soon())
            return
        self._write([line])

    def _write(self, lines: list[bytes]) -> None:
        if self._file is None:
            sys.stdout.buffer.write(b"".join(lines))
            sys.stdout.flush()
            return
        for line in lines:
            self._file.write(line)
        self._file.flush()

    async def _flush_soon(self) -> None:
        await asyncio.sleep(1.0)
        lines, self._batch = self._batch, []
        if lines:
            self._write(lines)

    def close(self) -> None:
        lines, self._batch = self._batch, []
        if lines:
            self._write(lines)
        if self._file is not None:
            self._file.close()
