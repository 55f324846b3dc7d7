from tests.conftest import assert_error, assert_ok


def test_owner_lists_and_creates_projects(api, world):
    body = assert_ok(api.owner.get("/v1/projects"))
    assert [p["name"] for p in body["data"]] == ["Rocket"]
    response = api.owner.post("/v1/projects", {"name": "New"}, format="json")
    body = assert_ok(response, 201)
    assert response["Location"] == f"/v1/projects/{body['data']['id']}"
    assert body["data"]["team_count"] == 1


def test_outsider_gets_404(api, world):
    assert_error(api.outsider.get(f"/v1/projects/{world.project.pk}"), 404, "NOT_FOUND")
