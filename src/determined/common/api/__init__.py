"""Typed client for the master's REST API, and context-directory packing."""

from determined.common.api._authentication import Authenticator, TokenCache, auth_dir
from determined.common.api._client import (
    IDEMPOTENCY_HEADER,
    APIError,
    MasterClient,
    normalize_master_url,
)
from determined.common.api._context import MAX_CONTEXT_BYTES, pack_context, unpack_context
from determined.common.api._context_archive import (
    MAX_UNPACKED_CONTEXT_BYTES,
    ContextArchive,
    ContextArchiveError,
    check_context_archive,
)

__all__ = [
    "APIError",
    "Authenticator",
    "ContextArchive",
    "ContextArchiveError",
    "IDEMPOTENCY_HEADER",
    "MAX_CONTEXT_BYTES",
    "MAX_UNPACKED_CONTEXT_BYTES",
    "MasterClient",
    "normalize_master_url",
    "TokenCache",
    "auth_dir",
    "check_context_archive",
    "pack_context",
    "unpack_context",
]
