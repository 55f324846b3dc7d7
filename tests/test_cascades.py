"""collab.db.cascades: after migrate, every foreign key deletes (or clears) in the database as
its model's on_delete says; a second run changes nothing."""

import pytest
from django.apps import apps
from django.db import connection

from collab.db.cascades import database_cascades_sync
from tests.races import postgresql_only

pytestmark = [postgresql_only, pytest.mark.django_db]


def delete_action(table: str, column: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.confdeltype FROM pg_constraint c "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
            "WHERE c.contype = 'f' AND c.conrelid = %s::regclass AND a.attname = %s",
            [table, column],
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize(
    ("table", "column", "action"),
    [
        ("notifications_delivery", "webhook_id", "c"),
        ("notifications_deliveryattempt", "delivery_id", "c"),
        ("issues_issue", "project_id", "c"),
        ("comments_comment", "issue_id", "c"),
        ("gitintegration_review", "pull_request_id", "c"),
        ("accounts_membership", "workspace_id", "c"),
        ("accounts_apikey", "user_id", "c"),
        ("issues_issue", "assignee_id", "n"),  # SET_NULL
    ],
)
def test_foreign_keys_delete_in_the_database(table, column, action):
    assert delete_action(table, column) == action


def test_a_database_already_right_is_left_alone():
    models = list(apps.get_models(include_auto_created=True))
    assert database_cascades_sync(model_list=models) == []
