"""What the API server does with connections that do not get to the point: silent sockets, half-done TLS
handshakes and half-sent request headers are closed after the read-header timeout; a flood of them beyond the
bound on unauthenticated connections cannot lock the admin out; authenticated clients' idle keep-alive
connections are left alone; and the server runs with its open-file limit raised to the hard limit.

Each test runs a real `pyk8s apiserver` with a short timeout (PYK8S_READ_HEADER_TIMEOUT) and connects over
loopback only."""

from __future__ import annotations

import contextlib
import http.client
import os
import resource
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from pyk8s.apiserver.connections import MAX_PENDING_CEILING, default_max_pending
from pyk8s.testing.cluster import APIServerProcess

HEADER_TIMEOUT = 2.0


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def soft_nofile_limit(soft: int) -> Iterator[None]:
    """Lower this process's soft open-file limit (inherited by the processes it starts) for a while."""
    old = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, old)


@pytest.fixture(scope="module")
def server():
    # Started with a soft file limit of 512, which the server raises itself.
    with environment(PYK8S_READ_HEADER_TIMEOUT=str(HEADER_TIMEOUT)), soft_nofile_limit(512):
        proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def tls_context(server: APIServerProcess) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(server.ca_file))


def tls_socket(server: APIServerProcess) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return tls_context(server).wrap_socket(raw, server_hostname="127.0.0.1")


def is_open(sock: socket.socket) -> bool:
    """True while the server has not closed `sock` (nothing to read, no EOF, no reset)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def wait_closed(socks: list[socket.socket], timeout: float) -> list[socket.socket]:
    """Wait until the server has closed every socket or `timeout` passes; the ones still open."""
    deadline = time.monotonic() + timeout
    left = list(socks)
    while left and time.monotonic() < deadline:
        left = [s for s in left if is_open(s)]
        if left:
            time.sleep(0.1)
    return left


def read_response(sock: ssl.SSLSocket) -> tuple[int, bytes]:
    """One HTTP response (status, body) read from a raw socket; the body is what Content-Length says."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return int(lines[0].split()[1]), body


def test_silent_half_handshaken_and_half_sent_connections_are_closed(server):
    silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(100)]
    half_handshake = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00")  # the first bytes of a TLS ClientHello, and no more
        half_handshake.append(s)
    half_header = []
    for _ in range(100):
        s = tls_socket(server)
        s.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the header never ends
        half_header.append(s)
    everything = silent + half_handshake + half_header

    # While they are held, the admin is served.
    res = server.kubectl("get", "namespaces", "-o", "name")
    assert res.returncode == 0, res.stderr
    assert "namespace/kube-system" in res.stdout
    still_open = [s for s in everything if is_open(s)]
    assert len(still_open) >= len(everything) - 5  # held until the timeout, not closed at once

    assert wait_closed(everything, HEADER_TIMEOUT * 2 + 10) == []
    for s in everything:
        s.close()


def test_idle_keep_alive_connection_outlives_the_header_timeout(server):
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=tls_context(server), timeout=10)
    headers = {"Authorization": f"Bearer {server.token}"}
    conn.request("GET", "/api/v1/namespaces/default", headers=headers)
    first = conn.getresponse()
    assert first.status == 200 and b'"name":"default"' in first.read().replace(b" ", b"")
    sock = conn.sock
    time.sleep(HEADER_TIMEOUT + 1.5)
    conn.request("GET", "/api/v1/namespaces/kube-system", headers=headers)
    second = conn.getresponse()
    assert second.status == 200
    second.read()
    assert conn.sock is sock  # the same connection: the server kept it
    conn.close()


def test_a_connection_without_authentication_is_not_kept_alive(server):
    bad = tls_socket(server)
    bad.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n\r\n")
    status, _ = read_response(bad)
    assert status == 401
    assert wait_closed([bad], 5) == []

    anonymous = tls_socket(server)
    anonymous.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status, body = read_response(anonymous)
    assert (status, body) == (200, b"ok")
    assert wait_closed([anonymous], 5) == []

    admin = tls_socket(server)
    request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token}\r\n\r\n".encode()
    for _ in range(2):  # keep-alive: the same connection answers twice
        admin.sendall(request)
        assert read_response(admin) == (200, b"ok")
    assert is_open(admin)
    for s in (bad, anonymous, admin):
        s.close()


def test_server_raises_its_open_file_limit_to_the_hard_limit(server):
    limits = {}
    for line in open(f"/proc/{server.proc.pid}/limits"):
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            limits = {"soft": soft, "hard": hard}
    assert limits and limits["soft"] == limits["hard"]
    assert limits["soft"] == str(resource.getrlimit(resource.RLIMIT_NOFILE)[1])


def test_raise_nofile_limit_in_a_fresh_process():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "from pyk8s.rlimit import raise_nofile_limit\n"
        "print(raise_nofile_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    expected = str(hard) if hard != resource.RLIM_INFINITY else out[0]
    assert out == [expected, expected]


def test_default_bound_is_half_the_file_limit_within_a_ceiling():
    assert default_max_pending(1024) == 512
    assert default_max_pending(1_048_576) == MAX_PENDING_CEILING
    assert default_max_pending(10) >= 1


def test_a_flood_beyond_the_bound_cannot_lock_the_admin_out():
    bound = 50
    with environment(PYK8S_MAX_PENDING_CONNECTIONS=str(bound), PYK8S_READ_HEADER_TIMEOUT="60"):
        server = APIServerProcess().start()
    try:
        pid = server.proc.pid
        # An authenticated client with a keep-alive connection from before the flood.
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=tls_context(server), timeout=10)
        headers = {"Authorization": f"Bearer {server.token}"}
        conn.request("GET", "/api/v1/namespaces/default", headers=headers)
        assert conn.getresponse().read() and conn.sock is not None
        # A file limit a flood of 400 connections would exhaust on its own.
        base = open_fds(pid)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (base + 150, base + 150))

        flood = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(400)]
        time.sleep(0.5)
        assert open_fds(pid) <= base + bound + 10
        res = server.kubectl("get", "namespaces", "-o", "name")
        assert res.returncode == 0, res.stderr
        assert "namespace/default" in res.stdout
        status, body = server.request("GET", "/api/v1/namespaces/kube-system")
        assert status == 200, body
        sock = conn.sock
        conn.request("GET", "/api/v1/namespaces/kube-public", headers=headers)
        assert conn.getresponse().status == 200
        assert conn.sock is sock
        # The oldest of the flood were closed to make room; at most `bound` of them are held.
        held = [s for s in flood if is_open(s)]
        assert len(held) <= bound
        assert not is_open(flood[0])
        for s in flood:
            s.close()
        conn.close()
    finally:
        server.cleanup()
