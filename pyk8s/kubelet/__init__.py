"""The kubelet, simulated: nodes that register, heartbeat and report status through the API as a v1.32 kubelet
does (`node_status.py`, `node_lease.py`, `hollow_nodes.py`, all on one clock: `heartbeats.py`) and run the pods
bound to them (`pod_workers.py`, `pod_lifecycle.py`, `pod_status.py`, `container_model.py`), many to one process
(`pyk8s nodes`, `cli.py`), with one kubelet endpoint serving their containers' logs (`server.py`,
`container_logs.py`)."""
