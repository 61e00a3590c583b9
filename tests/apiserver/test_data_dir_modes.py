"""The data directory is private, as etcd keeps its own: 0700, with the state (SQLite database, -wal, -shm,
lock file) and the secrets (private keys, admin token, admin.kubeconfig) 0600, whatever the umask lets
through; a data directory left with looser modes is tightened at the next start, with a warning."""

from __future__ import annotations

import contextlib
import os
import stat

from pyk8s.testing.cluster import APIServerProcess

STATE = ["state.db", "state.db-wal", "state.db-shm", "state.db.lock", "admin.kubeconfig"]
SECRETS = [
    "pki/ca.key",
    "pki/apiserver.key",
    "pki/admin.key",
    "pki/admin.token",
    "pki/front-proxy-ca.key",
    "pki/front-proxy-client.key",
]


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@contextlib.contextmanager
def umask(value):
    # The usual 022 would let SQLite and open() make world-readable files: the server must not rely on a tight one.
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def assert_private(data):
    assert oct(mode(data)) == oct(0o700), "data directory"
    assert oct(mode(data / "pki")) == oct(0o700), "pki directory"
    for name in STATE + SECRETS:
        assert oct(mode(data / name)) == oct(0o600), name


def test_a_fresh_data_dir_is_private_and_a_loosened_one_is_tightened_at_start():
    server = APIServerProcess()
    try:
        with umask(0o022):
            server.start()
        data = server.data_dir
        assert_private(data)  # while serving: the -wal and -shm files exist now
        server.stop()
        os.chmod(data, 0o755)
        for name in ("state.db", "pki/ca.key", "admin.kubeconfig"):
            os.chmod(data / name, 0o644)
        with umask(0o022):
            server.restart()
        assert_private(data)
        log = server.log_tail(20000)
        assert f"directory {data} had mode 0755, readable by others; changed to 0700" in log, log
        assert f"file {data / 'pki' / 'ca.key'} had mode 0644" in log, log
    finally:
        server.cleanup()
