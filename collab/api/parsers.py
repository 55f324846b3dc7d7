import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class JSONObjectParser(BaseParser):
    """Parses ``application/json`` bodies, which must hold a JSON object
    (docs/guide/envelope-and-errors.md)."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            return {}
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"Malformed JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ParseError("The request body must be a JSON object.")
        return value
