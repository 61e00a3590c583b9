"""WAL checkpoints for the SQLite store, off the event loop.

SQLite's default copies the write-ahead log back into the database file from inside whichever commit crosses
1000 pages — on the event loop thread, where it made up about half of all commit time under a steady stream
of writes. The store turns that off and this thread checkpoints instead, on its own connection, in PASSIVE
mode (it never blocks the writer, and SQLite releases the GIL while it copies): when told that enough has been
written, and at least once a second while anything was.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

WRITES_PER_CHECKPOINT = 500  # ~1000 WAL pages for objects of a few KB, SQLite's own default cadence
INTERVAL = 1.0  # seconds: the longest the log grows unchecked while writes keep coming


class Checkpointer:
    """Call `wrote(n)` after each commit of n writes; `stop()` before closing the store's connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wake = threading.Event()
        self._stopping = False
        self._since = 0  # writes since the last request for a checkpoint (loop thread only)
        self._dirty = False
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def wrote(self, n: int) -> None:
        self._dirty = True
        self._since += n
        if self._since >= WRITES_PER_CHECKPOINT:
            self._since = 0
            self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            while not self._stopping:
                self._wake.wait(INTERVAL)
                self._wake.clear()
                if self._stopping or not self._dirty:
                    continue
                self._dirty = False
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as e:  # busy or failing: the next round tries again
                    log.debug("WAL checkpoint failed: %s", e)
        finally:
            db.close()
