"""The Endpoints controller (endpoints_controller.py)."""

from .endpoints_controller import EndpointsController

__all__ = ["EndpointsController"]
