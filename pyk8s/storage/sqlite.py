"""The embedded backend: a revisioned key-value store in one SQLite file (WAL).

Layout (one log row per revision, like kine, plus a current-state index):

- `log(rev, key, prev_rev, deleted, value)`: every write; `rev` is the global revision. An update points
  at the key's previous row (`prev_rev`), which gives watchers the previous value; a delete appends a
  tombstone.
- `kv(key, rev)`: each live key and the log row holding its current value; lists and CAS checks use it.
- `meta`: the compacted revision.

All SQL runs on the event loop thread: a point read costs a few microseconds there and ~50 us through a
thread hop. Writes are queued and applied in group commits (one transaction per loop iteration for every
write that arrived meanwhile), so concurrent writers share a commit. The process that owns the loop is the
only writer; an exclusive lock file keeps a second process out, so the store knows every revision as it
commits and serves watches straight from the write path. A watcher that falls behind or starts in the past
reads the log until it has caught up, then switches to live events (`sqlite_watch`). Only WAL checkpoints
run elsewhere, on a thread of their own (`sqlite_checkpoint`).

Files: the database, its `-wal` and `-shm` files and the lock file are 0600, and a data directory is 0700
(`pyk8s.file_modes`); looser modes found at start are tightened.

Durability: `synchronous=NORMAL` (default) survives a crash or `kill -9` of the process; `FULL` also
survives power loss, at the cost of an fsync per commit. Choose with `sqlite:///dir?synchronous=FULL`.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import sqlite3
from pathlib import Path
from typing import Literal

from ..file_modes import PRIVATE_FILE_MODE, create_private_file, ensure_private_dir, tighten_file
from .errors import GoneError, StorageUnavailableError, StoreLockedError, TooLargeResourceVersionError
from .interface import (
    ADDED,
    DELETED,
    MODIFIED,
    REQUEST_WATCH_PROGRESS,
    Feature,
    KeyValue,
    RangeResult,
    TxnResult,
    WatchEvent,
)
from .sqlite_checkpoint import Checkpointer
from .sqlite_watch import SqliteWatch

log = logging.getLogger(__name__)

DB_FILENAME = "state.db"
Synchronous = Literal["NORMAL", "FULL"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    prev_rev INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value BLOB
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    rev INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
"""

# Compaction deletes history in steps of this many revisions, yielding to the loop between steps.
_COMPACT_STEP = 5000


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """The database file for a data directory or a file path (a directory gets `state.db` inside it)."""
    p = Path(path).expanduser()
    if p.is_dir() or (not p.exists() and not p.suffix):
        return p / DB_FILENAME
    return p


class _Op:
    """One queued write. `kind` is "create", "update" or "delete"."""

    __slots__ = ("expected", "future", "key", "kind", "value")

    def __init__(
        self, kind: str, key: str, expected: int, value: bytes | None, future: asyncio.Future[TxnResult]
    ) -> None:
        self.kind = kind
        self.key = key
        self.expected = expected
        self.value = value
        self.future = future


class SqliteKV:
    """The `KV` protocol on one SQLite file; see the module docstring."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "NORMAL",
        progress_notify_interval: float = 5.0,
        max_batch: int = 1000,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = resolve_path(path)
        # Named by its directory (the API server's --data-dir), not by a file path: that directory is ours.
        self._in_data_dir = self.path != Path(path).expanduser()
        self.synchronous = synchronous
        self.progress_notify_interval = progress_notify_interval
        self.max_batch = max_batch
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._rev = 0
        self._compacted = 0
        self._compact_version = 0
        self._pending: list[_Op] = []
        self._flush_scheduled = False
        self._watchers: set[SqliteWatch] = set()
        self._checkpointer: Checkpointer | None = None

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._db is not None:
            return
        # The store's files are private (pyk8s.file_modes). A data directory is made or kept 0700; the parent
        # of a database named by its file path is only created so when missing: it may be anyone's folder.
        if self._in_data_dir or not self.path.parent.exists():
            ensure_private_dir(self.path.parent)
        # SQLite gives the -wal and -shm files the database file's mode, so a database made 0600 here (or
        # tightened, with what a crash left beside it) keeps all of them private.
        create_private_file(self.path)
        for suffix in ("-wal", "-shm"):
            tighten_file(self.path.with_name(self.path.name + suffix))
        self._lock()
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, cached_statements=64)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            db.execute("PRAGMA temp_store=MEMORY")
            db.execute("PRAGMA cache_size=-65536")
            db.execute("PRAGMA wal_autocheckpoint=0")  # the Checkpointer's thread does it (sqlite_checkpoint)
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()
            self._compacted = row[0] if row else 0
            (max_rev,) = db.execute("SELECT COALESCE(MAX(rev), 0) FROM log").fetchone()
            # A compaction may have removed the newest rows (tombstones): never go back below it.
            self._rev = max(max_rev, self._compacted)
        except sqlite3.DatabaseError as e:
            self._unlock()
            raise StorageUnavailableError(f"cannot open SQLite store {self.path}: {e}") from None
        self._db = db
        self._checkpointer = Checkpointer(self.path)

    def _lock(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLockedError(
                f"the data directory {self.path.parent} is in use by another process (pid {holder}); "
                "stop it or choose another --data-dir"
            ) from None
        tighten_file(lock_path)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    async def close(self) -> None:
        if self._db is None:
            return
        while self._pending:
            self._flush()  # commit what was accepted before closing
        for w in list(self._watchers):
            await w.stop()
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self._db.close()  # the last connection: SQLite checkpoints what is left and removes the log
        self._db = None
        self._unlock()

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StorageUnavailableError("the SQLite store is not open")
        return self._db

    # -- reads ---------------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        self.db  # noqa: B018 -- raises if closed
        return self._rev

    def supports(self, feature: Feature) -> bool:
        # Progress requests are answered from the write path once a watcher has caught up (sqlite_watch).
        return feature == REQUEST_WATCH_PROGRESS

    async def get(self, key: str) -> KeyValue | None:
        return self._current(key)

    def _check_read_revision(self, revision: int) -> None:
        if revision > self._rev:
            raise TooLargeResourceVersionError(revision, self._rev)
        if revision < self._compacted:
            raise GoneError(
                "The resourceVersion for the provided list is too old.",
                revision=revision,
                compacted_revision=self._compacted,
            )

    async def range(
        self, start: str, end: str, *, revision: int = 0, limit: int = 0, count: bool = False
    ) -> RangeResult:
        db = self.db
        rev = revision or self._rev
        self._check_read_revision(rev)
        fetch = limit + 1 if limit else -1
        if rev == self._rev:
            rows = db.execute(
                "SELECT kv.key, log.value, kv.rev FROM kv JOIN log ON log.rev = kv.rev "
                "WHERE kv.key >= ? AND kv.key < ? ORDER BY kv.key LIMIT ?",
                (start, end, fetch),
            ).fetchall()
        else:
            # The key's newest row at or below `rev`; SQLite returns the bare columns of the MAX() row.
            cursor = db.execute(
                "SELECT key, value, MAX(rev), deleted FROM log "
                "WHERE key >= ? AND key < ? AND rev <= ? GROUP BY key ORDER BY key",
                (start, end, rev),
            )
            rows = []
            for key, value, mod, deleted in cursor:
                if not deleted:
                    rows.append((key, value, mod))
                    if len(rows) == fetch:
                        break
            cursor.close()
        more = bool(limit) and len(rows) > limit
        if more:
            del rows[limit:]
        total = None
        if count:
            total = self._count_at(start, end, rev) if more else len(rows)
        return RangeResult([KeyValue(k, v, m) for k, v, m in rows], rev, more, total)

    def _count_at(self, start: str, end: str, rev: int) -> int:
        if rev == self._rev:
            (n,) = self.db.execute("SELECT COUNT(*) FROM kv WHERE key >= ? AND key < ?", (start, end)).fetchone()
        else:
            (n,) = self.db.execute(
                "SELECT COUNT(*) FROM (SELECT MAX(rev), deleted FROM log "
                "WHERE key >= ? AND key < ? AND rev <= ? GROUP BY key) WHERE deleted = 0",
                (start, end, rev),
            ).fetchone()
        return int(n)

    async def count(self, start: str, end: str) -> int:
        self.db  # noqa: B018
        return self._count_at(start, end, self._rev)

    @property
    def revision(self) -> int:
        return self._rev

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def remove_watcher(self, watcher: SqliteWatch) -> None:
        self._watchers.discard(watcher)

    def read_history(self, start: str, end: str, after: int, limit: int) -> list[WatchEvent]:
        """Events for keys in [start, end) after revision `after`, oldest first, at most `limit`."""
        rows = self.db.execute(
            "SELECT l.rev, l.key, l.deleted, l.value, l.prev_rev, p.value FROM log l "
            "LEFT JOIN log p ON p.rev = l.prev_rev "
            "WHERE l.rev > ? AND l.key >= ? AND l.key < ? ORDER BY l.rev LIMIT ?",
            (after, start, end, limit),
        ).fetchall()
        events = []
        for rev, key, deleted, value, prev_rev, prev_value in rows:
            if deleted:
                events.append(WatchEvent(DELETED, key, rev, None, prev_value, prev_rev))
            elif prev_rev:
                events.append(WatchEvent(MODIFIED, key, rev, value, prev_value, prev_rev))
            else:
                events.append(WatchEvent(ADDED, key, rev, value))
        return events

    async def watch(
        self, start: str, end: str, from_revision: int | None, *, progress_notify: bool = False
    ) -> SqliteWatch:
        self.db  # noqa: B018
        if from_revision is None:
            from_revision = self._rev
        elif from_revision > self._rev:
            raise TooLargeResourceVersionError(from_revision, self._rev)
        elif from_revision < self._compacted:
            raise GoneError(
                "The resourceVersion for the provided watch is too old.",
                revision=from_revision,
                compacted_revision=self._compacted,
            )
        w = SqliteWatch(self, start, end, from_revision, self.progress_notify_interval if progress_notify else None)
        if from_revision == self._rev:
            w.live = True  # nothing to replay
        self._watchers.add(w)
        return w

    # -- writes --------------------------------------------------------------------------------------

    def _submit(self, kind: str, key: str, expected: int, value: bytes | None) -> asyncio.Future[TxnResult]:
        self.db  # noqa: B018
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[TxnResult] = loop.create_future()
        self._pending.append(_Op(kind, key, expected, value, fut))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return fut

    async def create(self, key: str, value: bytes) -> TxnResult:
        return await self._submit("create", key, 0, value)

    async def update(self, key: str, expected_revision: int, value: bytes) -> TxnResult:
        return await self._submit("update", key, expected_revision, value)

    async def delete(self, key: str, expected_revision: int) -> TxnResult:
        return await self._submit("delete", key, expected_revision, None)

    def _current(self, key: str) -> KeyValue | None:
        row = self.db.execute(
            "SELECT kv.rev, log.value FROM kv JOIN log ON log.rev = kv.rev WHERE kv.key = ?", (key,)
        ).fetchone()
        return KeyValue(key, row[1], row[0]) if row else None

    def _flush(self) -> None:
        """Apply every queued write in one transaction, then answer the writers and feed the watchers."""
        batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
        if self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._flush_scheduled = False
        if self._db is None:
            for op in batch:
                if not op.future.done():
                    op.future.set_exception(StorageUnavailableError("the SQLite store is closed"))
            return
        try:
            self._commit(batch)
        except Exception as e:  # a full disk, an I/O error: nothing of the batch was written
            if len(batch) == 1:
                log.error("SQLite write failed: %s", e)
                if not batch[0].future.done():
                    batch[0].future.set_exception(StorageUnavailableError(f"SQLite write failed: {e}"))
                return
            # One write's failure must not fail the writes that merely shared its commit.
            for op in batch:
                try:
                    self._commit([op])
                except Exception as e1:
                    log.error("SQLite write failed: %s", e1)
                    if not op.future.done():
                        op.future.set_exception(StorageUnavailableError(f"SQLite write failed: {e1}"))

    def _commit(self, batch: list[_Op]) -> None:
        """Apply `batch` in one transaction; on success answer its writers and feed the watchers; on
        failure roll back and raise, with nothing answered."""
        db = self.db
        results: list[TxnResult] = []
        committed: list[tuple[_Op, int]] = []
        rev = self._rev
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in batch:
                key = op.key
                if op.kind == "create":
                    ok = db.execute("INSERT OR IGNORE INTO kv (key, rev) VALUES (?, ?)", (key, rev + 1)).rowcount
                    if ok:
                        db.execute(
                            "INSERT INTO log (rev, key, prev_rev, deleted, value) VALUES (?, ?, 0, 0, ?)",
                            (rev + 1, key, op.value),
                        )
                elif op.kind == "update":
                    ok = db.execute(
                        "UPDATE kv SET rev = ? WHERE key = ? AND rev = ?", (rev + 1, key, op.expected)
                    ).rowcount
                    if ok:
                        db.execute(
                            "INSERT INTO log (rev, key, prev_rev, deleted, value) VALUES (?, ?, ?, 0, ?)",
                            (rev + 1, key, op.expected, op.value),
                        )
                else:
                    ok = db.execute("DELETE FROM kv WHERE key = ? AND rev = ?", (key, op.expected)).rowcount
                    if ok:
                        db.execute(
                            "INSERT INTO log (rev, key, prev_rev, deleted, value) VALUES (?, ?, ?, 1, NULL)",
                            (rev + 1, key, op.expected),
                        )
                if ok:
                    rev += 1
                    results.append(TxnResult(True, rev))
                    committed.append((op, rev))
                else:
                    results.append(TxnResult(False, rev, self._current(key)))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise
        self._rev = rev
        if committed and self._checkpointer is not None:
            self._checkpointer.wrote(len(committed))
        for op, res in zip(batch, results, strict=True):
            if not op.future.done():
                op.future.set_result(res)
        if committed and self._watchers:
            try:
                self._fan_out(committed)
            except Exception as e:
                # A watcher must never miss an event silently: end every watch; clients re-watch.
                log.error("watch fan-out failed: %s", e)
                for w in list(self._watchers):
                    w.fail(StorageUnavailableError(f"watch fan-out failed: {e}"))

    def _fan_out(self, committed: list[tuple[_Op, int]]) -> None:
        watchers = [w for w in self._watchers if w.live]
        if not watchers:
            return
        prev_values: dict[int, bytes | None] = {}
        for op, rev in committed:
            targets = [w for w in watchers if w.start <= op.key < w.end]
            if not targets:
                continue
            if op.kind == "create":
                event = WatchEvent(ADDED, op.key, rev, op.value)
            else:
                prev = prev_values.get(op.expected)
                if prev is None:
                    row = self.db.execute("SELECT value FROM log WHERE rev = ?", (op.expected,)).fetchone()
                    prev = row[0] if row else None
                if op.kind == "update":
                    event = WatchEvent(MODIFIED, op.key, rev, op.value, prev, op.expected)
                else:
                    event = WatchEvent(DELETED, op.key, rev, None, prev, op.expected)
            if op.value is not None:
                prev_values[rev] = op.value
            for w in targets:
                w.deliver(event)

    # -- compaction ----------------------------------------------------------------------------------

    async def claim_compaction(self, expected_version: int, revision: int) -> tuple[bool, int, int]:
        # One process owns the file, so there is no other compactor to race with.
        self.db  # noqa: B018
        self._compact_version = expected_version + 1
        return True, self._compact_version, self._rev

    async def compact(self, revision: int) -> None:
        db = self.db
        if revision > self._rev:
            raise TooLargeResourceVersionError(revision, self._rev)
        if revision <= self._compacted:
            return
        done = self._compacted
        self._compacted = revision
        db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('compacted', ?)", (revision,))
        for w in list(self._watchers):
            if not w.live and w.position < revision:
                w.fail(
                    GoneError(
                        "The resourceVersion for the provided watch is too old.",
                        revision=w.position,
                        compacted_revision=revision,
                    )
                )
        # Remove the rows superseded at or before `revision` and the tombstones at or before it: what is
        # left still answers every read at `revision` or later.
        while done < revision:
            upto = min(done + _COMPACT_STEP, revision)
            with db:
                db.execute(
                    "DELETE FROM log WHERE rev IN (SELECT prev_rev FROM log WHERE rev > ? AND rev <= ? "
                    "AND prev_rev != 0)",
                    (done, upto),
                )
                db.execute("DELETE FROM log WHERE deleted = 1 AND rev > ? AND rev <= ?", (done, upto))
            done = upto
            await asyncio.sleep(0)

    # -- test and tooling helpers --------------------------------------------------------------------

    def history_size(self) -> int:
        """Rows in the log (live values plus retained history)."""
        (n,) = self.db.execute("SELECT COUNT(*) FROM log").fetchone()
        return int(n)


def sqlite_kv_from_options(path: str, options: dict[str, str]) -> SqliteKV:
    """A SqliteKV from a path and URL query options (`synchronous`, `progress_notify_interval`)."""
    sync = options.pop("synchronous", "NORMAL").upper()
    interval = float(options.pop("progress_notify_interval", 5.0))
    if options:
        raise ValueError(f"unknown SQLite option(s): {', '.join(sorted(options))}")
    if sync == "FULL":
        return SqliteKV(path, synchronous="FULL", progress_notify_interval=interval)
    if sync == "NORMAL":
        return SqliteKV(path, synchronous="NORMAL", progress_notify_interval=interval)
    raise ValueError(f"synchronous must be NORMAL or FULL, not {sync!r}")
