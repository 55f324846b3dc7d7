"""The Content-Security-Policy of every response (django-csp).

Pages (the admin, its dashboards, the API's docs) get ``CONTENT_SECURITY_POLICY``: their own
scripts and styles only, or inline ones carrying the response's nonce; nothing framed, no
plugins, no foreign base. Everything else (the API's JSON, scripts, styles, images) is no
page, so it may load nothing at all: ``default-src 'none'; frame-ancestors 'none'``, which
keeps a JSON answer opened in a browser from running anything.
"""

from csp.constants import NONE
from csp.middleware import CSPMiddleware, PolicyParts

NOT_A_PAGE = {"default-src": [NONE], "frame-ancestors": [NONE]}


class PolicyMiddleware(CSPMiddleware):
    def get_policy_parts(self, request, response, report_only: bool = False) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        if report_only or response.get("Content-Type", "").startswith("text/html"):
            return parts
        return PolicyParts(config=NOT_A_PAGE)
