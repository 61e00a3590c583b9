"""The CronJob controller (cronjob_controller.py) and its cron schedules (cron.py)."""

from .cronjob_controller import CronJobController

__all__ = ["CronJobController"]
