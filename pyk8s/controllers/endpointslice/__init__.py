"""The EndpointSlice controller (endpointslice_controller.py)."""

from .endpointslice_controller import EndpointSliceController

__all__ = ["EndpointSliceController"]
