"""The client's leaf types: what a left-out argument is (``UNSET``), how a call asks for a
list of records (``ListOf``), and what a resource needs of a client (``Requester``).

Every other module may import this one; it imports none of them.
"""

from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


# An argument not given: left out of the body (``None`` is sent, as JSON null).
UNSET: Any = _Unset()


class ListOf(Generic[T]):
    """``model=ListOf(Issue)``: ``data`` is a list of records (not paginated)."""

    def __init__(self, model: type[T]):
        self.model = model


class Requester(Protocol):
    """What a blocking resource or pager needs: ``Collab``."""

    def request(self, method: str, path: str, *, raw: bool = False, **kwargs: Any) -> Any: ...

    def stream(self, params: dict[str, Any], **options: Any) -> Iterator[Any]: ...

    def download(self, path: str, destination: Any) -> int: ...


class AsyncRequester(Protocol):
    """What an asynchronous resource or pager needs: ``AsyncCollab``."""

    def request(
        self, method: str, path: str, *, raw: bool = False, **kwargs: Any
    ) -> Awaitable[Any]: ...

    def stream(self, params: dict[str, Any], **options: Any) -> AsyncIterator[Any]: ...

    def download(self, path: str, destination: Any) -> Awaitable[int]: ...
