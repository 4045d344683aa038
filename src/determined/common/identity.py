"""A lasting random identity for a directory of records (a master's data directory,
a local records directory)."""

import os
import uuid

__all__ = ["directory_id"]


def directory_id(directory: str, name: str = "cluster_id") -> str:
    """The UUID kept in ``directory/name``, written there the first time.

    Two record stores that number experiments from 1 (two masters, two local
    directories) get different identities, so files they share (checkpoint storage)
    can be told apart by it.

    Example:
        >>> directory_id("/tmp/det-local")  # doctest: +SKIP
        '5b0e8c2e-...'
    """
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        os.makedirs(directory, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(str(uuid.uuid4()))
        try:
            os.link(tmp, path)  # the first writer wins; later ones read its value
        except FileExistsError:
            pass
        finally:
            os.remove(tmp)
    with open(path, encoding="utf-8") as f:
        return f.read().strip()
