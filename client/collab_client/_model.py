"""The base of every typed result: a dataclass read leniently from the API's JSON.

A field the server adds after this client was released is kept in ``extra`` instead of
breaking ``from_dict``; a field it stops sending reads as ``None``. Nested records become
their own models (``Dashboard.series`` is a list of ``DayPoint``).
"""

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

# Every model class by name, filled as the generated module defines them: a nested field
# names its model (``__nested__``), so reading one needs no import of ``models``.
REGISTRY: dict[str, type["Model"]] = {}


@dataclass(kw_only=True)
class Model:
    # Fields the server sent that this version of the client does not know.
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The ETag of the answer this record came in (a GET of it), for ``if_match=``.
    etag: str | None = field(default=None, repr=False, compare=False)

    # Filled in by the generated subclasses: {field: (model name, is a list)} for nested
    # records, and {python name: wire name} where the wire name is a Python keyword.
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {}
    __wire__: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        REGISTRY[cls.__name__] = cls

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
        wire_to_name = {wire: name for name, wire in cls.__wire__.items()}
        known = {f.name for f in fields(cls)} - {"extra", "etag"}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            name = wire_to_name.get(key, key)
            if name not in known:
                extra[key] = value
                continue
            nested = cls.__nested__.get(name)
            if nested is not None and value is not None:
                model = REGISTRY[nested[0]]
                if nested[1]:
                    value = [model.from_dict(item) for item in value]
                else:
                    value = model.from_dict(value)
            values[name] = value
        return cls(**values, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The record as the API spells it, the fields it did not know included."""
        result: dict[str, Any] = {}
        for item in fields(self):
            if item.name in ("extra", "etag"):
                continue
            result[self.__wire__.get(item.name, item.name)] = _plain(getattr(self, item.name))
        result.update(self.extra)
        return result


def _plain(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
