"""The bases of the generated resources (``resources.py``): one call of the API, typed.

A method of a blocking resource answers its result; the same method of an asynchronous one
answers an awaitable of it (lists: a ``Pager`` or an ``AsyncPager``). The generated method
bodies are the same text for both: only these helpers differ.
"""

from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, TypeVar, cast

from ._types import AsyncRequester, ListOf, Requester
from .pagination import AsyncPager, Pager

T = TypeVar("T")


class Resource:
    """A group of operations of the blocking client."""

    def __init__(self, client: Requester) -> None:
        self._client = client

    def _one(self, model: type[T], method: str, path: str, **kwargs: Any) -> T:
        return cast(T, self._client.request(method, path, model=model, **kwargs))

    def _many(self, model: type[T], method: str, path: str, **kwargs: Any) -> list[T]:
        return cast(list[T], self._client.request(method, path, model=ListOf(model), **kwargs))

    def _none(self, method: str, path: str, **kwargs: Any) -> None:
        self._client.request(method, path, **kwargs)

    def _page(self, model: type[T], path: str, **params: Any) -> Pager[T]:
        return Pager(self._client, path, params, model)

    def _stream(self, params: dict[str, Any], **options: Any) -> Iterator[Any]:
        return self._client.stream(params, **options)

    def _download(self, path: str, destination: Any) -> int:
        return self._client.download(path, destination)


class AsyncResource:
    """A group of operations of the asynchronous client."""

    def __init__(self, client: AsyncRequester) -> None:
        self._client = client

    def _one(self, model: type[T], method: str, path: str, **kwargs: Any) -> Awaitable[T]:
        return self._client.request(method, path, model=model, **kwargs)

    def _many(self, model: type[T], method: str, path: str, **kwargs: Any) -> Awaitable[list[T]]:
        return self._client.request(method, path, model=ListOf(model), **kwargs)

    def _none(self, method: str, path: str, **kwargs: Any) -> Awaitable[None]:
        return self._client.request(method, path, **kwargs)

    def _page(self, model: type[T], path: str, **params: Any) -> AsyncPager[T]:
        return AsyncPager(self._client, path, params, model)

    def _stream(self, params: dict[str, Any], **options: Any) -> AsyncIterator[Any]:
        return self._client.stream(params, **options)

    def _download(self, path: str, destination: Any) -> Awaitable[int]:
        return self._client.download(path, destination)
