"""Stand-in converters that misbehave on purpose, for the conversion time limit
(compiler/documents/isolation.py). They run in the converter process, so they live in a
module it can import. Files named slow* never finish (and ignore SIGTERM, so only a
kill stops them); files named crash* take the process down as a native library's crash
would; files named bug* raise what no converter should (a bug of ours); every other file
goes to the real converter."""

import os
import signal
import time
from pathlib import PurePosixPath

from compiler.documents.convert import convert_document


def misbehaving_convert(data, name, options=None):
    base = PurePosixPath(name).name
    if base.startswith("slow"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    if base.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if base.startswith("bug"):
        raise ValueError(f"a stand-in bug converting {base}")
    return convert_document(data, name, options)
