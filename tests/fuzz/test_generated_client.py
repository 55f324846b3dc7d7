"""A client generated from ``/v1/schema`` by openapi-python-client builds and makes typed calls
against a live server on the embedded default: a list, a create with a body, a filter, and an
error parsed as the envelope. The schema is the contract a client author starts from; if it
cannot be turned into working code, it is wrong."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fuzz.test_live_schema import embedded_env, manage
from tests.liveserver import ROOT, asgi_server, http_get

CALLS = textwrap.dedent(
    """
    import os
    import sys

    sys.path.insert(0, sys.argv[1])
    from collab_api_client import AuthenticatedClient
    from collab_api_client.api.issues import issues_retrieve
    from collab_api_client.api.projects import (
        projects_create,
        projects_issues_create,
        projects_issues_list,
        projects_list,
    )
    from collab_api_client.models import Error, IssueInputRequest, ProjectCreateRequest
    from collab_api_client.models.paginated_issue_list import PaginatedIssueList
    from collab_api_client.models.paginated_project_list import PaginatedProjectList
    from collab_api_client.models.projects_issues_list_status_item import (
        ProjectsIssuesListStatusItem,
    )

    client = AuthenticatedClient(base_url=os.environ["BASE_URL"], token=os.environ["KEY"])
    before = projects_list.sync(client=client)
    assert isinstance(before, PaginatedProjectList), before
    body = ProjectCreateRequest(name="Generated", description="by a generated client")
    project = projects_create.sync(client=client, body=body).data
    assert project.name == "Generated" and isinstance(project.id, int)
    after = projects_list.sync(client=client)
    assert after.meta.total == before.meta.total + 1
    for title in ("Open one", "Closed one"):
        body = IssueInputRequest(title=title)
        projects_issues_create.sync(project.id, client=client, body=body)
    listed = projects_issues_list.sync(
        project.id, client=client, status=[ProjectsIssuesListStatusItem.OPEN], q="Open"
    )
    assert isinstance(listed, PaginatedIssueList)
    assert [issue.title for issue in listed.data] == ["Open one"], listed
    missing = issues_retrieve.sync_detailed(2**62, client=client)
    assert missing.status_code == 404 and isinstance(missing.parsed, Error), missing
    assert missing.parsed.error.code.value == "NOT_FOUND"
    print("typed calls ok")
    """
)


@pytest.mark.slow(seconds=10)
@pytest.mark.live
@pytest.mark.fuzz
def test_a_generated_client_builds_and_calls_the_live_server(tmp_path, embedded_database):
    env = embedded_env(tmp_path / "data")
    embedded_database(tmp_path / "data")
    key = re.search(r"clb_\w+", manage(env, "bootstrap", "--port", "8000"))
    assert key
    with asgi_server(env, tmp_path) as port:
        status, document = http_get(port, "/v1/schema?format=json")
        assert status == 200
        (tmp_path / "schema.json").write_text(json.dumps(json.loads(document)))
        generator = Path(sys.executable).with_name("openapi-python-client")
        subprocess.run(  # noqa: S603 - our own command, fixed arguments
            [str(generator), "generate", "--path", "schema.json", "--meta", "none"],
            cwd=tmp_path,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
            check=True,
            capture_output=True,
            timeout=300,
        )
        assert (tmp_path / "collab_api_client" / "client.py").exists()
        (tmp_path / "calls.py").write_text(CALLS)
        calls = subprocess.run(  # noqa: S603 - our own command, fixed arguments
            [sys.executable, str(tmp_path / "calls.py"), str(tmp_path)],
            cwd=ROOT,
            env={**env, "BASE_URL": f"http://127.0.0.1:{port}", "KEY": key.group()},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert calls.returncode == 0, calls.stdout + calls.stderr
    assert "typed calls ok" in calls.stdout
