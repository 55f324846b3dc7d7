"""One small corpus and the queries run over it, shared by the PostgreSQL tests and the run on
the embedded default (SQLite): the same queries must find the same issues on both."""

from issues.models import Issue

TITLES = {
    "login": ("Login fails on Safari", "The form posts twice; authentication times out."),
    "authors": ("Authors page is slow", "Rendering the author list takes 4 seconds."),
    "flaky": ("Flaky test in billing", "A known issue: the invoice test fails at midnight."),
    "emoji": ("Crash with an emoji name", "Names with an emoji crash the dashboard charts."),
    "markup": ("<script>alert(1)</script> in the title", "Escaping is needed & expected."),
    "failing": ("Exports failing", "CSV exports stop halfway through large projects."),
}

# Query: the keys of TITLES it finds, on both databases.
QUERIES = {
    "login": {"login"},
    "LOGIN": {"login"},
    "fails": {"login", "flaky", "failing"},  # stems: fails, failing
    "auth*": {"authors", "login"},  # authors, authentication
    '"known issue"': {"flaky"},
    '"issue known"': set(),
    "emoji crash": {"emoji"},
    "fails -invoice": {"login", "failing"},
    "-fails": {"authors", "emoji", "markup"},
    '-"known issue" -emoji': {"login", "authors", "markup", "failing"},
    "script": {"markup"},
    "log-in": set(),  # the phrase "log in": no such words
    "zzzz": set(),
    "exports halfway": {"failing"},
}


def make_corpus(project, reporter) -> dict[str, int]:
    """The corpus's issues in ``project``, by key (made through the service, as the API does)."""
    from issues.services import issue_create

    made = {}
    for key, (title, description) in TITLES.items():
        issue = issue_create(project=project, actor=reporter, title=title, description=description)
        made[key] = issue.pk
    return made


def found(ids: dict[str, int], rows) -> set[str]:
    by_id = {pk: key for key, pk in ids.items()}
    return {by_id[row["id"]] for row in rows}


def run_everywhere() -> dict[str, list[str]]:
    """In a process on the embedded default: make the corpus, run every query through the
    API's own filter, answer what each found (run by test_fulltext's SQLite test)."""
    from accounts.models import User, Workspace
    from projects.models import Project

    user = User.objects.create_user(email="parity@example.test", password="x" * 12)
    workspace = Workspace.objects.create(name="Parity", slug="parity")
    project = Project.objects.create(workspace=workspace, name="Parity", created_by=user)
    ids = make_corpus(project, user)
    issues = Issue.objects.filter(project=project)
    return {
        query: sorted(found(ids, issues.filter(_matches(query)).values("id"))) for query in QUERIES
    }


def _matches(text):
    from collab.db import fulltext

    return fulltext.Matches(fulltext.parse(text))
