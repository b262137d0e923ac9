"""`kb-ai watch` as a user runs it: a real process, the fake model server, files written
and deleted under it, and Ctrl-C (SIGINT) to stop it."""

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def test_watch_compiles_changes_reports_deletes_and_stops_on_ctrl_c(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploys.md").write_text("# Deploys\n\nWe deploy on Tuesdays.\n", encoding="utf-8")
    with FakeOpenAIServer(respond) as model:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_AI_MODEL": "openai/fake",
               "KB_AI_API_BASE": model.base_url, "KB_AI_API_KEY": "x",
               "KB_AI_DETECT_MODEL": "0"}  # fmt: skip
        kb = ["--kb", str(tmp_path / "kb")]
        subprocess.run([sys.executable, "-m", "kb_ai", *kb, "init"], env=env, check=True)
        proc = subprocess.Popen(
            [sys.executable, "-m", "kb_ai", *kb, "watch", str(notes), "--debounce", "100"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout])
        reader.start()

        def until(text, poke=None):
            """Read lines until one holds ``text``; ``poke()`` again every 3 s meanwhile
            (a file written before the watcher listens is not seen)."""
            for _ in range(40):
                if poke:
                    poke()
                try:
                    while True:
                        line = lines.get(timeout=3)
                        if text in line:
                            return line
                except queue.Empty:
                    continue
            raise AssertionError(f"no line with {text!r}")

        try:
            assert "(all)" in until("Compiled 1 of 1")
            until("Watching")
            new = notes / "rollbacks.md"
            until("1 changed", lambda: new.write_text("# Rollbacks\n\nmake rollback.\n"))
            gone = until("deleted", lambda: (notes / "deploys.md").unlink(missing_ok=True))
            assert "its articles are kept" in gone
            proc.send_signal(signal.SIGINT)
            until("Stopped watching.")
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(timeout=30)
            proc.stdout.close()
    assert list((tmp_path / "kb" / "wiki").rglob("*.md"))  # nothing was removed
