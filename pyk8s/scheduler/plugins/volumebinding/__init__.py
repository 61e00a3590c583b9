"""The VolumeBinding plugin (upstream: plugins/volumebinding): the plugin itself in `plugin`, the PV/PVC matching
and binding in `binder`, the assumed-object caches in `assume_cache`."""

from .binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from .plugin import NAME, VolumeBinding, default_and_validate_args

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "VolumeBinding",
    "default_and_validate_args",
]
