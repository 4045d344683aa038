"""``det e create -g/--git``: where the model definition came from, as upstream 0.13
recorded it (remote, commit, committer, commit date of the directory's repository)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Dict, List

from determined.errors import MasterError

__all__ = ["git_info"]


def _git(directory: str, args: List[str]) -> str:
    out = subprocess.run(["git", "-C", directory, *args], capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0:
        reason = (out.stderr.strip().splitlines() or ["git failed"])[-1]
        raise MasterError(f"-g/--git: `git {' '.join(args)}` in {directory} failed: {reason}")
    return out.stdout.strip()


def git_info(directory: str) -> Dict[str, str]:
    """``{git_remote, git_commit, git_committer, git_commit_date}`` of the repository
    holding ``directory``.

    Raises:
        MasterError: git is missing, ``directory`` is not in a repository with a commit,
            or tracked files have uncommitted changes (the commit would not describe
            the code sent).
    """
    if shutil.which("git") is None:
        raise MasterError("-g/--git needs the git program on the PATH")
    directory = os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise MasterError(f"-g/--git: model definition {directory} is not a directory")
    inside = subprocess.run(["git", "-C", directory, "rev-parse", "--is-inside-work-tree"],
                            capture_output=True, text=True, timeout=30)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise MasterError(f"-g/--git: model definition {directory} is not in a git "
                          "repository")
    commit = _git(directory, ["rev-parse", "HEAD"])
    changed = _git(directory, ["status", "--porcelain", "--untracked-files=no", "--", "."])
    if changed:
        first = changed.splitlines()[0].strip()
        raise MasterError(f"-g/--git: {directory} has uncommitted changes ({first}, ...); "
                          "commit or stash them so the recorded commit is the code sent")
    remotes = _git(directory, ["remote"]).split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else "")
    return {
        "git_remote": _git(directory, ["remote", "get-url", remote]) if remote else "",
        "git_commit": commit,
        "git_committer": _git(directory, ["log", "-1", "--format=%cn <%ce>", "HEAD"]),
        "git_commit_date": _git(directory, ["log", "-1", "--format=%cI", "HEAD"]),
    }
