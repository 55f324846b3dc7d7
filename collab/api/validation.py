"""JSON types checked before DRF's fields see a value (docs/guide/envelope-and-errors.md: a
wrong type is 422).

DRF's fields are lenient by design, made for HTML forms: a ``CharField`` takes ``7`` and
stores ``"7"``, an ``IntegerField`` takes ``"7"`` and ``7.0``, a ``BooleanField`` takes
``"yes"``. A JSON API says what type each field has in its schema and should hold clients
to it, so a value of the wrong JSON type is refused here, with the field named.
"""

from rest_framework import serializers

_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _json_type(value) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _expected(field) -> tuple[tuple[type, ...], str] | None:
    """The Python types a JSON value for ``field`` may have, and how to name them."""
    lists = (serializers.ListSerializer, serializers.ListField, serializers.MultipleChoiceField)
    if isinstance(field, lists):
        return (list,), "an array"
    if isinstance(field, (serializers.Serializer, serializers.DictField)):
        return (dict,), "an object"
    if isinstance(field, serializers.BooleanField):
        return (bool,), "a boolean"
    if isinstance(field, serializers.IntegerField):
        return (int,), "an integer"
    if isinstance(field, (serializers.FloatField, serializers.DecimalField)):
        return (int, float), "a number"
    if isinstance(field, serializers.ChoiceField):
        if all(isinstance(choice, str) for choice in field.choices):
            return (str,), "a string"
        return None
    if isinstance(
        field,
        (
            serializers.CharField,
            serializers.DateTimeField,
            serializers.DateField,
            serializers.TimeField,
            serializers.DurationField,
            serializers.UUIDField,
        ),
    ):
        return (str,), "a string"
    return None


def json_type_errors(field, value, name: str = "") -> dict[str, list[str]]:
    """Errors for values of the wrong JSON type in ``value``, read against ``field``.

    ``field`` is a serializer (its fields are read) or a field; nested serializers and list
    items are followed, and names are joined with dots as in the error details (``labels.0``).
    Null is left to the field's own ``allow_null``; absent fields to ``required``.
    """
    if value is None or getattr(field, "read_only", False):
        return {}
    expected = _expected(field)
    if expected is not None:
        types, noun = expected
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            return {name or "non_field_errors": [f"Expected {noun}, got {_json_type(value)}."]}
    errors: dict[str, list[str]] = {}
    if isinstance(field, serializers.Serializer):
        for child_name, child in field.fields.items():
            if child_name in value:
                path = f"{name}.{child_name}" if name else child_name
                errors.update(json_type_errors(child, value[child_name], path))
    elif isinstance(field, (serializers.ListSerializer, serializers.ListField)):
        for index, item in enumerate(value):
            errors.update(json_type_errors(field.child, item, f"{name}.{index}"))
    elif isinstance(field, serializers.DictField):
        for key, item in value.items():
            errors.update(json_type_errors(field.child, item, f"{name}.{key}"))
    return errors
