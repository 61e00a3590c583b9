"""The scheduler (upstream: pkg/scheduler): assigns pending pods to nodes through the scheduling framework.

`framework/` holds the extension-point interfaces, NodeInfo and the columnar snapshot; `plugins/` the in-tree
plugins named as upstream; `queue.py` the scheduling queue; `cache.py` the scheduler cache (assume, forget,
expire); `schedule_one.py` one scheduling cycle and its binding cycle; `server.py` the component.
"""
