"""Bare git repositories as wiki remotes, for the tests of several servers on one wiki
(tests/wiki/test_remote.py, tests/kb_ai/test_cli_remote.py, tests/web/test_remote.py)."""

import subprocess


def bare(path):
    """An empty bare repository at ``path`` (a remote nothing was pushed to yet)."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def _git(remote, *args):
    return subprocess.run(
        ["git", "-C", str(remote), *args], capture_output=True, text=True, check=True
    ).stdout


def remote_log(remote):
    """The subjects of the remote's main branch, newest first."""
    return _git(remote, "log", "--format=%s", "main").splitlines()


def remote_file(remote, rel):
    """``rel`` as the remote's main branch holds it."""
    return _git(remote, "show", f"main:{rel}")


def remote_paths(remote, under):
    """The files under ``under`` on the remote's main branch."""
    return _git(remote, "ls-tree", "-r", "--name-only", "main", under).splitlines()


def refuse_pushes(remote, message):
    """A pre-receive hook on ``remote`` that says ``message`` and refuses every push."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    hook.chmod(0o755)
