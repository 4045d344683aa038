"""Loading user trial classes and reporting user-code failures.

Every failure names the file, the class and the method involved and carries the
user's own traceback (frames inside this package and Python's import machinery are
dropped).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from types import TracebackType
from typing import Any, Optional, Type

from determined.errors import InvalidModelDefError, InvalidTrialError, UserCodeError

__all__ = ["load_trial_class", "user_code_error", "describe_class", "check_trial_class"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(importlib.__file__))
_loaded_dirs: set = set()


def _forget_other_model_dirs(search_dir: str) -> None:
    """Unload modules imported from other model directories, so that two model
    directories with a ``model_def.py`` each can be loaded in one process."""
    others = [d for d in _loaded_dirs if d != search_dir]
    if not others:  # the common case (a trial process loads one model dir)
        _loaded_dirs.add(search_dir)
        return
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if any(path.startswith(d + os.sep) for d in others):
            del sys.modules[name]
    for d in others:
        while d in sys.path:
            sys.path.remove(d)
        _loaded_dirs.discard(d)
    _loaded_dirs.add(search_dir)


def _is_import_machinery(filename: str) -> bool:
    """``<frozen importlib._bootstrap>`` and the like, or ``importlib/__init__.py``."""
    return (filename.startswith("<frozen ")
            or os.path.abspath(filename).startswith(_IMPORTLIB_DIR + os.sep))


def _user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` in the user's frames; this package's frames only when
    it has no other (a fault of ours), and none of the import machinery's. A syntax
    error in the user's module has no frame left: its file and line say where."""
    tb: Optional[TracebackType] = exc.__traceback__
    frames = [f for f in traceback.extract_tb(tb) if not _is_import_machinery(f.filename)]
    keep = [f for f in frames if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    # A syntax error's place is in the error itself, not in a frame.
    shown = keep if keep or isinstance(exc, SyntaxError) else frames
    lines = ["Traceback (most recent call last):\n"] if shown else []
    lines += traceback.format_list(shown)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def describe_class(cls: Type[Any]) -> str:
    """``'model_def.py: MyTrial'`` for error messages."""
    try:
        path = inspect.getsourcefile(cls) or cls.__module__
    except TypeError:
        path = cls.__module__
    return f"{os.path.basename(path)}: {cls.__qualname__}"


def user_code_error(exc: BaseException, cls: Type[Any], method: str) -> UserCodeError:
    """Wrap an exception raised by ``cls.method`` of user code."""
    if isinstance(exc, UserCodeError):
        return exc
    where = describe_class(cls)
    try:
        where = f"{inspect.getsourcefile(getattr(cls, method))}: {cls.__qualname__}"
    except (TypeError, AttributeError):
        pass
    message = (
        f"{where}.{method} raised {type(exc).__name__}: {exc}"
        if not isinstance(exc, InvalidTrialError)
        else f"{where}.{method}: {exc}"
    )
    return UserCodeError(message, _user_traceback(exc))


#: Top-level modules that come with an extra of this package (pyproject.toml).
_EXTRA_OF_MODULE = {"torch": "pytorch", "tensorflow": "tensorflow", "sklearn": "examples",
                    "lightning": "lightning", "transformers": "transformers",
                    "accelerate": "transformers", "boto3": "s3", "ray": "ray"}


def _extra_hint(exc: BaseException) -> str:
    """For a module that one of this package's extras installs (the default install has
    ``pytorch`` and ``examples`` only): which extra to install."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    extra = _EXTRA_OF_MODULE.get((name or "").split(".")[0])
    if extra is None:
        return ""
    return (f" (it comes with determined's {extra} extra: pip install 'determined[{extra}]', "
            f"or -e '.[{extra}]' in a checkout, where the trial runs)")


def load_trial_class(entrypoint: str, model_dir: str, base: Optional[Type[Any]] = None) -> Type[Any]:
    """Import ``<module>:<object>`` from ``model_dir`` and return the object.

    The model directory is put first on ``sys.path``; an empty module names the
    directory's own ``__init__.py``.
    """
    module_name, sep, attr_path = entrypoint.partition(":")
    if not sep or not attr_path:
        raise InvalidModelDefError(
            f"Expected entrypoint '<module>:<object>' such as 'model_def:MyTrial'. "
            f"Received: entrypoint={entrypoint!r}"
        )
    model_dir = os.path.abspath(model_dir)
    if not os.path.isdir(model_dir):
        raise InvalidModelDefError(f"Model directory {model_dir} does not exist")
    if not module_name:
        parent, pkg = os.path.split(model_dir)
        if not os.path.exists(os.path.join(model_dir, "__init__.py")):
            raise InvalidModelDefError(
                f"entrypoint {entrypoint!r} names the model directory's __init__.py, "
                f"but {model_dir} has none"
            )
        search_dir, module_name = parent, pkg
    else:
        search_dir = model_dir
    _forget_other_model_dirs(search_dir)
    if search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    rel = module_name.replace(".", os.sep)
    candidates = [os.path.join(search_dir, rel + ".py"), os.path.join(search_dir, rel, "__init__.py")]
    if not any(os.path.exists(c) for c in candidates):
        raise InvalidModelDefError(
            f"entrypoint {entrypoint!r}: module {module_name!r} not found in {search_dir} "
            f"(expected {rel}.py or {rel}/__init__.py)"
        )
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:  # user module raised at import time
        raise UserCodeError(
            f"entrypoint {entrypoint!r}: importing {rel}.py raised {type(e).__name__}: {e}"
            + _extra_hint(e),
            _user_traceback(e),
        ) from None
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            defined = sorted(n for n in dir(obj) if not n.startswith("_"))
            raise InvalidModelDefError(
                f"entrypoint {entrypoint!r}: {getattr(obj, '__name__', obj)!s} has no attribute "
                f"{part!r} (defined: {', '.join(defined) or 'nothing'})"
            )
        obj = getattr(obj, part)
    if base is not None:
        check_trial_class(obj, base, entrypoint)
    return obj


def check_trial_class(obj: Any, base: Type[Any], entrypoint: str = "") -> None:
    """Raise a clear error unless ``obj`` is a concrete subclass of ``base``."""
    label = f"entrypoint {entrypoint!r}: " if entrypoint else ""
    if not (inspect.isclass(obj) and issubclass(obj, base)):
        raise InvalidModelDefError(
            f"{label}expected a subclass of {base.__module__}.{base.__qualname__}. "
            f"Received: {obj!r}"
        )
    missing = sorted(getattr(obj, "__abstractmethods__", ()))
    if missing:
        raise InvalidTrialError(
            f"{describe_class(obj)} does not implement the abstract method(s) "
            f"{', '.join(missing)} of {base.__qualname__}"
        )
