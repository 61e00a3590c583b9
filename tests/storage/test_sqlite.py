"""What only the embedded backend has to prove: crash safety, one process per data directory, restarts,
and watchers that fall behind the write path."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from pyk8s.storage import GoneError, StorageUnavailableError, Store, StoreLockedError, sqlite_watch
from pyk8s.storage.factory import kv_from_url
from pyk8s.storage.sqlite import SqliteKV

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pyk8s.storage import open_storage

    async def main(url):
        store = await open_storage(url, compaction_interval=0)
        print("ready", flush=True)

        async def writer(w):
            i = 0
            while True:
                k = f"/registry/configmaps/w{w}/c{i}"
                await store.create(k, {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}})
                print(k, flush=True)  # acknowledged: the create returned
                i += 1

        await asyncio.gather(*(writer(w) for w in range(16)))

    asyncio.run(main(sys.argv[1]))
    """
)

HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from pyk8s.storage import open_storage

    async def main(url):
        store = await open_storage(url, compaction_interval=0)
        await store.create("/registry/configmaps/default/held", {"metadata": {"name": "held"}})
        print("ready", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main(sys.argv[1]))
    """
)


def spawn(script: str, url: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    return proc


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
async def test_acknowledged_writes_survive_kill_9(tmp_path, synchronous):
    url = f"sqlite://{tmp_path}?synchronous={synchronous}"
    proc = spawn(WRITER, url)
    acked = []
    assert proc.stdout is not None
    while len(acked) < 3000:
        acked.append(proc.stdout.readline().strip())
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate()
    acked += [line for line in rest.splitlines() if line.startswith("/registry/")]
    assert all(a.startswith("/registry/configmaps/") for a in acked)

    store = Store(kv_from_url(url), compaction_interval=0)
    await store.start()
    try:
        for k in acked:
            obj = await store.get(k)
            assert obj["data"]["i"] == k.rsplit("/c", 1)[1]
        count = await store.count("/registry/configmaps/")
        assert count >= len(acked)
        # Revisions continue where the killed process stopped.
        assert await store.current_revision() == count
        new = await store.create("/registry/configmaps/default/after", {"metadata": {}})
        assert int(new["metadata"]["resourceVersion"]) == count + 1
    finally:
        await store.close()


async def test_a_second_process_cannot_open_the_same_data_directory(tmp_path):
    url = f"sqlite://{tmp_path}"
    holder = spawn(HOLDER, url)
    try:
        store = Store(kv_from_url(url), compaction_interval=0)
        with pytest.raises(StoreLockedError, match=rf"in use by another process \(pid {holder.pid}\)"):
            await store.start()
    finally:
        holder.kill()
        holder.wait()
    # Once the holder is gone the directory opens, with the holder's data intact.
    store = Store(kv_from_url(url), compaction_interval=0)
    await store.start()
    try:
        assert (await store.get("/registry/configmaps/default/held"))["metadata"]["name"] == "held"
    finally:
        await store.close()


async def test_a_second_store_in_the_same_process_is_refused_too(tmp_path):
    async with Store(SqliteKV(tmp_path), compaction_interval=0):
        with pytest.raises(StoreLockedError):
            await SqliteKV(tmp_path).start()


async def test_state_revision_and_compaction_survive_a_restart(tmp_path):
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        await store.create("/registry/pods/a/x", {"metadata": {"name": "x"}})
        await store.create("/registry/pods/a/y", {"metadata": {"name": "y"}})
        await store.guaranteed_update("/registry/pods/a/x", lambda o: {**o, "v": 2})
        await store.delete("/registry/pods/a/y")  # the newest write is a tombstone...
        rev = await store.current_revision()
        await store.compact(rev)  # ...and compaction removes it from the log
        before = (await store.list("/registry/")).items
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        assert await store.current_revision() == rev  # never goes back
        assert (await store.list("/registry/")).items == before
        with pytest.raises(GoneError):
            await store.list("/registry/pods/", revision=rev - 1)
        obj = await store.create("/registry/pods/a/z", {"metadata": {"name": "z"}})
        assert obj["metadata"]["resourceVersion"] == str(rev + 1)


async def test_compaction_bounds_the_log(tmp_path):
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        for i in range(50):
            await store.create(f"/registry/pods/a/p{i}", {"metadata": {}})
        for n in range(10):
            for i in range(50):
                await store.guaranteed_update(f"/registry/pods/a/p{i}", lambda o, n=n: {**o, "n": n})
        for i in range(25):
            await store.delete(f"/registry/pods/a/p{i}")
        kv = store.kv
        assert isinstance(kv, SqliteKV)
        assert kv.history_size() == 50 + 500 + 25
        await store.compact(await store.current_revision())
        assert kv.history_size() == 25  # one row per live key


async def test_a_watcher_that_falls_behind_catches_up_from_the_log(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_watch, "_MAX_BUFFERED_EVENTS", 5)
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        w = await store.watch("/registry/pods/", await store.current_revision())
        for i in range(40):
            await store.create(f"/registry/pods/a/p{i:02}", {"metadata": {}, "i": i})
        assert not w.live  # overflowed: it dropped its buffer
        got = []
        for _ in range(40):
            e = await asyncio.wait_for(w.__anext__(), 5)
            got.append(e.object["i"])
            if len(got) == 20:
                await store.create("/registry/pods/a/late", {"metadata": {}, "i": 40})
        got.append((await asyncio.wait_for(w.__anext__(), 5)).object["i"])
        assert got == list(range(41))
        assert w.live  # caught up: back on the write path
        await store.create("/registry/pods/a/later", {"metadata": {}, "i": 41})
        assert (await asyncio.wait_for(w.__anext__(), 5)).object["i"] == 41
        await w.stop()


async def test_a_watcher_behind_a_compaction_ends_with_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_watch, "_MAX_BUFFERED_EVENTS", 5)
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        w = await store.watch("/registry/pods/", await store.current_revision())
        for i in range(20):
            await store.create(f"/registry/pods/a/p{i:02}", {"metadata": {}, "i": i})
        await store.compact(await store.current_revision())
        with pytest.raises(GoneError):
            await asyncio.wait_for(w.__anext__(), 5)
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(w.__anext__(), 5)


async def test_group_commit_batches_concurrent_writers(tmp_path):
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        kv = store.kv
        assert isinstance(kv, SqliteKV)
        commits = 0
        flush = kv._flush

        def counting_flush():
            nonlocal commits
            commits += 1
            flush()

        kv._flush = counting_flush  # type: ignore[method-assign]
        await asyncio.gather(*(store.create(f"/registry/pods/a/p{i}", {"metadata": {}}) for i in range(200)))
        assert await store.count("/registry/pods/") == 200
        assert commits <= 2, f"200 concurrent creates took {commits} transactions"


async def test_a_full_disk_fails_the_write_and_loses_nothing(tmp_path):
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        kv = store.kv
        assert isinstance(kv, SqliteKV)
        await store.create("/registry/configmaps/a/small", {"metadata": {}, "data": {"x": "1"}})
        rev = await store.current_revision()
        watch = await store.watch("/registry/configmaps/", rev)
        (pages,) = kv.db.execute("PRAGMA page_count").fetchone()
        kv.db.execute(f"PRAGMA max_page_count = {pages + 2}")  # the "disk" is now nearly full
        big = {"metadata": {}, "data": {"x": "y" * 200_000}}
        small = {"metadata": {}, "data": {"x": "tiny"}}
        # One commit holds a write that cannot fit and one that can: only the first fails.
        results = await asyncio.gather(
            store.create("/registry/configmaps/a/big", big),
            store.create("/registry/configmaps/a/fits", small),
            return_exceptions=True,
        )
        assert isinstance(results[0], StorageUnavailableError) and "full" in str(results[0])
        assert results[1]["metadata"]["resourceVersion"] == str(rev + 1)
        assert await store.current_revision() == rev + 1
        assert await store.count("/registry/configmaps/") == 2
        kv.db.execute("PRAGMA max_page_count = 1073741823")  # space again
        after = await store.create("/registry/configmaps/a/after", big)
        assert int(after["metadata"]["resourceVersion"]) == rev + 2
        events = [await asyncio.wait_for(watch.__anext__(), 5) for _ in range(2)]
        assert [(e.key, e.revision) for e in events] == [
            ("/registry/configmaps/a/fits", rev + 1),
            ("/registry/configmaps/a/after", rev + 2),
        ]
        await watch.stop()


async def test_the_write_ahead_log_is_checkpointed_into_the_database_while_writes_go_on(tmp_path):
    """Checkpoints run on their own thread (not inside commits on the loop): the database file takes in what
    was written while the store stays open, and everything reads back."""
    big = "x" * 4000
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        db_file = store.kv.path  # type: ignore[attr-defined]
        before = db_file.stat().st_size
        for batch in range(4):
            await asyncio.gather(
                *(store.create(f"/registry/configmaps/a/c{batch}-{i}", {"data": {"v": big}}) for i in range(200))
            )
        for _ in range(100):
            if db_file.stat().st_size > before + 2_000_000:
                break
            await asyncio.sleep(0.1)
        assert db_file.stat().st_size > before + 2_000_000, "nothing was checkpointed into the database file"
        assert await store.count("/registry/configmaps/") == 800
    async with Store(SqliteKV(tmp_path), compaction_interval=0) as store:
        assert await store.count("/registry/configmaps/") == 800


async def test_store_files_are_private_but_a_named_databases_folder_is_left_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    old = os.umask(0o022)  # what most users have: SQLite alone would make the files world-readable
    try:
        async with Store(SqliteKV(shared / "cluster.db"), compaction_interval=0) as store:
            await store.create("/registry/pods/a/x", {"metadata": {"name": "x"}})
            names = ["cluster.db", "cluster.db-wal", "cluster.db-shm", "cluster.db.lock"]
            assert {n: oct(os.stat(shared / n).st_mode & 0o777) for n in names} == dict.fromkeys(names, "0o600")
    finally:
        os.umask(old)
    assert os.stat(shared).st_mode & 0o777 == 0o755  # a folder the user named a file in is theirs
