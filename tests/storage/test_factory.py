"""Choosing a backend from a URL."""

from __future__ import annotations

import pytest

from pyk8s.storage import open_storage
from pyk8s.storage.etcd import EtcdKV, grpc_target
from pyk8s.storage.factory import default_data_dir, kv_from_url
from pyk8s.storage.sqlite import SqliteKV


def test_sqlite_url_with_a_directory(tmp_path):
    kv = kv_from_url(f"sqlite://{tmp_path}")
    assert isinstance(kv, SqliteKV) and kv.path == tmp_path / "state.db" and kv.synchronous == "NORMAL"


def test_sqlite_url_with_a_file_and_options(tmp_path):
    kv = kv_from_url(f"sqlite://{tmp_path}/my.db?synchronous=full&progress_notify_interval=2")
    assert isinstance(kv, SqliteKV)
    assert kv.path == tmp_path / "my.db" and kv.synchronous == "FULL" and kv.progress_notify_interval == 2


def test_sqlite_url_without_a_path_uses_the_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    kv = kv_from_url("sqlite://")
    assert isinstance(kv, SqliteKV) and kv.path == default_data_dir() / "state.db"
    assert default_data_dir() == tmp_path / "pyk8s"


def test_etcd_url_with_several_endpoints():
    kv = kv_from_url("etcd://127.0.0.1:2379,127.0.0.2:2379")
    assert isinstance(kv, EtcdKV) and kv.endpoints == ["127.0.0.1:2379", "127.0.0.2:2379"]
    assert grpc_target(kv.endpoints) == "ipv4:127.0.0.1:2379,127.0.0.2:2379"
    assert grpc_target(["localhost:2379"]) == "localhost:2379"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "/tmp/x",
        "postgres://db",
        "etcd://",
        "etcd://host",
        "etcd://host:port",
        "etcd://127.0.0.1:2379?foo=1",
        "sqlite:///tmp/x?synchronous=OFF",
        "sqlite:///tmp/x?journal=delete",
    ],
)
def test_bad_urls_are_clear_errors(url):
    with pytest.raises(ValueError):
        kv_from_url(url)


async def test_open_storage_on_an_unreachable_etcd_fails_clearly():
    from pyk8s.storage import StorageUnavailableError
    from pyk8s.testing.etcd import free_port

    with pytest.raises(StorageUnavailableError, match="etcd"):
        await open_storage(f"etcd://127.0.0.1:{free_port()}")
