"""The llama.cpp build a newcomer waits for shows how far it is (scripts/_venv.sh).

pip -v prints the build backend's output; scripts/_venv.sh's build_progress cuts it to one
short line per step. llama-cpp-python builds with Ninja ("[12/140] /usr/bin/g++ ...") on
machines that have it and with Make ("[ 42%] Building ...") elsewhere: both must show.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "_venv.sh"

PIP_OUTPUT = """\
  Running command Building editable for kb-ai (pyproject.toml)
  -- Configuring done (1.2s)
  [1/140] /usr/bin/g++ -DGGML_SHARED -I/tmp/pip-install-x/llama-cpp-python_1/vendor/llama.cpp/ggml/src -O3 -DNDEBUG -std=gnu++17 -fPIC -MD -MT vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o -MF vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o.d -o vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o -c /tmp/pip-install-x/llama-cpp-python_1/vendor/llama.cpp/ggml/src/ggml.cpp
  [15/140] : && /usr/bin/g++ -fPIC -O3 -DNDEBUG   -shared -Wl,-soname,libggml-base.so.0 -o bin/libggml-base.so.0.25.3 vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o  -lm && :
  [16/140] /usr/bin/cmake -E cmake_symlink_library bin/libggml-base.so.0.25.3  bin/libggml-base.so.0 bin/libggml-base.so && :
  [ 42%] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama.cpp.o -o x
  warning: some compiler chatter
Successfully installed kb-ai-0.1.0 llama-cpp-python-0.3.36
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="the setup scripts are bash")
def test_build_output_becomes_one_short_progress_line_per_step() -> None:
    shown = subprocess.run(
        ["bash", "-c", f". '{SCRIPT}'; build_progress"],
        input=PIP_OUTPUT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert shown == [
        "[1/140] compiling ggml.cpp",
        "[15/140] linking libggml-base.so.0.25.3",
        "[16/140]",
        "[ 42%] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama.cpp.o",
        "Successfully installed kb-ai-0.1.0 llama-cpp-python-0.3.36",
    ]
