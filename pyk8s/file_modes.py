"""Who may read a data directory: only its owner, as etcd keeps its own. The directory is 0700, and the state
and secrets in it (the SQLite database with its `-wal`, `-shm` and lock files, the PKI's private keys, the
admin token and kubeconfig) are 0600.

etcd creates its data directory 0700 and its files 0600, and, finding an existing directory with looser
modes, only warns ("check file permission ... The recommended permission is -rwx------"). pyk8s warns and
also takes the group's and others' bits away, since that directory holds the cluster's CA key and the admin
credentials; when it cannot (the directory is not ours), it warns and goes on, as etcd does.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_GROUP_OTHER = 0o077


def ensure_private_dir(path: Path) -> None:
    """Create `path` 0700 (missing parents get the usual modes), or take group and other bits away from an
    existing one, with a warning."""
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    except FileExistsError:
        if not path.is_dir():
            raise
    _tighten(path, "directory")


def tighten_file(path: Path) -> None:
    """Take group and other bits away from an existing file, with a warning; nothing if it is missing."""
    _tighten(path, "file")


def create_private_file(path: Path) -> None:
    """Make sure `path` exists and is private: created empty 0600 when missing (whatever the umask allows,
    never more), tightened when it exists."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    os.close(fd)
    tighten_file(path)


def write_private_file(path: Path, data: bytes) -> None:
    """Write `path` 0600 and whole: a temporary file, made private before anything is in it, renamed over the
    old one, so a reader never sees it half written nor anyone else at any time."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)  # a leftover temporary file keeps its old mode through O_CREAT
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _tighten(path: Path, what: str) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if not mode & _GROUP_OTHER:
        return
    tight = mode & ~_GROUP_OTHER
    try:
        path.chmod(tight)
    except OSError as e:
        log.warning("%s %s has mode %04o and cannot be made private (%s): others may read it", what, path, mode, e)
        return
    log.warning(
        "%s %s had mode %04o, readable by others; changed to %04o (it holds the cluster's state or secrets)",
        what,
        path,
        mode,
        tight,
    )
