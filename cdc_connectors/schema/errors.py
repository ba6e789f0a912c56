"""The error of the schema modules."""


class SchemaError(ValueError):
    """A schema does not parse or compile; the message says what and where."""
