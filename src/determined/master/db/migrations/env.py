"""Alembic environment: migrates the connection the store hands over in
``config.attributes["connection"]`` (see ``determined.master.db._engine.run_upgrade``)."""

from alembic import context

from determined.master.db._models import Base

_connection = context.config.attributes.get("connection")
if _connection is None:
    raise RuntimeError(
        "The determined master migrations run only on a connection given by "
        "determined.master.db (Store.upgrade()); there is no alembic.ini."
    )

context.configure(
    connection=_connection,
    target_metadata=Base.metadata,
    render_as_batch=_connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
