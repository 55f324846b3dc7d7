"""The API guide's tables agree with the code.

- docs/guide/authentication.md lists every route and method of the URL conf with the scope
  its view requires (the tables headed ``| method | path | scope |``);
- docs/guide/envelope-and-errors.md lists every error code the code can answer, with its
  status (the table headed ``| status | code | meaning |``);
- docs/guide/events-and-webhooks.md lists every event kind of the catalogue;
- no tracked file cites the old specification documents that lived outside the repository:
  the guide holds the public contract now.
"""

import ast
import inspect
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from rest_framework import status

from collab.api.permissions import JwtOnly
from comments.views import READ_SCOPE
from events.catalogue import EVENT_KINDS
from search.selectors import READ_SCOPES as SEARCH_SCOPES
from tests.urlconf import named_routes

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"

# What the scope column says for a route whose view needs no scope.
NO_CREDENTIALS = "none"  # no Bearer read at all (sign-in, push notifications, health)
JWT_ONLY = "JWT only"  # a signed-in user's token; API keys are refused
ANY_CREDENTIAL = "any"  # any valid credential, whatever its scopes
# Views that learn the scope they need from the record they find (a comment is read as its
# parent is; search reads the kinds the credential's scopes read): the scopes that can apply.
DYNAMIC_SCOPES = {
    ("GET", "comment-detail"): set(READ_SCOPE.values()),
    ("GET", "comment-history"): set(READ_SCOPE.values()),
    ("GET", "search-list"): set(SEARCH_SCOPES),
}
# Plain Django views (not viewsets): health and the schema, open to anyone.
PLAIN_VIEWS = {"healthz", "readyz", "schema", "docs", "metrics"}


def _routes():
    return list(named_routes())


def _path(pattern: str) -> str:
    """``v1/^projects/(?P<project_id>[0-9]{1,19})/issues$`` as ``/v1/projects/:_/issues``."""
    path = "/" + pattern.replace("^", "").replace("$", "")
    return re.sub(r"\(\?P<\w+>[^)]*\)", ":_", path)


def _normal(path: str) -> str:
    return re.sub(r":\w+", ":_", path.strip().strip("`"))


def _view_scope(callback, method: str, action: str) -> str:
    """The scope column's expected text for one method of a viewset's route."""
    view = callback.cls(**callback.initkwargs)
    view.action_map = callback.actions
    view.action = action
    view.request = SimpleNamespace(method=method)
    view.kwargs = {}
    if view.authentication_classes == []:
        return NO_CREDENTIALS
    if any(isinstance(permission, JwtOnly) for permission in view.get_permissions()):
        return JWT_ONLY
    required = view.required_scope()
    if required:
        return required
    if "require_scope(" in inspect.getsource(callback.cls):
        return "dynamic"
    return ANY_CREDENTIAL


def code_scopes() -> dict[tuple[str, str], tuple[str, str]]:
    """``(method, normalised path) -> (expected scope text, route name)`` for every route."""
    found = {}
    for pattern, raw in _routes():
        path = _path(raw)
        if "[" in path or "(" in path:
            continue  # the catch-all 404
        actions = getattr(pattern.callback, "actions", None)
        if actions is None:
            assert pattern.name in PLAIN_VIEWS, f"a plain view the guide does not know: {raw}"
            found[("GET", path)] = (NO_CREDENTIALS, pattern.name)
            continue
        for method, action in actions.items():
            if method == "head":
                continue  # DRF adds HEAD beside GET on a view's first request: GET's own scope
            method = method.upper()
            found[(method, path)] = (_view_scope(pattern.callback, method, action), pattern.name)
    return found


def _tables(page: Path, header: tuple[str, ...]) -> list[list[str]]:
    """The rows (cells stripped) of every Markdown table of ``page`` headed ``header``."""
    rows: list[list[str]] = []
    inside = False
    for line in page.read_text().splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if tuple(cell.lower() for cell in cells) == header:
            inside = True
        elif inside and not set("".join(cells)) <= set("-: "):
            rows.append(cells)
    return rows


def guide_scopes() -> dict[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for method, path, scope in _tables(GUIDE / "authentication.md", ("method", "path", "scope")):
        key = (method.strip("`").upper(), _normal(path))
        assert key not in table, f"listed twice in the scope table: {method} {path}"
        table[key] = scope
    return table


def _spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_scope_table_lists_every_route_with_the_scope_the_code_requires():
    code, guide = code_scopes(), guide_scopes()
    problems = []
    for key, (expected, name) in sorted(code.items()):
        cell = guide.get(key)
        if cell is None:
            problems.append(f"missing: {key[0]} {key[1]} ({name}), needs {expected}")
            continue
        spans = _spans(cell)
        if expected == "dynamic":
            scopes = DYNAMIC_SCOPES.get((key[0], name))
            if scopes is None:
                problems.append(f"{name} decides its scope per record: add it to DYNAMIC_SCOPES")
            elif set(spans) != scopes:
                problems.append(f"{key[0]} {key[1]}: the guide says {cell}, the code {scopes}")
        elif expected in (NO_CREDENTIALS, JWT_ONLY, ANY_CREDENTIAL):
            if spans[:1] and spans[0] in {"none", "any"}:
                said = spans[0]
            else:
                said = cell.split("(")[0].strip().strip("`")
            if said != expected:
                problems.append(f"{key[0]} {key[1]}: the guide says {cell}, the code {expected}")
        elif not spans or spans[0] != expected:
            problems.append(f"{key[0]} {key[1]}: the guide says {cell}, the code {expected}")
    for key in sorted(set(guide) - set(code)):
        problems.append(f"no such route in the code: {key[0]} {key[1]}")
    assert problems == []


# Error codes ----------------------------------------------------------------------------------

CODE = re.compile(r"^[A-Z]+(?:_[A-Z]+)*$")
# Functions that answer an error from a status and a code: (position of the status, of the code).
ERROR_MAKERS = {"json_error": (0, 1), "HeadRefused": (0, 1), "error_body": (None, 0)}


def _constant(node, kind):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, kind) else None


def _is_status(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599


def _status_of(node) -> int | None:
    """``409`` or ``status.HTTP_409_CONFLICT``."""
    value = _constant(node, int)
    if value is not None:
        return value
    if isinstance(node, ast.Attribute) and node.attr.startswith("HTTP_"):
        return getattr(status, node.attr, None)
    return None


def _codes_in(tree: ast.AST) -> set[tuple[str, int | None]]:
    found: set[tuple[str, int | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = {}
            for statement in node.body:
                if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value:
                    targets = (
                        statement.targets
                        if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    for target in targets:
                        if isinstance(target, ast.Name):
                            fields[target.id] = statement.value
            code = _constant(fields.get("code"), str)
            if code and CODE.match(code):
                found.add(
                    (code, _status_of(fields["status_code"]) if "status_code" in fields else None)
                )
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in ERROR_MAKERS:
                status_at, code_at = ERROR_MAKERS[name]
                if len(node.args) > code_at:
                    code = _constant(node.args[code_at], str)
                    if code and CODE.match(code):
                        known = _status_of(node.args[status_at]) if status_at is not None else None
                        found.add((code, known))
        elif isinstance(node, ast.Tuple):
            # (DRF's exception, 429, "RATE_LIMITED"): a mapping of statuses to codes.
            values = [_constant(element, (int, str)) for element in node.elts]
            statuses = [value for value in values if _is_status(value)]
            codes = [value for value in values if isinstance(value, str) and CODE.match(value)]
            if len(statuses) == 1 and len(codes) == 1:
                found.add((codes[0], statuses[0]))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                key_status = _constant(key, int)
                if _is_status(key_status) and isinstance(value, ast.Tuple) and value.elts:
                    # {404: ("NOT_FOUND", "Not found.")}
                    code = _constant(value.elts[0], str)
                    if code and CODE.match(code):
                        found.add((code, key_status))
                if _constant(key, str) == "code" and isinstance(value, ast.Dict):
                    # The schema's {"code": {"type": "string", "enum": [...]}}.
                    for inner_key, inner in zip(value.keys, value.values, strict=True):
                        if _constant(inner_key, str) == "enum" and isinstance(inner, ast.List):
                            for element in inner.elts:
                                code = _constant(element, str)
                                if code and CODE.match(code):
                                    found.add((code, None))
    return found


def _source_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    skipped = ("tests/", "client/", "bench/", "docs/")
    return [
        ROOT / name
        for name in listed
        if not name.startswith(skipped) and "/migrations/" not in name
    ]


# What the compose load balancer answers itself: `return 502 '{"success":false,...}'`.
NGINX_ERROR = re.compile(r"return (\d{3}) '\{\"success\":false,\"error\":\{\"code\":\"([A-Z_]+)\"")


def code_error_codes() -> set[tuple[str, int | None]]:
    found: set[tuple[str, int | None]] = set()
    for path in _source_files():
        found |= _codes_in(ast.parse(path.read_text(), filename=str(path)))
    nginx = (ROOT / "deploy" / "nginx" / "nginx.conf").read_text()
    found |= {(code, int(status_code)) for status_code, code in NGINX_ERROR.findall(nginx)}
    return found


def guide_error_codes() -> set[tuple[str, int]]:
    rows = _tables(GUIDE / "envelope-and-errors.md", ("status", "code", "meaning"))
    return {(code.strip("`"), int(status_cell)) for status_cell, code, _meaning in rows}


def test_the_collector_finds_the_codes_in_every_form_the_code_writes_them():
    found = code_error_codes()
    assert ("QUERY_TIMEOUT", 503) in found  # a class of collab/api/exceptions.py
    assert ("NOT_ACCEPTABLE", 406) in found  # a DRF exception mapped in _DRF_CODES
    assert ("PRECONDITION_FAILED", 412) in found  # json_error() in collab/api/conditional.py
    assert ("URI_TOO_LONG", 414) in found  # the server's own HeadRefused
    assert ("INTERNAL_ERROR", None) in found  # error_body() in the exception handler
    assert ("GATEWAY_TIMEOUT", 504) in found  # the compose load balancer's own answer


def test_the_error_table_lists_every_code_the_code_answers():
    documented = guide_error_codes()
    codes = {code for code, _status in documented}
    missing = sorted(
        f"{code} ({status_code or 'any status'})"
        for code, status_code in code_error_codes()
        if (status_code is None and code not in codes)
        or (status_code is not None and (code, status_code) not in documented)
    )
    assert missing == []


def test_the_error_table_lists_no_code_the_code_does_not_answer():
    answered = {code for code, _status in code_error_codes()}
    assert sorted(code for code, _status in guide_error_codes() if code not in answered) == []


# Event kinds ----------------------------------------------------------------------------------


def test_the_events_page_lists_every_kind():
    page = (GUIDE / "events-and-webhooks.md").read_text()
    assert [kind for kind in EVENT_KINDS if f"| `{kind}` |" not in page] == []


# Citations ------------------------------------------------------------------------------------

# Spelled in pieces so that this file does not name what it looks for: the two documents, and
# citations of their sections (the word, then "§4", "section 4" or "9").
RETIRED = (
    r"shared/" + r"SPEC\.md",
    r"shared/" + r"CONTRACT\.md",
    "CONTRACT" + r" (§|sections? |[0-9])",
)


@pytest.mark.parametrize("pattern", RETIRED)
def test_no_tracked_file_cites_the_retired_specification(pattern):
    listed = subprocess.run(
        ["git", "grep", "-l", "-E", pattern], cwd=ROOT, capture_output=True, text=True
    )
    assert listed.returncode in (0, 1), listed.stderr  # 1: no match
    assert listed.stdout.split() == []
