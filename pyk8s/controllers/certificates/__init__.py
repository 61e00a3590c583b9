"""Certificate controllers: the root CA publisher (rootcacertpublisher.py) and the CertificateSigningRequest
controllers, which approve kubelets' client certificate requests (approver.py), sign approved requests with the
cluster's CA (signer.py, authority.py) and delete old requests (cleaner.py) over one shared loop
(certificate_controller.py)."""

from .approver import CSRApprovingController
from .cleaner import CSRCleanerController
from .rootcacertpublisher import RootCACertPublisher
from .signer import CSRSigningController, signer_files

__all__ = ["CSRApprovingController", "CSRCleanerController", "CSRSigningController", "RootCACertPublisher",
           "signer_files"]  # fmt: skip
