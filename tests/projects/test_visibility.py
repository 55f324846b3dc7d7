"""``project_visible`` (one loaded project, decided in Python) gives the answer of
``project_visibility_q`` (the same rule in SQL) for every persona and every visibility."""

import pytest

from projects.models import Project
from projects.selectors import project_get, project_visibility_q, project_visible
from tests.factories import ProjectFactory, ProjectMemberFactory, UserFactory

PERSONAS = ("owner", "admin", "developer", "viewer", "outsider")


@pytest.mark.parametrize("visibility", Project.Visibility.values)
@pytest.mark.parametrize("on_team", [False, True])
def test_python_and_sql_rules_agree(world, visibility, on_team):
    project = ProjectFactory(workspace=world.acme, visibility=visibility, created_by=world.owner)
    if on_team:
        for name in PERSONAS:
            ProjectMemberFactory(project=project, user=getattr(world, name))
    stranger = UserFactory(email="stranger@nowhere.test")
    for user in (*(getattr(world, name) for name in PERSONAS), stranger):
        in_sql = Project.objects.filter(project_visibility_q(user), pk=project.pk).exists()
        assert project_visible(user=user, project=project) is in_sql, (user.email, visibility)
        found = project_get(user=user, project_id=project.pk, with_team_count=False)
        assert (found == project) is in_sql


def test_project_get_hides_what_does_not_exist_like_what_may_not_be_seen(world):
    assert project_get(user=world.owner, project_id=world.other_project.pk) is None
    assert project_get(user=world.owner, project_id=10**9) is None
    assert project_get(user=world.owner, project_id="abc") is None
    found = project_get(user=world.owner, project_id=world.project.pk)
    assert found.team_count == 3


def test_a_project_loaded_for_one_reader_is_judged_afresh_for_another(world):
    """The team seat read with the project describes its reader, nobody else."""
    loaded = project_get(user=world.developer, project_id=world.project.pk)
    assert loaded.reader_on_team is True
    assert project_visible(user=world.developer, project=loaded) is True
    assert project_visible(user=world.outsider, project=loaded) is False
    stranger = UserFactory(email="nobody@nowhere.test")
    assert project_visible(user=stranger, project=loaded) is False
