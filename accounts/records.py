"""The JSON of the accounts app's records: shown by their serializers (``serializers.py``, one
source for the API, the schema and the events' payloads), built here for the services."""

from typing import Any

from .models import Invitation
from .serializers import InvitationSerializer


def invitation_record(invitation: Invitation) -> dict[str, Any]:
    """An invitation as the API shows it: never its token."""
    return dict(InvitationSerializer(invitation).data)
