"""A read-only copy of another knowledge base's repository (wiki/mirror.py): over ssh it
never waits on a prompt, as the wiki remote's git does not (wiki/remote.py)."""

import os
import stat

import pytest

from kb_ai.errors import KbAiError
from wiki.mirror import clone


@pytest.fixture
def ssh_seen(tmp_path, monkeypatch):
    """An ``ssh`` first on PATH that records how git called it and refuses, as a server
    asking for a password would refuse in batch mode; returns the file it writes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "ssh-seen"
    ssh = bin_dir / "ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" "SSH_ASKPASS=$SSH_ASKPASS" > "{seen}"\n'
        'echo "Permission denied (publickey,password)." >&2\n'
        "exit 255\n",
        encoding="utf-8",
    )
    ssh.chmod(ssh.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    return seen


def test_a_mirror_over_ssh_runs_ssh_in_batch_mode(tmp_path, ssh_seen):
    with pytest.raises(KbAiError) as caught:
        clone("ssh://someone@kb.example.invalid/team.git", tmp_path / "team")
    assert "Permission denied" in caught.value.message
    called, askpass = ssh_seen.read_text(encoding="utf-8").splitlines()
    assert "BatchMode=yes" in called and "kb.example.invalid" in called  # never prompts
    assert askpass == "SSH_ASKPASS=true"
    assert not (tmp_path / "team" / ".git").exists()  # nothing half-cloned


def test_a_users_own_ssh_command_wins(tmp_path, ssh_seen, monkeypatch):
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i my-key")
    with pytest.raises(KbAiError):
        clone("ssh://someone@kb.example.invalid/team.git", tmp_path / "team")
    called = ssh_seen.read_text(encoding="utf-8").splitlines()[0]
    assert called.startswith("-i my-key") and "BatchMode" not in called
