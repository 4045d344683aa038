"""The range of a signed 64-bit integer: every id, count and length the master stores
(and a host reports) must fit its database columns."""

__all__ = ["INT64_MAX", "INT64_MIN"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
