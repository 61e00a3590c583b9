"""The taint-eviction controller (upstream: pkg/controller/tainteviction)."""

from .taint_eviction import TaintEvictionController

__all__ = ["TaintEvictionController"]
