"""What the accounts app tells the floors above it, inside the transaction of the change.

Accounts imports none of the apps above it; those that keep rows about people (a project's
team) connect receivers in their ``AppConfig.ready()``. Sent with ``send``, not
``send_robust``: a receiver's failure rolls the whole change back.
"""

from django.dispatch import Signal

# Sent by ``membership_remove`` before the membership goes; arguments: ``membership``.
membership_removing = Signal()
# Sent by ``invitation_accept`` once the person holds the membership, before the
# ``invitation.accepted`` event; arguments: ``invitation``, ``user``.
invitation_accepting = Signal()
