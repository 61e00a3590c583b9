"""The Job controller (job_controller.py), with Indexed Jobs' index bookkeeping (indexed_job_utils.py) and
podFailurePolicy (pod_failure_policy.py)."""

from .job_controller import JobController

__all__ = ["JobController"]
