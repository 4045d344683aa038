"""Import layers inside ``src/determined`` (../shared/STYLE.md): ``determined.common`` is
the bottom layer that everything may use, so it imports only itself and
``determined.errors``; never the config, searchers, storage, engine, trial runner,
master or local runs above it. Read with ``ast`` (every import: module level, inside
functions, under ``TYPE_CHECKING``), as the circle check does."""

import pathlib
from typing import Dict, Iterable, List, Set, Tuple

from test_import_circles import import_graph

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"

#: What ``determined.common`` may import of ours.
COMMON_MAY_IMPORT = ("determined.common", "determined.errors")


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer_violations(graph: Dict[str, Set[str]], layer: str,
                     allowed: Iterable[str]) -> List[Tuple[str, str]]:
    """``(importer, imported)`` for each import from a module of ``layer`` (a package
    name) of a module outside ``allowed`` (package names); the package root counts as
    nothing (``from determined import x`` resolves to ``determined.x``)."""
    allowed = tuple(allowed)
    root = layer.split(".")[0]
    return sorted((importer, imported)
                  for importer, targets in graph.items() if _within(importer, [layer])
                  for imported in targets
                  if imported != root and not _within(imported, allowed))


def test_common_imports_nothing_above_it():
    found = layer_violations(import_graph(SRC, "determined"), "determined.common",
                             COMMON_MAY_IMPORT)
    assert not found, ("determined.common may import only "
                       f"{', '.join(COMMON_MAY_IMPORT)}; found: {found}")


def test_the_layer_check_sees_upward_imports(tmp_path):
    pkg = tmp_path / "pkg"
    for sub in ("common", "common/api", "searcher", "config"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "common" / "ok.py").write_text("from pkg.errors import x\nfrom . import api\n")
    (pkg / "common" / "api" / "client.py").write_text(
        "def f():\n    from pkg import searcher\n")
    (pkg / "common" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..config import y\n")
    graph = import_graph(tmp_path, "pkg")
    assert layer_violations(graph, "pkg.common", ("pkg.common", "pkg.errors")) == [
        ("pkg.common.api.client", "pkg.searcher"), ("pkg.common.typed", "pkg.config")]
