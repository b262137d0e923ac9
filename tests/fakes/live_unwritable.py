"""A process whose state.db is made unwritable (tests/fakes/storage_faults.unwritable)
while it holds a connection that has written through the WAL, with its dirty pages
written back (what the kernel does within seconds, sooner on a busy machine), then
reads and tries to write through that connection and new ones. Storage errors are
expected; the process must end by itself, never killed by a signal (SIGBUS: a write
to SQLite's shared-memory mapping of a file the kernel no longer lets anyone change).

    python -m tests.fakes.live_unwritable KB_DIR
"""

from __future__ import annotations

import os
import sys
from contextlib import closing
from pathlib import Path

from kb_ai.errors import StorageError
from tests.fakes.storage_faults import unwritable
from wiki import KnowledgeBase, open_state, set_meta


def main(root: str) -> int:
    kb = KnowledgeBase.open(Path(root))
    held = open_state(kb)
    for i in range(50):
        set_meta(held, "step", str(i))
    refused = 0
    with unwritable(sorted(kb.state_dir.glob("state.db*"))):
        os.sync()  # the mapping's pages clean: the next write to one asks the kernel
        for _ in range(20):
            try:
                with closing(open_state(kb)) as conn:
                    conn.execute("SELECT value FROM meta").fetchall()
                set_meta(held, "step", "refused")
            except StorageError:
                refused += 1
            held.execute("SELECT value FROM meta").fetchall()
    held.close()
    print(f"{refused} writes refused", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
