"""``UNSET``: an argument not given at all, as opposed to one given as ``None``.

Update services take each field as a keyword argument defaulting to ``UNSET``, so that a PATCH
leaving a field out leaves it alone while one sending ``null`` clears it. ``given()`` keeps
the arguments that were given.
"""

from enum import Enum
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")


class Unset(Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> Literal[False]:
        return False


UNSET = Unset.UNSET

# A keyword argument that may be left out: ``title: Maybe[str] = UNSET``.
Maybe = Union[T, Unset]  # noqa: UP007 - a generic alias mypy reads; `T | Unset` it refuses


def given(**arguments: Any) -> dict[str, Any]:
    """The arguments that were given (not ``UNSET``), in the order they were passed."""
    return {name: value for name, value in arguments.items() if value is not UNSET}
