"""Import circles inside ``src/determined``: the graph of every import (module level,
inside functions and under ``TYPE_CHECKING``), read with ``ast``, has exactly the
circles listed in ``ALLOWED``, each with the reason it stays. A new circle, or one of
these cut without updating the list, fails here."""

import ast
import pathlib
import sys
from typing import Dict, FrozenSet, List, Set

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"

ALLOWED: Dict[FrozenSet[str], str] = {
    frozenset({"determined.experimental._checkpoint", "determined.experimental._client",
               "determined.experimental._model"}):
        "the SDK objects (Checkpoint, Model) reach the master through a Determined client "
        "that builds them, as upstream 0.13's API has it (lazy imports only)",
    frozenset({"determined.searcher._sampler", "determined.searcher._tpe"}):
        "a deliberate lazy registry: the sampler factory names TPE, TPE builds on the sampler",
}


def _modules(root: pathlib.Path, package: str) -> Dict[str, pathlib.Path]:
    out = {}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(root: pathlib.Path, package: str) -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports anywhere in its file. ``from a import
    b`` counts as an import of ``a.b`` when that is a module, else of ``a``."""
    modules = _modules(root, package)

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here
                    for _ in range(node.level - 1):
                        up = up.rpartition(".")[0]
                    base = f"{up}.{base}" if base else up
                targets = [known(f"{base}.{a.name}") if f"{base}.{a.name}" in modules
                           else known(base) for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t and t != name)
    return graph


def circles(graph: Dict[str, Set[str]]) -> List[FrozenSet[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[FrozenSet[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_the_circles_left_are_exactly_the_allowed_ones():
    found = set(circles(import_graph(SRC, "determined")))
    new = sorted(sorted(c) for c in found - set(ALLOWED))
    gone = sorted(sorted(c) for c in set(ALLOWED) - found)
    assert not new, f"new import circle(s): {new}"
    assert not gone, f"circle(s) cut: remove them from ALLOWED: {gone}"
    assert len(ALLOWED) <= 4


def test_lazy_and_typing_imports_make_circles_too(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from . import a\n")
    (pkg / "sub" / "c.py").write_text("from .. import b\nfrom ..a import f\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub.c"] == {"pkg.b", "pkg.a"}
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b"})]
