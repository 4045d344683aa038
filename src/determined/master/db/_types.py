"""Column types that behave the same on SQLite and PostgreSQL."""

import datetime
import json
from typing import Any, Optional

import pydantic_core
import sqlalchemy as sa
from sqlalchemy.engine import Dialect

__all__ = ["BigId", "JSONText", "UTCDateTime", "encode_json", "utcnow"]

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class UTCDateTime(sa.TypeDecorator):
    """A timestamp stored in UTC and always read back timezone-aware (UTC).

    Naive datetimes given to the store are taken as UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(
        self, value: Optional[datetime.datetime], dialect: Dialect
    ) -> Optional[datetime.datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = value.astimezone(datetime.timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(
        self, value: Optional[datetime.datetime], dialect: Dialect
    ) -> Optional[datetime.datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc)


#: One encoder for every row (``json.dumps`` with options builds one per call).
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def encode_json(value: Any) -> str:
    """``value`` as compact JSON text that JSONText reads back: NaN and infinities kept
    (``NaN``, ``Infinity``, as :mod:`json` writes them), about 5x faster than :mod:`json`
    (pydantic-core's serializer: metric rows are the store's hot path).

    Raises:
        ValueError: a value JSON cannot hold (pydantic-core writes dates, sets, bytes and
            enums as JSON does in FastAPI), a reference cycle, or nesting too deep.
    """
    return pydantic_core.to_json(value, inf_nan_mode="constants").decode()


def compact_json(value: Any) -> str:
    """``value`` as :class:`JSONText` stores it (compact; NaN and infinities allowed)."""
    return _COMPACT.encode(value)


class RawJSON(str):
    """A JSON document already encoded by :func:`compact_json`: stored as it is."""


class JSONText(sa.TypeDecorator):
    """A JSON document stored as text.

    Not the PostgreSQL ``json``/``jsonb`` type on purpose: metrics and searcher scores
    may be NaN or +-Infinity, which ``jsonb`` rejects; as text they round-trip
    exactly, and identically on both backends. The store never queries inside them.
    """

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Optional[str]:
        if value is None:
            return None
        if isinstance(value, RawJSON):
            return str(value)
        return _COMPACT.encode(value)

    def process_result_value(self, value: Optional[str], dialect: Dialect) -> Any:
        if value is None:
            return None
        return json.loads(value)
