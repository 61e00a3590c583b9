"""The kubelet, simulated: nodes that register, heartbeat and report status through the API as a v1.32 kubelet
does (`node_status.py`, `node_lease.py`, `hollow_nodes.py`, all on one clock: `heartbeats.py`) and run the pods
bound to them (`pod_workers.py`, `pod_status.py`), many to one process (`pyk8s nodes`, `cli.py`)."""
