"""Each client's resources are typed as that client answers: ``Collab``'s methods return the
result, ``AsyncCollab``'s an awaitable of it (lists: an ``AsyncPager``)."""

import collections.abc
import inspect
import types
import typing

import pytest
from collab_client import AsyncCollab, AsyncPager, Collab, Pager

RESOURCES = [
    "projects", "members", "issues", "labels", "repositories", "pulls", "comments", "webhooks",
    "deliveries", "events", "metrics", "reports", "dashboard", "search", "users", "workspaces",
    "invitations", "api_keys", "rate_limit", "auth",
]  # fmt: skip


def _returns(resource: object) -> dict[str, object]:
    methods = inspect.getmembers(type(resource), inspect.isfunction)
    return {
        name: typing.get_type_hints(method)["return"]
        for name, method in methods
        if not name.startswith("_")
    }


def _origins(hint: object) -> set[object]:
    """The generic classes a return type is made of (``A[X] | B[Y]``: A and B)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return set().union(*(_origins(arm) for arm in typing.get_args(hint)))
    return {typing.get_origin(hint) or hint}


ASYNC_RESULTS = {collections.abc.Awaitable, AsyncPager, collections.abc.AsyncIterator}


@pytest.mark.parametrize("name", RESOURCES)
def test_async_methods_are_typed_as_awaitables(name):
    client = AsyncCollab("http://127.0.0.1:9", api_key="clb_unused")
    returns = _returns(getattr(client, name))
    assert returns
    for method, hint in returns.items():
        assert _origins(hint) <= ASYNC_RESULTS, (name, method, hint)


@pytest.mark.parametrize("name", RESOURCES)
def test_blocking_methods_are_typed_as_their_results(name):
    client = Collab("http://127.0.0.1:9", api_key="clb_unused")
    returns = _returns(getattr(client, name))
    assert returns
    for method, hint in returns.items():
        assert not _origins(hint) & ASYNC_RESULTS, (name, method, hint)
    if "list" in returns:
        assert _origins(returns["list"]) == {Pager}, (name, returns["list"])
