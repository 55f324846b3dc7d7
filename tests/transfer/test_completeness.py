"""Every model of every installed app is in the archive or left out with its reason (as Zulip's
and Sentry's exporters are held): a model added later fails here until it is one or the other."""

from django.apps import apps

from transfer.kinds import KINDS, LEFT_OUT


def test_every_model_is_exported_or_left_out_with_a_reason():
    exported = {kind.label for kind in KINDS}
    models = {model._meta.label for model in apps.get_models(include_auto_created=True)}
    forgotten = sorted(models - exported - set(LEFT_OUT))
    assert not forgotten, (
        f"Export these in transfer.kinds.KINDS or list them in LEFT_OUT: {forgotten}"
    )
    assert not exported & set(LEFT_OUT), "a model is both exported and left out"
    # Nothing listed that no longer exists: the lists say what the code does.
    assert set(LEFT_OUT) <= models, sorted(set(LEFT_OUT) - models)
    assert all(reason.strip() for reason in LEFT_OUT.values())


def test_each_record_type_is_its_own_member_and_names_only_exported_types():
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    for position, kind in enumerate(KINDS):
        earlier = set(names[:position])
        for column, target in kind.refs.items():
            assert target in earlier, f"{kind.name}.{column} points at {target}, written later"
