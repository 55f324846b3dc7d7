"""``workspace_import``: an archive of ``workspace_export`` brought in as a new workspace.

The archive is unpacked and checked against its manifest first (``transfer.archive``); then,
in one transaction, every record type of ``transfer.kinds`` is written in its order, a batch
at a time, each record given a new id and its references rewritten through the ids already
given. Numbers (issues, pull requests, each project's and repository's last number), times,
actors and counts are written as they were, so what people see is what they saw.

The rows go in as the bulk loads of ``issues.seeding`` write them: on PostgreSQL ids drawn
from each table's own sequence, then ``COPY``; on SQLite (which holds the database's write lock
for the whole transaction) ids following the table's highest, then one ``INSERT`` per batch.
Neither runs ``save()``: what the services keep beside the rows is rebuilt afterwards from
them (status counters, facet and word counters, the analytics rollups).

People are matched by email to existing accounts; the others are created, inactive and
invited through ``accounts.services.invitation_create`` when they are members, unless the
archive carries their password hashes (``--include-credentials``), which lets them sign in as
before. Repositories' mirrors are restored from their bundles, and a sync is asked for.

Anything wrong (a member that does not parse, a reference to nothing, a row the database
refuses, a bundle git cannot read) raises ``ArchiveError`` naming the member and the line,
and leaves nothing behind: the transaction rolls back and the restored mirrors are removed.
"""

import logging
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.models import DateTimeField, F, JSONField
from django.db.models.functions import Greatest
from django.utils import timezone

from accounts import invitation_tokens, keys
from accounts.handles import HANDLE_PATTERN
from accounts.models import Invitation, Membership, Role, User, Workspace
from accounts.services import _unique_slug, invitation_create
from analytics.tasks import analytics_rollup_project
from comments.markdown import sanitize
from gitintegration import git
from gitintegration.models import Repository
from gitintegration.services import repository_sync_request
from integrations.services import service_user_create
from issues import facets
from issues.models import IssueSequence
from issues.services import issue_counts_rebuild
from notifications.crypto import secret_encrypt
from projects.models import Project

from .archive import ArchiveError, ArchiveReader
from .kinds import HISTORY_REFERENCES, KINDS, USERS, Kind, history_value_remap

logger = logging.getLogger(__name__)

BATCH_SIZE = 5_000
Progress = Callable[[int], None]
_HANDLE = re.compile(HANDLE_PATTERN)
REFERENCED = {target for kind in KINDS for target in kind.refs.values()} | HISTORY_REFERENCES
# What the database (or Django adapting a value for it) says of a row it will not take; COPY
# raises the driver's own errors, which Django does not wrap.
_REFUSALS = (DatabaseError, ValidationError, ValueError, TypeError)


def workspace_import(
    *, path: Path, name: str | None = None, progress: Progress | None = None
) -> Workspace:
    """Bring the archive at ``path`` in as a new workspace (named ``name`` when given).

    ``progress(n)`` is called with the number of records just written. Raises
    ``ArchiveError`` on any bad input, having written nothing.
    """
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="collab-import-") as folder:
        reader = ArchiveReader(path, folder=Path(folder))
        manifest = reader.open()
        importer = _Importer(reader, progress=progress, version=manifest["format_version"])
        try:
            with transaction.atomic():
                workspace = importer.run(name=name)
        except BaseException:
            importer.mirrors_remove()
            raise
    logger.info(
        "archive %s imported as workspace %s: %s records in %.1f s",
        path.name,
        workspace.pk,
        importer.written,
        time.monotonic() - started,
        extra={"format_version": manifest["format_version"]},
    )
    return workspace


def _values(
    row: dict[str, Any], attnames: list[str], converters: list[tuple[int, Callable[[Any], Any]]]
) -> list[Any]:
    values = [row[name] for name in attnames]
    for position, convert in converters:
        if values[position] is not None:
            values[position] = convert(values[position])
    return values


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _sqlite_datetime(value: Any) -> str:
    """SQLite keeps UTC text in Django's own layout, compared as text."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return str(connection.ops.adapt_datetimefield_value(moment.astimezone(UTC)))


class _Importer:
    def __init__(self, reader: ArchiveReader, *, progress: Progress | None, version: int):
        self.reader = reader
        self.version = version  # the archive's format version
        self.progress = progress
        self.maps: dict[str, dict[int, int]] = {}
        self.written = 0
        self.now = timezone.now()
        self.postgresql = connection.vendor == "postgresql"
        self.mirrors: list[Path] = []
        self.invited: set[int] = set()  # people created here, to be invited
        self.pending: list[int] = []  # pending invitations, whose emails go after commit
        self.sequences: dict[int, int] = {}  # new project id: its last issue number

    # The order of the work -------------------------------------------------------------

    def run(self, *, name: str | None) -> Workspace:
        self._users()
        workspace = self._workspace(name)
        for kind in KINDS[2:]:
            older = self.version < kind.since  # made before the format held this member
            if (kind.events or older) and not self.reader.has(kind.member):
                continue
            if not self.reader.has(kind.member):
                raise ArchiveError("the archive lacks this member", member=kind.member)
            self._kind(kind)
        self._invite(workspace)
        self._mirrors_restore()
        self._rebuild()
        return workspace

    # People and the workspace ------------------------------------------------------------

    def _users(self) -> None:
        kind = KINDS[0]
        rows = list(self._records(kind))
        emails = {}
        for line, record in rows:
            email = record.get("email")
            if not isinstance(email, str) or "@" not in email:
                raise ArchiveError("the record has no email address", member=kind.member, line=line)
            emails[line] = User.objects.normalize_email(email).lower()
        existing = dict(
            User.objects.filter(email__in=set(emails.values())).values_list("email", "pk")
        )
        mapping: dict[int, int] = {}
        for line, record in rows:
            old, email = self._old_id(kind, line, record), emails[line]
            if record.get("kind") == User.Kind.SERVICE:
                # A service account is its workspace's own: the copy gets one of its own,
                # whoever else holds the one it was copied from.
                mapping[old] = self._service_user_create(kind, line, record).pk
                continue
            if email in existing:
                mapping[old] = existing[email]
                continue
            user = self._user_create(kind, line, record, email)
            existing[email] = mapping[old] = user.pk
        self.maps[USERS] = mapping
        self._count(len(rows))

    def _user_create(self, kind: Kind, line: int, record: dict[str, Any], email: str) -> User:
        handle = record.get("handle")
        if not (isinstance(handle, str) and _HANDLE.fullmatch(handle)):
            handle = ""
        elif User.objects.filter(handle=handle).exists():
            handle = ""  # taken here: save() derives another from the email
        password = record.get("password")
        user = User(
            email=email,
            handle=handle,
            name=str(record.get("name") or "")[:150],
            created_at=self._datetime(kind, line, record.get("created_at")) or self.now,
        )
        if isinstance(password, str) and password:
            # Brought with --include-credentials: they sign in as before.
            user.password = password
            status = record.get("status")
            user.status = status if status in User.Status.values else User.Status.ACTIVE
        else:
            user.set_unusable_password()
            user.status = User.Status.INVITED
        user.save()
        if user.status == User.Status.INVITED and not password:
            self.invited.add(user.pk)
        return user

    def _service_user_create(self, kind: Kind, line: int, record: dict[str, Any]) -> User:
        handle, tier, password = record.get("handle"), record.get("tier"), record.get("password")
        return service_user_create(
            name=str(record.get("name") or "")[:150] or "Service account",
            tier=tier if tier in User.Tier.values else User.Tier.STANDARD,
            handle=handle if isinstance(handle, str) and _HANDLE.fullmatch(handle) else "",
            email=User.objects.normalize_email(str(record.get("email") or "")).lower(),
            password=password if isinstance(password, str) else "",
            created_at=self._datetime(kind, line, record.get("created_at")),
        )

    def _workspace(self, name: str | None) -> Workspace:
        kind = KINDS[1]
        rows = list(self._records(kind))
        if len(rows) != 1:
            raise ArchiveError("the archive holds one workspace", member=kind.member)
        line, record = rows[0]
        name = (name or str(record.get("name") or "")).strip()[:200]
        if not name:
            raise ArchiveError("the workspace has no name", member=kind.member, line=line)
        workspace = Workspace.objects.create(
            name=name,
            slug=_unique_slug(name),
            created_at=self._datetime(kind, line, record.get("created_at")) or self.now,
        )
        self.maps["workspace"] = {self._old_id(kind, line, record): workspace.pk}
        self._count(1)
        return workspace

    # Every other record type -----------------------------------------------------------

    def _kind(self, kind: Kind) -> None:
        model = kind.model
        pk = model._meta.pk
        fields = [f for f in model._meta.concrete_fields if not f.generated]
        # What the archive may lack (a secret without --include-credentials) or never holds
        # (what an import makes anew: a token, rendered HTML) is filled by _adapt.
        filled = set(kind.secret) | set(kind.omit)
        required = [
            f.attname
            for f in fields
            if f.attname not in filled | set(kind.workspace_added)
            and (f is not pk or not kind.own_id)
        ]
        optional = [f.attname for f in fields if f.attname in filled]
        # The archive's workspace, as the archive numbers it.
        workspace_old = next(iter(self.maps["workspace"]))
        columns = [f.column for f in fields]
        attnames = [f.attname for f in fields]
        # Values the driver cannot take as the archive has them, by position in the row.
        converters: list[tuple[int, Callable[[Any], Any]]] = [
            (position, _json_text) for position, f in enumerate(fields) if isinstance(f, JSONField)
        ]
        if not self.postgresql:
            converters += [
                (position, _sqlite_datetime)
                for position, f in enumerate(fields)
                if isinstance(f, DateTimeField)
            ]
        adapt = self._adapters.get(kind.name)
        mapping: dict[int, int] = {}
        # Old id to new, kept only for the types other records name: a million issues' map
        # is a hundred megabytes, and three million history rows' would be three times that.
        if kind.name in REFERENCED:
            self.maps[kind.name] = mapping
        batch: list[tuple[int, int, dict[str, Any]]] = []
        for line, record in self._records(kind):
            old = self._old_id(kind, line, record) if kind.own_id else 0
            if old in mapping:
                raise ArchiveError(f"id {old} appears twice", member=kind.member, line=line)
            try:
                row = {name: record[name] for name in required}
            except KeyError as missing:
                raise ArchiveError(
                    f"the record lacks {missing.args[0]!r}", member=kind.member, line=line
                ) from None
            for name in optional:
                row[name] = record.get(name)
            for name in kind.workspace_added:
                row[name] = record.get(name, workspace_old)
            try:
                self._refs(kind, line, row)
                if adapt is not None:
                    adapt(row, record)
            except (TypeError, ValueError) as exc:
                raise ArchiveError(
                    f"not a valid record ({exc})", member=kind.member, line=line
                ) from None
            batch.append((line, old, row))
            if len(batch) >= BATCH_SIZE:
                self._write(kind, batch, columns, attnames, converters, mapping)
                batch = []
        if batch:
            self._write(kind, batch, columns, attnames, converters, mapping)

    def _refs(self, kind: Kind, line: int, row: dict[str, Any]) -> None:
        for name, target in kind.refs.items():
            old = row[name]
            if old is None:
                continue
            new = self.maps[target].get(old) if type(old) is int else None
            if new is None:
                if kind.loose:
                    row[name] = None
                    continue
                raise ArchiveError(
                    f"{name} {old!r} names no record of {target}.jsonl",
                    member=kind.member,
                    line=line,
                )
            row[name] = new

    @property
    def _adapters(self) -> dict[str, Callable[[dict[str, Any], dict[str, Any]], None]]:
        """What a record type needs beyond its columns and references."""
        return {
            "comments": self._comment,
            "issue_history": self._history,
            "invitations": self._invitation,
            "webhooks": self._webhook,
            "repositories": self._repository,
            "events": self._event,
        }

    def _comment(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        if not isinstance(row["body_html"], str):
            raise ValueError("body_html is not text")
        # As rendered where it was written (a render costs a millisecond or more), and
        # through the sanitiser again: an archive is input like any other.
        row["body_html"] = sanitize(row["body_html"])

    def _history(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        for name in ("old_value", "new_value"):
            row[name] = history_value_remap(row["field"], row[name], self._lookup)

    def _invitation(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        nonce, token = invitation_tokens.token_issue()
        row["token_nonce"], row["token_hash"] = nonce, keys.hash_key(token)
        if row["status"] == Invitation.Status.PENDING:
            row.update(
                email_status=Invitation.EmailStatus.QUEUED,
                email_error="",
                email_attempts=0,
                email_queued_at=self.now.isoformat(),
            )

    def _webhook(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        secret = record.get("secret")
        if not isinstance(secret, str) or not secret:
            # No credentials in the archive: a new secret, shown to no one until the
            # webhook is edited; receivers refuse the deliveries meanwhile.
            secret = secrets.token_hex(20)
        row["secret_encrypted"] = secret_encrypt(secret)

    def _repository(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        if not isinstance(row.get("webhook_secret"), str) or not row["webhook_secret"]:
            row["webhook_secret"] = secrets.token_hex(20)

    def _event(self, row: dict[str, Any], record: dict[str, Any]) -> None:
        # Sent once already, by the instance that recorded them: never fanned out again.
        row["dispatched_at"] = row["dispatched_at"] or self.now.isoformat()
        row["traceparent"] = ""

    def _lookup(self, target: str, old: int) -> int | None:
        return self.maps.get(target, {}).get(old)

    def _write(
        self,
        kind: Kind,
        batch: list[tuple[int, int, dict[str, Any]]],
        columns: list[str],
        attnames: list[str],
        converters: list[tuple[int, Callable[[Any], Any]]],
        mapping: dict[int, int],
    ) -> None:
        model = kind.model
        pk = model._meta.pk.attname
        first, last = batch[0][0], batch[-1][0]
        if kind.own_id:
            ids = self._ids_reserve(kind, len(batch))
            keep = kind.name in REFERENCED
            for (_line, old, row), new in zip(batch, ids, strict=True):
                row[pk] = new
                if keep:
                    mapping[old] = new
        driver_error: type[Exception] = connection.Database.Error  # type: ignore[attr-defined]
        try:
            rows = (_values(row, attnames, converters) for _line, _old, row in batch)
            table = model._meta.db_table
            with transaction.atomic(), connection.cursor() as cursor:
                if self.postgresql:
                    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
                    with cursor.copy(sql) as copy:
                        for values in rows:
                            copy.write_row(values)
                else:
                    marks = ", ".join(["%s"] * len(columns))
                    cursor.executemany(
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",  # noqa: S608
                        list(rows),
                    )
        except (*_REFUSALS, driver_error) as exc:
            where = f"line {first}" if first == last else f"lines {first} to {last}"
            raise ArchiveError(
                f"refused by the database ({str(exc).strip()[:300]}), in {where}",
                member=kind.member,
                line=first,
            ) from None
        if kind.name == "issue_sequences":
            self.sequences.update((row["project_id"], row["last_number"]) for *_, row in batch)
        elif kind.name == "invitations":
            self.pending += [
                row[pk] for *_, row in batch if row["status"] == Invitation.Status.PENDING
            ]
        self._count(len(batch))

    def _ids_reserve(self, kind: Kind, count: int) -> list[int]:
        table = kind.model._meta.db_table
        column = kind.model._meta.pk.column
        with connection.cursor() as cursor:
            if self.postgresql:
                # The table's own sequence: later inserts through the ORM never collide.
                cursor.execute(
                    "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                    [table, column, count],
                )
                return [row[0] for row in cursor.fetchall()]
            # The transaction holds SQLite's one write lock (the people went in first): the
            # ids after the highest ever given (AUTOINCREMENT's record) are free.
            cursor.execute(
                f"SELECT MAX(COALESCE((SELECT MAX({column}) FROM {table}), 0), "  # noqa: S608
                "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0))",
                [table],
            )
            start = cursor.fetchone()[0] + 1
            return list(range(start, start + count))

    # After the rows ---------------------------------------------------------------------

    def _invite(self, workspace: Workspace) -> None:
        """Emails for the pending invitations brought in (their new tokens), and invitations
        for the members created here without a password."""
        from accounts.tasks import invitation_send_email

        for invitation_id in self.pending:
            transaction.on_commit(
                partial(invitation_send_email.delay, invitation_id=invitation_id), robust=True
            )
        already = set(
            Invitation.objects.filter(
                workspace=workspace, status=Invitation.Status.PENDING
            ).values_list("user_id", flat=True)
        )
        members = (
            Membership.objects.filter(workspace=workspace, user_id__in=self.invited - already)
            .select_related("user")
            .order_by("pk")
        )
        for membership in members:
            invitation_create(
                workspace=workspace,
                inviter=None,  # type: ignore[arg-type]  # an operator's command: no one
                email=membership.user.email,
                role=membership.role or Role.DEVELOPER,
                projects=[],
            )

    def _mirrors_restore(self) -> None:
        bundles = self.reader.manifest.get("repositories") or {}
        if not isinstance(bundles, dict):
            raise ArchiveError("repositories is not a mapping", member="manifest.json")
        mapping = self.maps.get("repositories", {})
        for old, member in bundles.items():
            if member is None:
                continue
            new = mapping.get(int(old)) if str(old).isdigit() else None
            if new is None or not isinstance(member, str) or not self.reader.has(member):
                raise ArchiveError(f"no repository or bundle for {old!r}", member="manifest.json")
            path = git.mirror_path(new)
            if path.exists():  # left by an import rolled back before this one (SQLite ids)
                shutil.rmtree(path)
            self.mirrors.append(path)
            bundle = str(self.reader.file(member))
            try:
                git.run(["init", "--bare", "--quiet", str(path)])
                git.run(["bundle", "verify", "--quiet", bundle], cwd=path)
                git.run(["fetch", "--quiet", "--", bundle, "+refs/*:refs/*"], cwd=path)
            except git.GitError as exc:
                raise ArchiveError(
                    f"not a git bundle git can read ({exc})", member=member
                ) from None
            default = Repository.objects.filter(pk=new).values_list("default_branch", flat=True)
            branch = default.get()
            if branch and branch in git.branch_names(path):
                git.run(["symbolic-ref", "HEAD", f"refs/heads/{branch}"], cwd=path)
        for repository in Repository.objects.filter(pk__in=mapping.values()):
            repository_sync_request(repository=repository)

    def mirrors_remove(self) -> None:
        for path in self.mirrors:
            shutil.rmtree(path, ignore_errors=True)

    def _rebuild(self) -> None:
        project_ids = sorted(self.maps.get("projects", {}).values())
        for project in Project.objects.filter(pk__in=project_ids).order_by("pk"):
            issue_counts_rebuild(project=project)
            # The rebuild sets the last number to the highest issue's; a deleted issue's
            # number stays taken, as the archive's sequence says.
            carried = self.sequences.get(project.pk, 0)
            IssueSequence.objects.filter(project=project).update(
                last_number=Greatest(F("last_number"), carried)
            )
            # Days of history take seconds per project: the worker computes them once the
            # workspace is in (until then the dashboards count from the rows, as for any day
            # not rolled up yet).
            transaction.on_commit(
                partial(analytics_rollup_project.delay, project_id=project.pk, full=True),
                robust=True,
            )
        # The facet and word counters were counted by their triggers as the rows went in (in
        # the statements that wrote them); folding them leaves one row per key, as a rebuild
        # would, at the cost of what was written rather than of a second pass over every
        # issue's words.
        facets.compact()

    # Reading ----------------------------------------------------------------------------

    def _records(self, kind: Kind) -> Iterator[tuple[int, dict[str, Any]]]:
        return self.reader.records(kind.member)

    def _old_id(self, kind: Kind, line: int, record: dict[str, Any]) -> int:
        old = record.get(kind.model._meta.pk.attname)
        if type(old) is not int:
            raise ArchiveError("the record has no id", member=kind.member, line=line)
        return old

    def _datetime(self, kind: Kind, line: int, value: Any) -> datetime | None:
        if value is None:
            return None
        try:
            moment = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise ArchiveError(f"{value!r} is not a time", member=kind.member, line=line) from None
        if moment.tzinfo is None:
            raise ArchiveError(f"{value!r} has no time zone", member=kind.member, line=line)
        return moment

    def _count(self, count: int) -> None:
        self.written += count
        if self.progress is not None:
            self.progress(count)


__all__ = ["ArchiveError", "workspace_import"]
