"""The scheduling framework (upstream: pkg/scheduler/framework): extension points, statuses, cycle state,
NodeInfo and the snapshot every plugin reads."""
