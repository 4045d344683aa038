"""Upstream Determined 0.13's ``determined_common`` package, kept for user code that imports it.

``check`` (argument checks with messages), ``types`` (id types), ``api`` (REST helpers
against this master), ``storage`` (checkpoint storage), ``experimental`` (the SDK).
"""
