"""Raising the open-file limit when a long-running process starts.

A server holds one descriptor per connection, watch stream and open file. Linux distributions start processes
with a soft `RLIMIT_NOFILE` of 1,024 and a much higher hard limit, because old programs that use `select()`
break on descriptors above 1,023. Go's runtime has raised the soft limit to the hard limit at start since Go
1.19, so kube-apiserver, the scheduler and etcd all run with the hard limit; pyk8s's processes do the same by
calling `raise_nofile_limit()` first thing. Nothing in pyk8s uses `select()`. Processes a pyk8s process starts
inherit the raised limit (Go puts the original back for the programs it runs; nothing pyk8s runs needs that).
"""

from __future__ import annotations

import resource

_NR_OPEN = "/proc/sys/fs/nr_open"  # Linux's ceiling on any process's open-file limit


def raise_nofile_limit() -> int:
    """Raise the soft limit on open files to the hard limit, as far as the kernel allows; return the soft limit
    in force afterwards. Never fails: a limit that cannot be raised stays as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        # An unlimited hard limit cannot be the soft limit for descriptors: the kernel caps it at nr_open.
        try:
            with open(_NR_OPEN) as f:
                target = int(f.read())
        except (OSError, ValueError):
            return soft
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
