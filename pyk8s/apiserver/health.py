"""`/healthz`, `/livez`, `/readyz` with named checks and the `?verbose` form, and `/version`
(upstream: apiserver/pkg/server/healthz and pkg/version)."""

from __future__ import annotations

import platform
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web

from .. import KUBERNETES_MAJOR, KUBERNETES_MINOR, __version__

Check = Callable[[], Awaitable[bool]]


def version_info() -> dict[str, str]:
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0-pyk8s.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}",
        "compiler": "cpython",
        "platform": f"{sys.platform}/{machine}",
    }


class HealthChecks:
    def __init__(self, checks: dict[str, dict[str, Check]]) -> None:
        # endpoint ("healthz", "livez", "readyz") -> ordered checks
        self.checks = checks

    async def serve(self, request: web.Request, endpoint: str, only: str = "") -> web.Response:
        checks = self.checks.get(endpoint, {})
        if only:
            check = checks.get(only)
            if check is None:
                return web.Response(status=404, text="404 page not found\n")
            ok = await _run(check)
            return web.Response(
                status=200 if ok else 500, text="ok" if ok else f"internal server error: {only} failed\n"
            )
        excluded = set(request.query.getall("exclude", []))
        lines = []
        failed = False
        for name, check in checks.items():
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            ok = await _run(check)
            failed |= not ok
            lines.append(f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld")
        verbose = "verbose" in request.query
        if failed:
            lines.append(f"{endpoint} check failed")
            return web.Response(status=500, text="\n".join(lines) + "\n")
        if verbose:
            lines.append(f"{endpoint} check passed")
            return web.Response(text="\n".join(lines) + "\n")
        return web.Response(text="ok")


async def _run(check: Check) -> bool:
    try:
        return await check()
    except Exception:
        return False
