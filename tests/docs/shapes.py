"""Shown output: the answer a bash example shows in comments, and the check of a real answer
against it.

In a bash block, a comment line starting with ``# {`` or ``# <status> {`` (``# 201 {``) begins
shown output: JSON written over one or more comment lines (it goes on while its brackets are
open), with ``...`` for what is elided. It may stand for

- members of an object: ``{"id": 1, ..., "name": "x"}``, also ``{"...": "..."}``;
- items of a list: ``[...]``, ``[{"id": 1}, ...]``, ``[...50 issues...]`` (any words between);
- a whole value: ``"meta": {...}`` or ``"data": ...``;

and within a string it is just text (``"eyJ..."``).

The check compares shapes, not values: every key shown, at every level shown, is in the real
answer, with a value of the same JSON type (numbers are numbers, strings strings, objects
objects; ``null`` on either side matches anything, as an optional field may be either); every
item shown in a list has the shape of at least one real item; ``"success"`` at the top has the
value shown; and a status shown is the HTTP status of the step's last ``curl``. Keys the answer
has beyond those shown are fine: a page shows what matters to it. The answer is the last JSON
document the step printed (tests/docs/sessions.py says what a step is).
"""

import json
import re
from dataclasses import dataclass, field

SHOWN = re.compile(r"^\s*#\s?(?:(\d{3})\s+)?(\{.*)$")
COMMENT = re.compile(r"^\s*#\s?(.*)$")


class ShownSyntaxError(ValueError):
    pass


class Elided:
    """``...``: any value, or any further members or items."""

    def __repr__(self) -> str:
        return "..."


@dataclass
class ObjectShape:
    keys: dict[str, object] = field(default_factory=dict)


@dataclass
class ArrayShape:
    items: list[object] = field(default_factory=list)


@dataclass
class Scalar:
    value: object


@dataclass
class Shown:
    line: int  # the page's line of its first comment line
    status: int | None
    shape: object
    text: str

    @property
    def shows_error(self) -> bool:
        """Whether the page means an error answer here: it shows a status, or a failure."""
        if self.status is not None:
            return True
        success = self.shape.keys.get("success") if isinstance(self.shape, ObjectShape) else None
        return isinstance(success, Scalar) and success.value is False


def open_brackets(text: str) -> int:
    """How many brackets ``text`` leaves open, strings skipped."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return depth


def take_shown(lines: list[str], start: int) -> tuple[str, int | None, int] | None:
    """The shown output beginning at ``lines[start]``, if one does: its JSON text, its status
    and the index of the line after it."""
    first = SHOWN.match(lines[start])
    if not first:
        return None
    status = int(first.group(1)) if first.group(1) else None
    parts = [first.group(2)]
    index = start + 1
    while open_brackets("\n".join(parts)) > 0:
        more = COMMENT.match(lines[index]) if index < len(lines) else None
        if not more:
            raise ShownSyntaxError("the shown output ends with brackets still open")
        parts.append(more.group(1))
        index += 1
    return "\n".join(parts), status, index


class _Parser:
    """JSON with ``...`` elisions (see the module's docstring)."""

    NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def fail(self, message: str):
        near = self.text[max(0, self.pos - 20) : self.pos + 20]
        raise ShownSyntaxError(f"{message} at character {self.pos} (near {near!r})")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, length: int = 1) -> str:
        return self.text[self.pos : self.pos + length]

    def document(self):
        value = self.value()
        self.skip()
        if self.pos != len(self.text):
            self.fail("unexpected text after the shown value")
        return value

    def value(self):
        self.skip()
        if self.peek(3) == "...":
            return self.elision()
        char = self.peek()
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            return Scalar(self.string())
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return Scalar(value)
        number = self.NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            return Scalar(json.loads(number.group()))
        self.fail("expected a JSON value or ...")

    def elision(self) -> Elided:
        # "...", then any words up to the end of the item: "...50 issues...".
        while self.pos < len(self.text) and self.text[self.pos] not in ",]}":
            self.pos += 1
        return Elided()

    def string(self) -> str:
        decoder = json.JSONDecoder(strict=False)  # a string may go on over a comment line
        try:
            value, self.pos = decoder.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as error:
            self.fail(f"bad string ({error.msg})")
        return value

    def members(self, closing: str, item):
        self.pos += 1
        self.skip()
        if self.peek() == closing:
            self.pos += 1
            return
        while True:
            item()
            self.skip()
            char = self.peek()
            self.pos += 1
            if char == closing:
                return
            if char != ",":
                self.pos -= 1
                self.fail(f"expected , or {closing}")

    def object(self) -> ObjectShape:
        shape = ObjectShape()

        def member():
            self.skip()
            if self.peek(3) == "...":
                self.elision()
                return
            if self.peek() != '"':
                self.fail("expected a key or ...")
            key = self.string()
            self.skip()
            if self.peek() != ":":
                self.fail("expected :")
            self.pos += 1
            value = self.value()
            if key != "...":
                shape.keys[key] = value

        self.members("}", member)
        return shape

    def array(self) -> ArrayShape:
        shape = ArrayShape()

        def item():
            value = self.value()
            if not isinstance(value, Elided):
                shape.items.append(value)

        self.members("]", item)
        return shape


def parse_shown(text: str):
    return _Parser(text).document()


def json_values(output: str) -> list:
    """The JSON documents ``output`` holds: each begins a line or follows the one before
    (``curl -s`` ends its answer with no newline); other lines (headers, prose) are skipped."""
    decoder = json.JSONDecoder()
    values, pos = [], 0
    while pos < len(output):
        while pos < len(output) and output[pos].isspace():
            pos += 1
        if pos < len(output) and output[pos] in "{[":
            try:
                value, pos = decoder.raw_decode(output, pos)
                values.append(value)
                continue
            except json.JSONDecodeError:
                pass
        newline = output.find("\n", pos)
        pos = len(output) if newline < 0 else newline + 1
    return values


def _kind(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return "null"


def _a(value) -> str:
    kind = _kind(value)
    return ("an " if kind == "object" else "a ") + kind


def mismatches(shape, actual, path: str = "") -> list[str]:
    """Where ``actual`` lacks the shape shown; empty when it has it."""
    where = path or "the answer"
    if isinstance(shape, Elided) or actual is None:  # null: an optional value left empty
        return []
    if isinstance(shape, ObjectShape):
        if not isinstance(actual, dict):
            return [f"{where}: shown an object, got {_a(actual)}"]
        found = []
        for key, value in shape.keys.items():
            if key not in actual:
                found.append(f"{where}: no key {key!r} (it has {sorted(actual)})")
            else:
                found += mismatches(value, actual[key], f"{path}.{key}" if path else key)
        return found
    if isinstance(shape, ArrayShape):
        if not isinstance(actual, list):
            return [f"{where}: shown a list, got {_a(actual)}"]
        found = []
        for number, item in enumerate(shape.items):
            if not actual:
                found.append(f"{where}: shown with items, got an empty list")
                break
            tries = [mismatches(item, candidate, f"{path}[{number}]") for candidate in actual]
            if all(tries):
                found.append(f"{where}: no item has the shape of item {number} shown")
                found += tries[0]
        return found
    assert isinstance(shape, Scalar)
    if shape.value is None or _kind(shape.value) == _kind(actual):
        return []
    return [f"{where}: shown {_a(shape.value)}, got {_a(actual)}"]


def check(shown: Shown, output: str, status: int | None) -> list[str]:
    """What is wrong with a step's real output (and its last curl's status) given what the
    page shows of it; empty when nothing is."""
    values = json_values(output)
    if not values:
        return ["the command printed no JSON to compare with the output shown"]
    actual = values[-1]
    found = []
    if shown.status is not None and status != shown.status:
        got = "no curl status" if status is None else f"status {status}"
        found.append(f"shown status {shown.status}, got {got}")
    if isinstance(shown.shape, ObjectShape) and isinstance(actual, dict):
        success = shown.shape.keys.get("success")
        if isinstance(success, Scalar) and actual.get("success") != success.value:
            got = json.dumps(actual.get("success"))
            found.append(f'shown "success": {json.dumps(success.value)}, got {got}')
    return found + mismatches(shown.shape, actual)
