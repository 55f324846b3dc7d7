from typing import cast

from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from accounts import selectors as account_selectors
from accounts.models import User, Workspace
from accounts.roles import require_ability
from collab.api.filters import ID_SCHEMA
from collab.api.permissions import MANAGE
from collab.api.routers import MAX_ID
from collab.api.viewsets import ApiViewSet
from events.catalogue import EVENT_KINDS, TYPES_PATTERN
from events.models import Event
from projects.viewsets import ProjectAccessViewSet, ProjectScopedViewSet

from . import records, selectors, services, slots, sse, stream
from .filters import DeliveryFilter, EventFilter
from .models import Delivery, Webhook
from .serializers import (
    DeliveryDetailSerializer,
    DeliverySerializer,
    EventKindSerializer,
    EventSerializer,
    WebhookInputSerializer,
    WebhookSerializer,
    WebhookUpdateSerializer,
)

EVENT_CURSOR_SCHEMA = {"type": "integer", "minimum": 0, "maximum": MAX_ID}
# One event of the stream as an SSE client reads it (OpenAPI 3.0: the media type's schema
# describes each event of a stream).
STREAM_EVENT_SCHEMA = {
    "type": "object",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[1-9][0-9]*$", "description": "The event's id."},
        "event": {
            "type": "string",
            "enum": [*EVENT_KINDS, "resync_required"],
            "description": "The event's kind; `resync_required` when the events after "
            "`Last-Event-ID` were purged: read the state again, then follow on.",
        },
        "data": {
            "type": "string",
            "description": "The event as JSON, as `GET /v1/events` lists it.",
        },
    },
}


class AnyAccept(BaseContentNegotiation):
    """The stream answers ``text/event-stream`` whatever the client accepts, and its errors in
    the JSON envelope: EventSource clients send ``Accept: text/event-stream``."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


# Webhooks are managed by the workspace's owners and admins, with projects:admin.
WEBHOOK_SCOPE = "projects:admin"


def _webhook_created(webhook: Webhook, generated: str | None) -> tuple[dict, str]:
    """A create's answer and location: the record, with the secret when the service made it
    (shown this once)."""
    record: dict = dict(records.webhook_record(webhook))
    if generated:
        record["secret"] = generated
    return record, f"/v1/webhooks/{webhook.pk}"


class ProjectWebhookViewSet(ProjectScopedViewSet):
    """``/v1/projects/:project_id/webhooks``."""

    scope_group = "projects"
    queryset = Webhook.objects.none()
    action_scopes = {"list": WEBHOOK_SCOPE, "create": WEBHOOK_SCOPE}
    action_abilities = {"list": MANAGE, "create": MANAGE}

    @extend_schema(responses={200: WebhookSerializer(many=True)})
    def list(self, request, project_id=None):
        project = self.get_project()
        page = self.paginate_queryset(selectors.webhook_list(project=project))
        return self.get_paginated_response([records.webhook_record(hook) for hook in page])

    @extend_schema(request=WebhookInputSerializer, responses={201: WebhookSerializer})
    def create(self, request, project_id=None):
        project = self.get_project()
        data = self.validated(WebhookInputSerializer)
        made = services.webhook_create(
            workspace_id=project.workspace_id, project=project, actor=request.user, **data
        )
        return self.created(*_webhook_created(*made))


class WorkspaceWebhookViewSet(ApiViewSet):
    """``/v1/workspaces/:workspace_id/webhooks``: webhooks sent every event of the workspace,
    its own (``workspace.*``, ``invitation.*``, ``export.*``) and every project's."""

    scope_group = "projects"
    queryset = Webhook.objects.none()
    action_scopes = {"list": WEBHOOK_SCOPE, "create": WEBHOOK_SCOPE}

    def get_workspace(self, workspace_id) -> Workspace:
        return account_selectors.workspace_require(
            user=cast(User, self.request.user),
            workspace_id=workspace_id,
            ability=MANAGE,
            unlimited_to="use its workspace's webhooks",
        )

    @extend_schema(responses={200: WebhookSerializer(many=True)})
    def list(self, request, workspace_id=None):
        workspace = self.get_workspace(workspace_id)
        page = self.paginate_queryset(selectors.workspace_webhook_list(workspace_id=workspace.pk))
        return self.get_paginated_response([records.webhook_record(hook) for hook in page])

    @extend_schema(request=WebhookInputSerializer, responses={201: WebhookSerializer})
    def create(self, request, workspace_id=None):
        workspace = self.get_workspace(workspace_id)
        data = self.validated(WebhookInputSerializer)
        made = services.webhook_create(
            workspace_id=workspace.pk, project=None, actor=request.user, **data
        )
        return self.created(*_webhook_created(*made))


class WebhookViewSet(ProjectAccessViewSet):
    """``/v1/webhooks/:id``, its deliveries, redelivery and ping."""

    scope_group = "projects"
    queryset = Webhook.objects.none()
    action_scopes = dict.fromkeys(
        ("retrieve", "partial_update", "destroy", "ping", "deliveries", "delivery", "redeliver"),
        WEBHOOK_SCOPE,
    )
    action_abilities = dict.fromkeys(action_scopes, MANAGE)

    def get_webhook(self, pk) -> Webhook:
        webhook = selectors.webhook_get(user=self.actor, webhook_id=pk)
        if webhook is None:
            raise Http404
        if webhook.project is None:
            require_ability(self.request.user, webhook.workspace_id, self.required_ability())
        else:
            self.check_project_ability(webhook.project, self.required_ability())
        return webhook

    def get_delivery(self, webhook: Webhook, delivery_id) -> Delivery:
        delivery = selectors.delivery_get(webhook=webhook, delivery_id=delivery_id)
        if delivery is None:
            raise Http404
        return delivery

    @extend_schema(responses={200: WebhookSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(records.webhook_record(self.get_webhook(pk)))

    @extend_schema(request=WebhookUpdateSerializer, responses={200: WebhookSerializer})
    def partial_update(self, request, pk=None):
        webhook = self.get_webhook(pk)
        data = self.validated(WebhookUpdateSerializer, partial=True)
        webhook = services.webhook_update(webhook=webhook, actor=request.user, **data)
        return self.ok(records.webhook_record(webhook))

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        services.webhook_delete(webhook=self.get_webhook(pk), actor=request.user)
        return self.deleted()

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def ping(self, request, pk=None):
        delivery = services.webhook_ping(webhook=self.get_webhook(pk), actor=request.user)
        delivery = Delivery.objects.select_related("event").get(pk=delivery.pk)
        return Response(DeliverySerializer(delivery).data, status=202)

    @extend_schema(responses={200: DeliverySerializer(many=True)})
    @action(detail=True, methods=["get"], filterset_class=DeliveryFilter)
    def deliveries(self, request, pk=None):
        webhook = self.get_webhook(pk)
        queryset = self.filter_queryset(selectors.delivery_list(webhook=webhook))
        return self.paginated(queryset, DeliverySerializer)

    @extend_schema(responses={200: DeliveryDetailSerializer}, filters=False)
    @action(detail=True, methods=["get"], url_path=r"deliveries/(?P<delivery_id>[0-9]{1,19})")
    def delivery(self, request, pk=None, delivery_id=None):
        delivery = self.get_delivery(self.get_webhook(pk), delivery_id)
        return self.ok(DeliveryDetailSerializer(delivery).data)

    @extend_schema(request=None, responses={201: DeliverySerializer}, filters=False)
    @action(
        detail=True,
        methods=["post"],
        url_path=r"deliveries/(?P<delivery_id>[0-9]{1,19})/redeliver",
    )
    def redeliver(self, request, pk=None, delivery_id=None):
        webhook = self.get_webhook(pk)
        original = self.get_delivery(webhook, delivery_id)
        copy = services.delivery_redeliver(delivery=original, actor=request.user)
        copy = Delivery.objects.select_related("event").get(pk=copy.pk)
        return self.created(
            DeliverySerializer(copy).data, f"/v1/webhooks/{webhook.pk}/deliveries/{copy.pk}"
        )


class EventViewSet(ApiViewSet):
    """``/v1/events``: the durable log as a paginated list, and its catalogue of kinds."""

    scope_group = "projects"
    queryset = Event.objects.none()
    filterset_class = EventFilter

    @extend_schema(responses={200: EventSerializer(many=True)})
    def list(self, request):
        queryset = self.filter_queryset(selectors.event_list(user=request.user).order_by("-id"))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([event.as_payload() for event in page])

    @extend_schema(responses={200: EventKindSerializer(many=True)}, filters=False)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    def kinds(self, request):
        return self.ok(
            [
                {"type": kind, "emitted_by": emitted_by, "data": data}
                for kind, (emitted_by, data) in EVENT_KINDS.items()
            ]
        )

    @extend_schema(
        summary="Server-Sent Events: the log, replayed after Last-Event-ID, then live",
        parameters=[
            OpenApiParameter("project_id", ID_SCHEMA, description="Only this project's events."),
            OpenApiParameter(
                "types",
                {"type": "string", "pattern": TYPES_PATTERN},
                description="Kinds, comma-separated; `issue.*` selects a family, e.g. "
                "`issue.*,pull_request.merged`.",
            ),
            OpenApiParameter(
                "last_event_id",
                EVENT_CURSOR_SCHEMA,
                description="Replay the events after this id first (as `Last-Event-ID`).",
            ),
            OpenApiParameter(
                "Last-Event-ID",
                EVENT_CURSOR_SCHEMA,
                location=OpenApiParameter.HEADER,
                description="Sent by an EventSource on reconnection: the last id it received.",
            ),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                STREAM_EVENT_SCHEMA,
                description="Frames `id: <event id>`, `event: <type>`, `data: <the event as "
                "JSON>`, live from the `: connected` comment on; a `: heartbeat` comment every "
                "15 s. The schema describes one event, as an SSE client reads it.",
            ),
            404: OpenApiResponse(description="`project_id` names a project the caller cannot see."),
            429: OpenApiResponse(
                description="The credential (an API key, or a user signed in with a token) "
                "already holds `STREAM_MAX_PER_CREDENTIAL` open streams (25 by default); "
                "`RATE_LIMITED` with `details.reason` `stream_limit` and `Retry-After`."
            ),
        },
        filters=False,
    )
    @action(
        detail=False,
        methods=["get"],
        filterset_class=None,
        pagination_class=None,
        content_negotiation_class=AnyAccept,
        streams=True,  # served by the ASGI door (collab.asgi) on the event loop
    )
    def stream(self, request):
        options = sse.stream_options(request)
        # Under ASGI the stream is a coroutine on the process's hub; under WSGI, a thread.
        is_asgi = isinstance(request._request, ASGIRequest)
        # Last, once the request is known good: from here the stream holds one of its
        # credential's slots until it ends.
        slot = slots.slot_acquire(credential=slots.credential_of(request))
        if is_asgi:
            frames = slots.held_async(slot, sse.event_stream(**options))
        else:
            frames = slots.HeldSync(slot, sse.event_stream_sync(**options))
        # The request's connection would otherwise stay out of the pool for the whole stream.
        stream.release_connection()
        response = StreamingHttpResponse(frames, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        # Proxies such as nginx would hold the frames back in their buffers otherwise.
        response["X-Accel-Buffering"] = "no"
        return response
