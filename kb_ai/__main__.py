import os
import sys

# `python -m kb_ai` puts the working directory first on sys.path. Inside a knowledge
# base that directory holds a `wiki/` folder, which would shadow kb-ai's own `wiki`
# package; the installed packages must win. With -P nothing was put there, and the
# first entry is PYTHONPATH's (which may name the working directory): it stays.
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)

from kb_ai.cli import main  # noqa: E402

main(prog_name="kb-ai")
