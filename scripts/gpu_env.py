"""The environment of the GPU check (scripts/gpu-check.sh): which packages travel as
wheels, a stand-in for the GPU image on a machine without one, and the import probe.

    python scripts/gpu_env.py requirements          # pyproject deps the image lacks
    python scripts/gpu_env.py installed-wheels DEST # those and their needs, repacked
                                                    # from this environment as wheels
    python scripts/gpu_env.py image-env DIR         # a venv holding only the image's
                                                    # packages installed here; prints
                                                    # its python
    python scripts/gpu_env.py probe                 # import every determined module

The image's packages are listed in scripts/gpu-image-packages.txt. ``probe`` needs
only the standard library and the platform's dependencies; it runs on the GPU machine.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import pathlib
import pkgutil
import re
import subprocess
import sys
import traceback
import zipfile
from typing import Dict, Iterator, List, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
IMAGE_LIST = ROOT / "scripts" / "gpu-image-packages.txt"

# determined's optional integrations: on the GPU image their frameworks may be missing
# or of other versions than ours, so their import failures are reported, not fatal.
OPTIONAL_MODULES = ("determined.keras", "determined.estimator", "determined.tensorflow",
                    "determined.horovod", "determined.lightning", "determined.transformers")
# Run only inside another tool (alembic), or run a program when imported.
NOT_IMPORTABLE = ("determined.master.db.migrations.env",)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages() -> Set[str]:
    lines = IMAGE_LIST.read_text().splitlines()
    return {normalize(l.strip()) for l in lines if l.strip() and not l.startswith("#")}


def requirements() -> List[str]:
    """pyproject.toml's [project] dependencies whose package the image lacks."""
    import tomllib

    from packaging.requirements import Requirement

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    have = image_packages()
    out = []
    for dep in deps:
        req = Requirement(dep)
        if normalize(req.name) not in have and (req.marker is None or req.marker.evaluate()):
            out.append(str(req).split(";")[0].strip())
    return out


def _installed() -> Dict[str, "importlib.metadata.Distribution"]:
    from importlib import metadata

    dists = {}
    for dist in metadata.distributions():
        dists.setdefault(normalize(dist.metadata["Name"]), dist)
    return dists


def _closure(roots: List[str]) -> List["importlib.metadata.Distribution"]:
    """The installed distributions ``roots`` need, outside the image, transitively."""
    from packaging.requirements import Requirement

    dists, have = _installed(), image_packages()
    seen: Set[str] = set()
    out = []
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = normalize(req.name)
        if name in seen or name in have:
            continue
        seen.add(name)
        if name not in dists:
            raise SystemExit(f"gpu_env: {req.name} (needed by the platform) is not installed here")
        dist = dists[name]
        out.append(dist)
        for line in dist.requires or []:
            sub = Requirement(line)
            extras = req.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append(sub)
    return out


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def repack(dist: "importlib.metadata.Distribution", dest: pathlib.Path) -> pathlib.Path:
    """A wheel of an installed distribution, from the files its RECORD lists."""
    info = next(f for f in dist.files if f.parts[0].endswith(".dist-info"))
    info_dir = info.parts[0]
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [l.split(":", 1)[1].strip() for l in wheel_meta.splitlines() if l.startswith("Tag:")]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    path = dest / f"{name}-{dist.version}-{tags[0] if tags else 'py3-none-any'}.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for f in dist.files:
            arcname = f.as_posix()
            if (arcname.startswith("..") or "__pycache__" in f.parts
                    or arcname in (f"{info_dir}/RECORD", f"{info_dir}/INSTALLER",
                                   f"{info_dir}/REQUESTED", f"{info_dir}/direct_url.json")):
                continue
            data = pathlib.Path(dist.locate_file(f)).read_bytes()
            whl.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{info_dir}/RECORD,,")
        whl.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return path


def installed_wheels(dest: pathlib.Path) -> List[pathlib.Path]:
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    return [repack(d, dest) for d in _closure(requirements())]


def _top_levels(dist: "importlib.metadata.Distribution") -> Set[str]:
    return {f.parts[0] for f in dist.files or [] if f.parts[0] != ".." and len(f.parts) >= 1}


def image_env(target: pathlib.Path) -> pathlib.Path:
    """A venv whose only packages are the image's ones installed here (linked, not
    copied). A top-level name that another installed distribution shares (a namespace
    package such as ``google``) is linked file by file, so nothing else leaks in."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    image = target / "image-packages"
    image.mkdir()
    dists, have = _installed(), image_packages()
    owners: Dict[str, int] = {}
    for dist in dists.values():
        for top in _top_levels(dist):
            owners[top] = owners.get(top, 0) + 1
    for name, dist in dists.items():
        if name not in have:
            continue
        for top in _top_levels(dist):
            link = image / top
            if owners[top] == 1 and not link.exists():
                link.symlink_to(pathlib.Path(dist.locate_file(top)))
        for f in dist.files or []:
            if f.parts[0] == ".." or owners[f.parts[0]] == 1 or "__pycache__" in f.parts:
                continue
            link = image / f
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(pathlib.Path(dist.locate_file(f)))
    python = target / "bin" / "python"
    site = subprocess.run([str(python), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # addsitedir, unlike a bare path line, also runs the image packages' own .pth files.
    (pathlib.Path(site) / "det_gpu_image.pth").write_text(
        f"import site; site.addsitedir({str(image)!r})\n")
    return python


def _modules() -> Iterator[str]:
    import determined

    yield "determined"
    for info in pkgutil.walk_packages(determined.__path__, "determined.", onerror=lambda n: None):
        if info.name.rsplit(".", 1)[-1] != "__main__" and info.name not in NOT_IMPORTABLE:
            yield info.name


def probe() -> int:
    """Imports every module of determined; an optional integration may fail (reported)."""
    failed, optional, count = [], [], 0
    for name in _modules():
        count += 1
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - every import failure is reported below
            what = f"{name}: {type(e).__name__}: {e}"
            if name.startswith(OPTIONAL_MODULES):
                optional.append(what)
            else:
                failed.append(what + "\n" + traceback.format_exc(limit=-3))
    print(f"import probe: {count - len(failed) - len(optional)} of {count} determined modules "
          f"imported; {len(optional)} optional integration module(s) did not")
    for what in optional:
        print(f"  optional, not imported: {what}")
    for what in failed:
        print(f"  FAILED: {what}")
    return 1 if failed else 0


def main(argv: List[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "requirements" and not args:
        print("\n".join(requirements()))
    elif command == "installed-wheels" and len(args) == 1:
        wheels = installed_wheels(pathlib.Path(args[0]))
        print(f"gpu_env: {len(wheels)} wheels repacked into {args[0]}")
    elif command == "image-env" and len(args) == 1:
        print(image_env(pathlib.Path(args[0])))
    elif command == "probe" and not args:
        return probe()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
