"""The package's public surface, and what importing it pulls in."""

import subprocess
import sys

import determined.master.db as db


def test_all_lists_the_public_names() -> None:
    public = {name for name in vars(db) if not name.startswith("_")}
    public -= {name for name, value in vars(db).items() if type(value).__name__ == "module"}
    assert set(db.__all__) == public


def test_import_loads_no_framework_and_no_migration_tool() -> None:
    code = (
        "import sys, determined.master.db; "
        "print(sorted(m for m in ('torch', 'tensorflow', 'alembic', 'psycopg') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
