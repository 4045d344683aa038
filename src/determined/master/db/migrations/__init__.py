"""Alembic migrations of the master database, run by ``Store.upgrade()`` (no alembic.ini).

To write a new revision, upgrade a scratch database, then let Alembic compare it with
the models (``script.py.mako`` is the template)::

    from alembic import command
    from determined.master.db._engine import alembic_config, create_engines

    engines = create_engines("sqlite:////tmp/scratch.db")
    with engines.write.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
        command.revision(alembic_config(conn), "add foo", autogenerate=True)

Review the generated file: JSON columns must use ``JSONText``, timestamps ``UTCDateTime``.
"""
