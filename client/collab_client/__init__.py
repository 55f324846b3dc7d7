"""The Python client of the Collab API.

from collab_client import Collab

with Collab("http://127.0.0.1:8000", api_key="clb_...") as client:
    for issue in client.issues.list(project_id=1, status="open"):
        print(issue.number, issue.title)
"""

from . import models, webhooks
from ._client import AsyncCollab, Collab
from ._core import RateLimit, RetryPolicy, Session
from ._types import UNSET
from ._version import __version__
from .errors import (
    APIConnectionError,
    BadRequest,
    CollabError,
    Conflict,
    LengthRequired,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ResyncRequired,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    UnsupportedMediaType,
    ValidationError,
    WebhookVerificationError,
)
from .pagination import AsyncPager, Page, Pager

__all__ = [
    "UNSET",
    "APIConnectionError",
    "AsyncCollab",
    "AsyncPager",
    "BadRequest",
    "Collab",
    "CollabError",
    "Conflict",
    "LengthRequired",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "Page",
    "Pager",
    "PayloadTooLarge",
    "PermissionDenied",
    "PreconditionFailed",
    "RateLimit",
    "RateLimited",
    "ResyncRequired",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailable",
    "Session",
    "Unauthorized",
    "UnsupportedMediaType",
    "ValidationError",
    "WebhookVerificationError",
    "__version__",
    "models",
    "webhooks",
]
