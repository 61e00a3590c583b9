"""Server-side Table printers for every kind kubectl shows columns for (upstream:
pkg/printers/internalversion). Importing this package registers them with `tables.printer`; kinds are split
into modules by API group family."""

from . import cluster, core, workloads  # noqa: F401 -- registration on import
from .common import quantity

__all__ = ["quantity"]
