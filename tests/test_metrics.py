"""GET /metrics: who may read it, what it shows, and the route templates it is labelled by."""

import ipaddress

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from collab.api.metrics import route_template
from collab.metrics import _folder_lengths

pytestmark = pytest.mark.django_db


def _scrape(client: Client, **extra) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def _is_json_404(response) -> None:
    assert response.status_code == 404
    assert response.json() == {
        "success": False,
        "error": {
            "code": "NOT_FOUND",
            "message": f"No route matches {response.request['REQUEST_METHOD']} /metrics.",
            "details": {},
        },
    }


def test_loopback_reads_the_metrics_labelled_by_route_template(world):
    client = Client()
    client.get(f"/v1/projects/{world.project.pk}/issues")
    client.get("/no/such/path")
    found = _scrape(client)
    key = frozenset(
        {
            "http_request_method": "GET",
            "http_route": "/v1/projects/{project_id}/issues",
            "http_response_status_code": "401",
        }.items()
    )
    assert found[("http_server_request_duration_seconds_count", key)] >= 1
    unmatched = [labels for name, labels in found if ("http_route", "unmatched") in labels]
    assert unmatched, "a path no route serves is labelled unmatched"
    raw = f"/v1/projects/{world.project.pk}/issues"
    assert not any(dict(labels).get("http_route") == raw for _, labels in found)
    assert any(name == "collab_build_info" for name, _ in found)
    assert {dict(labels)["queue"] for name, labels in found if name == "collab_queue_length"} == {
        "default",
        "webhooks",
        "git",
        "analytics",
        "email",
        "exports",
    }


def test_another_address_gets_the_404_of_an_unknown_path():
    _is_json_404(Client(REMOTE_ADDR="203.0.113.9").get("/metrics"))
    _is_json_404(Client(REMOTE_ADDR="203.0.113.9").post("/metrics"))


def test_a_request_through_a_proxy_is_not_judged_by_the_proxys_loopback_address():
    _is_json_404(Client().get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.9"))


@override_settings(METRICS_ALLOWED_NETWORKS=[ipaddress.ip_network("10.1.0.0/16")])
def test_an_allowed_network_reads_them():
    _scrape(Client(REMOTE_ADDR="10.1.2.3"))
    _is_json_404(Client(REMOTE_ADDR="10.2.0.1").get("/metrics"))


@override_settings(METRICS_TOKEN="s3cret-scrape-token")
def test_with_a_token_only_its_bearer_reads_them():
    _is_json_404(Client().get("/metrics"))
    _is_json_404(Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong"))
    _scrape(Client(REMOTE_ADDR="203.0.113.9"), HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")


@override_settings(METRICS_ENABLED=False)
def test_metrics_off_is_a_404():
    _is_json_404(Client().get("/metrics"))


def test_a_write_is_a_405_and_the_scrape_is_not_rate_limited():
    response = Client().post("/metrics")
    assert response.status_code == 405
    assert "X-RateLimit-Limit" not in Client().get("/metrics")


# Prometheus on Kubernetes scrapes a pod at its IP: that is the Host it sends.
POD = "10.1.2.3:8000"


@override_settings(ALLOWED_HOSTS=["collab.example.com"])
def test_a_scrape_addressed_to_a_pods_ip_is_answered_to_the_readers_only():
    _scrape(Client(), HTTP_HOST=POD)
    assert Client().get("/metrics", HTTP_HOST="collab.example.com").status_code == 200
    # Its own check still decides: anyone else gets what any path gets for that Host.
    _is_host_refused(Client(REMOTE_ADDR="203.0.113.9").get("/metrics", HTTP_HOST=POD))
    _is_host_refused(Client().get("/metrics", HTTP_HOST=POD, HTTP_X_FORWARDED_FOR="203.0.113.9"))
    # The readers' other methods get the endpoint's own answers.
    assert Client().post("/metrics", HTTP_HOST=POD).status_code == 405


@override_settings(ALLOWED_HOSTS=["collab.example.com"])
@pytest.mark.parametrize("path", ["/healthz", "/v1/projects", "/metrics/", "/metricsx", "/nope"])
def test_host_validation_holds_on_every_other_path(path):
    _is_host_refused(Client().get(path, HTTP_HOST=POD))


@override_settings(ALLOWED_HOSTS=["collab.example.com"], METRICS_TOKEN="s3cret-scrape-token")
def test_with_a_token_a_pods_ip_is_answered_to_its_bearer_only():
    bearer = "Bearer s3cret-scrape-token"
    _scrape(Client(REMOTE_ADDR="10.9.8.7"), HTTP_HOST=POD, HTTP_AUTHORIZATION=bearer)
    _is_host_refused(Client().get("/metrics", HTTP_HOST=POD))
    _is_host_refused(Client().get("/metrics", HTTP_HOST=POD, HTTP_AUTHORIZATION="Bearer wrong"))


@override_settings(ALLOWED_HOSTS=["collab.example.com"], METRICS_ENABLED=False)
def test_metrics_off_a_pods_ip_is_refused_like_any_host():
    _is_host_refused(Client().get("/metrics", HTTP_HOST=POD))


def _is_host_refused(response) -> None:
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": {
            "code": "BAD_REQUEST",
            "message": "The Host header is not allowed here.",
            "details": {},
        },
    }


@pytest.mark.parametrize(
    ("route", "template"),
    [
        ("v1/projects/(?P<project_id>[0-9]{1,19})/issues$", "/v1/projects/{project_id}/issues"),
        ("v1/issues/(?P<pk>[0-9]{1,19})$", "/v1/issues/{pk}"),
        ("v1/projects/<int:project_id>/labels", "/v1/projects/{project_id}/labels"),
        ("admin/(?P<url>.*)$", "/admin/{url}"),
        ("healthz", "/healthz"),
    ],
)
def test_route_templates(route, template):
    assert route_template(route) == template


def test_queue_length_of_the_file_broker(tmp_path):
    for name in ("1_a.default.msg", "2_b.default.msg", "3_c.git.msg", "4_d.git.msg.9.taken"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "5_e.email.msg.part").write_text("")
    assert _folder_lengths(str(tmp_path), ["default", "git", "email"]) == {
        "default": 2,
        "git": 1,
        "email": 0,
    }
