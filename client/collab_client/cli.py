"""``collab``: the client on the command line, for operators and scripts.

    export COLLAB_URL=http://127.0.0.1:8000 COLLAB_API_KEY=clb_...
    collab projects list
    collab issues list --project 1 --status open --json
    collab issues create --project 1 --title "Broken build" --label bug --label ci
    collab keys create --name ci --scope issues:read --expires-in 90d   # signs in (JWT)
    collab service-accounts create --workspace 1 --name "CI bot" --project 1
    collab keys create --service-account 7 --name nightly --scope issues:write --project 1
    collab apps create --workspace 1 --name Sync --redirect-uri https://sync.example/cb \
        --scope issues:write                                    # signs in (JWT)
    collab authorizations list                                  # signs in (JWT)
    collab audit list --workspace 1 --type api_key.used_from_new_address
    collab events tail --project 1 --types 'issue.*'
    collab export create --workspace 1 --output acme.tar.gz   # waits, then downloads

Output is an aligned table, or ``--json`` (one JSON document; ``events tail`` prints one
event per line). Errors go to stderr as ``CODE: message`` with exit status 1 (2 for usage).
"""

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ._client import Collab
from ._model import Model
from ._types import UNSET
from .errors import CollabError

COLUMNS = {
    "projects": ["id", "name", "visibility", "status", "workspace_id"],
    "issues": ["id", "number", "title", "status", "priority", "type", "assignee_id", "labels"],
    "keys": ["id", "name", "prefix", "scopes", "projects", "expires_at", "revoked"],
    "service-accounts": ["id", "name", "handle", "role", "projects", "tier"],
    "apps": ["id", "name", "client_id", "client_type", "redirect_uris", "scopes"],
    "authorizations": ["id", "app", "scopes", "projects", "updated_at"],
    "audit": ["id", "created_at", "type", "actor", "address"],
    "workspaces": ["id", "name", "slug", "role"],
    "users": ["id", "email", "name", "role", "status"],
    "exports": ["id", "status", "created_at", "completed_at", "size", "expires_at", "error"],
}
# How often ``export create --wait`` asks whether the archive is built.
EXPORT_POLL_SECONDS = 1.0


def _plain(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):  # a record inside the row (an authorization's app): its name
        return str(value.get("name", value.get("id", "")))
    return str(value)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [
        max([len(column)] + [len(line[index]) for line in cells])
        for index, column in enumerate(columns)
    ]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(line.rstrip() for line in lines)


def _show(result: Any, args: argparse.Namespace, kind: str) -> None:
    data = _plain(result)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return
    rows = data if isinstance(data, list) else [data]
    columns = COLUMNS.get(kind) or sorted({key for row in rows for key in row})
    if kind == "keys" and rows and "key" in rows[0]:
        columns = [*columns, "key"]
    if kind == "apps" and rows and rows[0].get("client_secret"):
        columns = [*columns, "client_secret"]  # made now: shown once
    print(table(rows, columns))


def _limit(items: Iterable[Any], limit: int | None) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if limit is not None and len(out) >= limit:
            break
        out.append(item)
    return out


def _client(args: argparse.Namespace, *, jwt: bool = False) -> Collab:
    url = args.url or os.environ.get("COLLAB_URL") or "http://127.0.0.1:8000"
    if jwt:
        email = args.email or os.environ.get("COLLAB_EMAIL")
        password = args.password or os.environ.get("COLLAB_PASSWORD")
        if not (email and password):
            raise SystemExit(
                "collab: managing keys needs a sign-in: --email/--password or "
                "COLLAB_EMAIL/COLLAB_PASSWORD"
            )
        return Collab.login(url, email=email, password=password)
    key = args.api_key or os.environ.get("COLLAB_API_KEY")
    if not key:
        raise SystemExit("collab: no credentials: set COLLAB_API_KEY (or pass --api-key)")
    return Collab(url, api_key=key)


def _service_accounts(client: Collab, args: argparse.Namespace) -> None:
    if args.action == "list":
        accounts = client.service_accounts.list(args.workspace)
        _show(_limit(accounts, args.limit), args, "service-accounts")
    elif args.action == "create":
        account = client.service_accounts.create(
            args.workspace,
            name=args.name,
            role=args.role,
            projects=args.project or [],
            tier=args.tier,
        )
        _show(account, args, "service-accounts")
    elif args.action == "delete":
        client.service_accounts.delete(args.id)
        print(f"Deleted service account {args.id}; its keys no longer work.")


def _apps(client: Collab, args: argparse.Namespace) -> None:
    if args.action == "list":
        _show(_limit(client.oauth_apps.list(args.workspace), args.limit), args, "apps")
    elif args.action == "create":
        app = client.oauth_apps.create(
            args.workspace,
            name=args.name,
            client_type="public" if args.public else "confidential",
            redirect_uris=args.redirect_uri,
            scopes=args.scope,
        )
        _show(app, args, "apps")
    elif args.action == "delete":
        client.oauth_apps.delete(args.id)
        print(f"Deleted app {args.id}; its tokens no longer work.")


def _authorizations(client: Collab, args: argparse.Namespace) -> None:
    if args.action == "list":
        _show(_limit(client.authorizations.list(), args.limit), args, "authorizations")
    elif args.action == "revoke":
        client.authorizations.revoke(args.id)
        print(f"Revoked authorization {args.id}; the app's tokens no longer work.")


# What takes a sign-in (JWT): keys, an app's registration (a client secret), authorizations.
SIGNED_IN = {("apps", "create"), ("authorizations", "list"), ("authorizations", "revoke")}


def run(args: argparse.Namespace) -> None:
    command = (args.resource, args.action)
    if command in SIGNED_IN:
        with _client(args, jwt=True) as client:
            (_apps if args.resource == "apps" else _authorizations)(client, args)
            client.logout()
        return
    if args.resource == "keys":
        with _client(args, jwt=True) as client:
            if command == ("keys", "create"):
                made = {
                    "name": args.name,
                    "scopes": args.scope,
                    "expires_in": args.expires_in,
                    "projects": args.project if args.project else UNSET,
                }
                if args.service_account is not None:
                    key = client.service_accounts.create_key(args.service_account, **made)
                else:
                    key = client.api_keys.create(**made)
                _show(key, args, "keys")
            elif command == ("keys", "list"):
                _show(_limit(client.api_keys.list(), args.limit), args, "keys")
            elif command == ("keys", "revoke"):
                client.api_keys.revoke(args.id)
                print(f"Revoked key {args.id}.")
            client.logout()
        return
    with _client(args) as client:
        if args.resource == "service-accounts":
            _service_accounts(client, args)
        elif args.resource == "apps":
            _apps(client, args)
        elif command == ("audit", "list"):
            entries = client.audit_log.list(args.workspace, type=args.type, actor_id=args.actor)
            _show(_limit(entries, args.limit), args, "audit")
        elif command == ("projects", "list"):
            projects = client.projects.list(workspace_id=args.workspace, status=args.status)
            _show(_limit(projects, args.limit), args, "projects")
        elif command == ("projects", "create"):
            project = client.projects.create(
                name=args.name,
                description=args.description,
                visibility=args.visibility,
                workspace_id=args.workspace,
            )
            _show(project, args, "projects")
        elif command == ("issues", "list"):
            pager = client.issues.list(
                args.project,
                status=args.status,
                assignee=args.assignee,
                labels=args.label or None,
                q=args.q,
            )
            _show(_limit(pager, args.limit), args, "issues")
        elif command == ("issues", "create"):
            created = client.issues.create(
                args.project,
                title=args.title,
                description=args.description,
                priority=args.priority,
                type=args.type,
                labels=args.label or UNSET,
            )
            _show(created, args, "issues")
        elif command == ("issues", "close"):
            _show(client.issues.update(args.id, status="closed"), args, "issues")
        elif args.resource == "export":
            _export(client, args)
        elif command == ("workspaces", "list"):
            _show(_limit(client.workspaces.list(), args.limit), args, "workspaces")
        elif command == ("events", "tail"):
            stream = client.events.stream(
                project_id=args.project, types=args.types, last_event_id=args.since
            )
            for event in stream:
                if args.json:
                    print(json.dumps(event.to_dict(), sort_keys=True), flush=True)
                else:
                    print(f"{event.id}  {event.created_at}  {event.type}", flush=True)


def _export(client: Collab, args: argparse.Namespace) -> None:
    workspace = args.workspace
    if args.action == "list":
        _show(_limit(client.exports.list(workspace), args.limit), args, "exports")
        return
    if args.action == "create":
        export = client.exports.create(workspace, include_events=args.include_events)
        export_id = export.id
        if export_id is None:
            raise SystemExit("collab: the server answered no export id")
        if args.wait or args.output:
            export = _export_wait(client, workspace, export_id, args.timeout)
        if args.output:
            written = client.exports.download(workspace, export_id, to=args.output)
            print(f"Wrote export {export_id} ({written} bytes) to {args.output}.", file=sys.stderr)
        _show(export, args, "exports")
        return
    if args.action == "get":
        _show(client.exports.get(workspace, args.id), args, "exports")
        return
    written = client.exports.download(workspace, args.id, to=args.output)
    print(f"Wrote export {args.id} ({written} bytes) to {args.output}.", file=sys.stderr)


def _export_wait(client: Collab, workspace: int, export_id: int, timeout: float) -> Any:
    """The export once a worker has finished it; a failed one (or none in time) is an error."""
    deadline = time.monotonic() + timeout
    while True:
        export = client.exports.get(workspace, export_id)
        if export.status == "completed":
            return export
        if export.status == "failed":
            raise SystemExit(f"collab: export {export_id} failed: {export.error}")
        if time.monotonic() >= deadline:
            raise SystemExit(
                f"collab: export {export_id} is still {export.status} after {timeout:g} s"
            )
        time.sleep(EXPORT_POLL_SECONDS)


def parser() -> argparse.ArgumentParser:
    from . import __version__

    top = argparse.ArgumentParser(prog="collab", description="The Collab API from a shell.")
    top.add_argument("--version", action="version", version=f"collab-client {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="the server (default: $COLLAB_URL)")
    common.add_argument("--api-key", help="an API key (default: $COLLAB_API_KEY)")
    common.add_argument("--json", action="store_true", help="JSON instead of a table")
    common.add_argument("--limit", type=int, help="at most this many rows")
    resources = top.add_subparsers(dest="resource", required=True)

    projects = resources.add_parser("projects").add_subparsers(dest="action", required=True)
    listing = projects.add_parser("list", parents=[common])
    listing.add_argument("--workspace", type=int)
    listing.add_argument("--status", choices=["active", "archived"])
    create = projects.add_parser("create", parents=[common])
    create.add_argument("--name", required=True)
    create.add_argument("--description")
    create.add_argument("--visibility", choices=["private", "internal", "public"])
    create.add_argument("--workspace", type=int)

    issues = resources.add_parser("issues").add_subparsers(dest="action", required=True)
    listing = issues.add_parser("list", parents=[common])
    listing.add_argument("--project", type=int)
    listing.add_argument("--status")
    listing.add_argument("--assignee")
    listing.add_argument("--label", action="append")
    listing.add_argument("--q")
    create = issues.add_parser("create", parents=[common])
    create.add_argument("--project", type=int, required=True)
    create.add_argument("--title", required=True)
    create.add_argument("--description")
    create.add_argument("--priority", choices=["low", "medium", "high", "critical"])
    create.add_argument("--type", choices=["bug", "feature", "task", "improvement"])
    create.add_argument("--label", action="append")
    close = issues.add_parser("close", parents=[common])
    close.add_argument("id", type=int)

    workspaces = resources.add_parser("workspaces").add_subparsers(dest="action", required=True)
    workspaces.add_parser("list", parents=[common])

    sign_in = argparse.ArgumentParser(add_help=False)
    sign_in.add_argument("--email", help="default: $COLLAB_EMAIL")
    sign_in.add_argument("--password", help="default: $COLLAB_PASSWORD")
    keys = resources.add_parser("keys").add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", parents=[common, sign_in])
    create.add_argument("--name", required=True)
    create.add_argument("--scope", action="append", required=True, help="repeat for several")
    create.add_argument(
        "--project",
        action="append",
        type=int,
        help="limit the key to this project (an id); repeat for several",
    )
    create.add_argument("--expires-in", default="90d", help="90d, 12h, 1y or never")
    create.add_argument(
        "--service-account", type=int, help="a key of this service account (an id), not yours"
    )
    keys.add_parser("list", parents=[common, sign_in])
    revoke = keys.add_parser("revoke", parents=[common, sign_in])
    revoke.add_argument("id", type=int)

    robots = resources.add_parser(
        "service-accounts", help="a workspace's identities for programs"
    ).add_subparsers(dest="action", required=True)
    of_workspace = argparse.ArgumentParser(add_help=False)
    of_workspace.add_argument("--workspace", type=int, required=True)
    robots.add_parser("list", parents=[common, of_workspace])
    create = robots.add_parser("create", parents=[common, of_workspace])
    create.add_argument("--name", required=True)
    create.add_argument("--role", choices=["admin", "developer", "viewer"], default="developer")
    create.add_argument("--project", action="append", type=int, help="a team it joins; repeat")
    create.add_argument("--tier", choices=["standard", "premium", "enterprise"], default="standard")
    delete = robots.add_parser("delete", parents=[common])
    delete.add_argument("id", type=int)

    apps = resources.add_parser(
        "apps", help="a workspace's OAuth apps (third-party tools people authorise)"
    ).add_subparsers(dest="action", required=True)
    apps.add_parser("list", parents=[common, of_workspace])
    create = apps.add_parser("create", parents=[common, of_workspace, sign_in])
    create.add_argument("--name", required=True)
    create.add_argument(
        "--redirect-uri", action="append", required=True, help="https, or http on the loopback"
    )
    create.add_argument("--scope", action="append", required=True, help="repeat for several")
    create.add_argument(
        "--public", action="store_true", help="a public client (no secret: PKCE alone)"
    )
    delete = apps.add_parser("delete", parents=[common])
    delete.add_argument("id", type=int)

    authorizations = resources.add_parser(
        "authorizations", help="the apps you authorised"
    ).add_subparsers(dest="action", required=True)
    authorizations.add_parser("list", parents=[common, sign_in])
    revoke = authorizations.add_parser("revoke", parents=[common, sign_in])
    revoke.add_argument("id", type=int)

    audit = resources.add_parser(
        "audit", help="a workspace's audit log of credentials (owners and admins)"
    ).add_subparsers(dest="action", required=True)
    listing = audit.add_parser("list", parents=[common, of_workspace])
    listing.add_argument("--type", help="only this kind (api_key.created ...)")
    listing.add_argument("--actor", type=int, help="only what this user did (an id)")

    export = resources.add_parser("export", help="a workspace as one archive").add_subparsers(
        dest="action", required=True
    )
    in_workspace = argparse.ArgumentParser(add_help=False)
    in_workspace.add_argument("--workspace", type=int, required=True)
    create = export.add_parser("create", parents=[common, in_workspace])
    create.add_argument("--include-events", action="store_true", help="the event log too")
    create.add_argument("--wait", action="store_true", help="until it is built (or failed)")
    create.add_argument("--output", help="wait, then download the archive to this file")
    create.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")
    export.add_parser("list", parents=[common, in_workspace])
    get = export.add_parser("get", parents=[common, in_workspace])
    get.add_argument("id", type=int)
    download = export.add_parser("download", parents=[common, in_workspace])
    download.add_argument("id", type=int)
    download.add_argument("--output", required=True, help="the file to write")

    events = resources.add_parser("events").add_subparsers(dest="action", required=True)
    tail = events.add_parser("tail", parents=[common])
    tail.add_argument("--project", type=int)
    tail.add_argument("--types", help="comma-separated kinds, issue.* allowed")
    tail.add_argument("--since", type=int, help="replay what came after this event id")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for name in ("description", "visibility", "workspace", "priority", "type"):
        if getattr(args, name, None) is None and hasattr(args, name):
            setattr(args, name, _unset_or_none(args.action, name))
    try:
        run(args)
    except CollabError as error:
        print(f"collab: {error}", file=sys.stderr)
        for field, messages in (error.details or {}).items():
            print(f"  {field}: {messages}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _unset_or_none(action: str, name: str) -> Any:
    """An option not given: left out of a create's body, no filter on a list."""
    return UNSET if action == "create" else None


if __name__ == "__main__":
    sys.exit(main())
