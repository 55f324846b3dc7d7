"""Lists: iterate every record lazily, page by page, or take one page with its ``meta``.

    for issue in client.issues.list(project_id=1, status="open"):    # every page, as needed
        ...
    page = client.issues.list(project_id=1).page(2, per_page=50)     # one page
    page.data, page.meta.total, page.meta.total_pages

``AsyncCollab`` gives the same with ``async for`` and ``await pager.page(2)``.
"""

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .models import PageMeta

if TYPE_CHECKING:
    from ._client import AsyncCollab, Collab

T = TypeVar("T")
DEFAULT_PER_PAGE = 100  # the most the API gives per page: fewest requests for a full walk


@dataclass
class Page(Generic[T]):
    data: list[T]
    meta: PageMeta

    @property
    def has_next(self) -> bool:
        return (self.meta.page or 0) < (self.meta.total_pages or 0)


def _page(model: Any, body: dict[str, Any]) -> Page[Any]:
    data = [model.from_dict(item) if model else item for item in body.get("data") or []]
    return Page(data=data, meta=PageMeta.from_dict(body.get("meta") or {}))


class Pager(Generic[T]):
    def __init__(self, client: "Collab", path: str, params: dict[str, Any], model: Any):
        self._client, self._path, self._params, self._model = client, path, params, model

    def page(self, number: int = 1, per_page: int | None = None) -> Page[T]:
        params = {**self._params, "page": number, "per_page": per_page or self._per_page()}
        body = self._client.request("GET", self._path, params=params, model=None, raw=True)
        return _page(self._model, body)

    def _per_page(self) -> int:
        return self._params.get("per_page") or DEFAULT_PER_PAGE

    def __iter__(self) -> Iterator[T]:
        number = 1
        while True:
            page = self.page(number)
            yield from page.data
            if not page.has_next or not page.data:
                return
            number += 1

    def all(self) -> list[T]:
        return list(self)


class AsyncPager(Generic[T]):
    def __init__(self, client: "AsyncCollab", path: str, params: dict[str, Any], model: Any):
        self._client, self._path, self._params, self._model = client, path, params, model

    async def page(self, number: int = 1, per_page: int | None = None) -> Page[T]:
        params = {**self._params, "page": number, "per_page": per_page or self._per_page()}
        body = await self._client.request("GET", self._path, params=params, raw=True)
        return _page(self._model, body)

    def _per_page(self) -> int:
        return self._params.get("per_page") or DEFAULT_PER_PAGE

    async def __aiter__(self) -> AsyncIterator[T]:
        number = 1
        while True:
            page = await self.page(number)
            for item in page.data:
                yield item
            if not page.has_next or not page.data:
                return
            number += 1

    async def all(self) -> list[T]:
        return [item async for item in self]
