"""The Content-Security-Policy (collab/csp.py): on every response, and the admin's pages, its
dashboards and the API's docs work under it in a real browser, with no console error and no
violation."""

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from tests.conftest import assert_ok

PAGE_POLICY = {
    "default-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
    "form-action 'self'",
}


def directives(header: str) -> set[str]:
    return {part.strip() for part in header.split(";")}


def test_an_admin_page_gets_the_strict_policy(world, client):
    client.force_login(world.owner)
    world.owner.is_staff = world.owner.is_superuser = True
    world.owner.save()

    response = client.get("/admin/")

    assert response.status_code == 200
    policy = directives(response["Content-Security-Policy"])
    assert policy >= PAGE_POLICY
    script_src = next(part for part in policy if part.startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src


def test_an_api_answer_gets_the_minimal_policy(api):
    response = api.owner.get("/v1/projects")

    assert_ok(response)
    assert directives(response["Content-Security-Policy"]) == {
        "default-src 'none'",
        "frame-ancestors 'none'",
    }


def test_the_docs_load_their_script_from_their_own_url(client):
    response = client.get("/v1/docs")

    assert response.status_code == 200
    assert b"<script>" not in response.content
    assert b'<script src="/v1/docs?script=' in response.content
    script = client.get("/v1/docs?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")


def admin_pages(world) -> list[str]:
    """The index, each model's list, change forms, an add form and the project dashboard."""
    pages = ["/admin/"]
    for model in admin.site._registry:  # noqa: SLF001 - every registered model, as the index lists
        opts = model._meta
        pages.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    pages += [
        reverse("admin:accounts_user_change", args=[world.developer.pk]),
        reverse("admin:projects_project_change", args=[world.project.pk]),
        reverse("admin:projects_project_add"),
        reverse("admin:analytics_projectdashboard_change", args=[world.project.pk]),
        reverse("admin:analytics_projectdashboard_change", args=[world.project.pk]) + "?period=1y",
    ]
    return pages


@pytest.mark.slow(seconds=16)
@pytest.mark.live
def test_the_admin_and_the_docs_work_in_chromium_under_the_policy(world, live_server, browser):
    owner = world.owner
    owner.is_staff = owner.is_superuser = True
    owner.save()
    signed_in = Client()
    signed_in.force_login(owner)
    browser.set_cookie("sessionid", signed_in.cookies["sessionid"].value, live_server.url)

    problems = {}
    for page in admin_pages(world):
        location, found = browser.visit(live_server.url + page, settle=0.3)
        assert "/admin/login/" not in location, page
        if found:
            problems[page] = found
    browser.visit(live_server.url + "/v1/docs", settle=0.5)
    # Swagger UI ran: it fetched the schema and drew the operations.
    operations = browser.wait_until(
        "document.querySelectorAll('.opblock').length > 10 && "
        "document.querySelectorAll('.opblock').length"
    )
    if found := browser.problems():
        problems["/v1/docs"] = found

    assert problems == {}
    assert operations > 10
