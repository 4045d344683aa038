"""Code shared by the master, the CLI and trial processes (no framework imports)."""
