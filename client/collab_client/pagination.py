"""Lists: iterate every record lazily, page by page, or take one page with its ``meta``.

    for issue in client.issues.list(project_id=1, status="open"):    # every page, as needed
        ...
    page = client.issues.list(project_id=1).page(2, per_page=50)     # one page
    page.data, page.meta.total, page.meta.total_pages
    later = client.issues.list(project_id=1).after(page.next_cursor)  # the page after it

Iterating follows the server's cursors (``meta.next_cursor``) from the first page on, so rows
created or deleted meanwhile neither repeat nor go missing, and a deep page costs the server
what the first does; from a server without cursors it counts pages instead.

``AsyncCollab`` gives the same with ``async for`` and ``await pager.page(2)``.
"""

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._types import AsyncRequester, Requester
from .models import PageMeta

T = TypeVar("T")
DEFAULT_PER_PAGE = 100  # the most the API gives per page: fewest requests for a full walk


@dataclass
class Page(Generic[T]):
    """One page. A page asked for by cursor has no number: its ``meta.page`` and
    ``meta.total_pages`` are ``None``, and ``meta.total`` counts the whole list."""

    data: list[T]
    meta: PageMeta

    @property
    def next_cursor(self) -> str | None:
        """What ``Pager.after`` takes for the next page; ``None`` on the last one."""
        return self.meta.next_cursor

    @property
    def has_next(self) -> bool:
        if self.meta.next_cursor is not None:
            return True
        return self.meta.page is not None and self.meta.page < (self.meta.total_pages or 0)


def _page(model: Any, body: dict[str, Any]) -> Page[Any]:
    data = [model.from_dict(item) if model else item for item in body.get("data") or []]
    return Page(data=data, meta=PageMeta.from_dict(body.get("meta") or {}))


def _following(page: Page[Any], number: int) -> dict[str, Any] | None:
    """The parameters of the page after ``page`` (number ``number``), or None after the last:
    its cursor when the server gave one, else its number."""
    if not page.data or not page.has_next:
        return None
    if page.next_cursor is not None:
        return {"cursor": page.next_cursor}
    return {"page": number + 1}


class Pager(Generic[T]):
    def __init__(self, client: Requester, path: str, params: dict[str, Any], model: Any) -> None:
        self._client, self._path, self._params, self._model = client, path, params, model

    def page(self, number: int = 1, per_page: int | None = None) -> Page[T]:
        return self._get({"page": number}, per_page)

    def after(self, cursor: str, per_page: int | None = None) -> Page[T]:
        """The page after the one whose ``next_cursor`` this is (with this pager's filters)."""
        return self._get({"cursor": cursor}, per_page)

    def _get(self, paging: dict[str, Any], per_page: int | None) -> Page[T]:
        params = {**self._params, **paging, "per_page": per_page or self._per_page()}
        body = self._client.request("GET", self._path, params=params, model=None, raw=True)
        return _page(self._model, body)

    def _per_page(self) -> int:
        return self._params.get("per_page") or DEFAULT_PER_PAGE

    def __iter__(self) -> Iterator[T]:
        number, page = 1, self.page(1)
        while True:
            yield from page.data
            following = _following(page, number)
            if following is None:
                return
            number += 1
            page = self._get(following, None)

    def all(self) -> list[T]:
        return list(self)


class AsyncPager(Generic[T]):
    def __init__(
        self, client: AsyncRequester, path: str, params: dict[str, Any], model: Any
    ) -> None:
        self._client, self._path, self._params, self._model = client, path, params, model

    async def page(self, number: int = 1, per_page: int | None = None) -> Page[T]:
        return await self._get({"page": number}, per_page)

    async def after(self, cursor: str, per_page: int | None = None) -> Page[T]:
        """The page after the one whose ``next_cursor`` this is (with this pager's filters)."""
        return await self._get({"cursor": cursor}, per_page)

    async def _get(self, paging: dict[str, Any], per_page: int | None) -> Page[T]:
        params = {**self._params, **paging, "per_page": per_page or self._per_page()}
        body = await self._client.request("GET", self._path, params=params, raw=True)
        return _page(self._model, body)

    def _per_page(self) -> int:
        return self._params.get("per_page") or DEFAULT_PER_PAGE

    async def __aiter__(self) -> AsyncIterator[T]:
        number, page = 1, await self.page(1)
        while True:
            for item in page.data:
                yield item
            following = _following(page, number)
            if following is None:
                return
            number += 1
            page = await self._get(following, None)

    async def all(self) -> list[T]:
        return [item async for item in self]
