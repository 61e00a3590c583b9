"""The Deployment controller: its sync loop (deployment_controller.py), what every sync shares (sync.py), the
RollingUpdate and Recreate strategies (rolling.py, recreate.py), the Progressing condition (progress.py), and the
arithmetic and annotations they use (util.py)."""

from .deployment_controller import DeploymentController

__all__ = ["DeploymentController"]
