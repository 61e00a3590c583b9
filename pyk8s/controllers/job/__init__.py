"""The Job controller (job_controller.py), with how it counts pods (tracking_utils.py), Indexed Jobs' index and
per-index failure bookkeeping (indexed_job_utils.py), the back-off before replacing failed pods
(backoff_utils.py), podFailurePolicy (pod_failure_policy.py), successPolicy (success_policy.py) and what they
share (utils.py)."""

from .job_controller import JobController

__all__ = ["JobController"]
