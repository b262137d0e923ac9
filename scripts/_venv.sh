# Shared by scripts/start and scripts/test: a virtual environment in .venv with kb-ai
# installed in editable mode and the given extras. Re-running is cheap: pip only
# installs what changed.
VENV="${KB_AI_VENV:-.venv}"
# setuptools >= 80 warns on every editable install about folders named like the package
# (a framed block of 8 lines a newcomer cannot act on): kb-ai's are the package.
QUIET_SETUPTOOLS="ignore:Editable installation:UserWarning"

ensure_venv() {
  local spec="$1"
  local python="${PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "kb-ai needs Python 3.11 or newer (found: $("$python" --version 2>&1))" >&2
    exit 2
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    "$python" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
  fi
  if [ -n "${KB_AI_SHOW_BUILD:-}" ]; then
    install_showing_build "$spec"
  else
    PYTHONWARNINGS="$QUIET_SETUPTOOLS" \
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec"
  fi
}

# The long step (llama.cpp compiled from source, set by scripts/_local.sh): pip's build
# output, cut to one short line per build step, so minutes of compiling show how far
# they are; all of it is kept in $VENV/pip-build.log, and shown in part on failure.
install_showing_build() {
  local log="$VENV/pip-build.log"
  set +o pipefail
  PYTHONWARNINGS="$QUIET_SETUPTOOLS" \
    "$VENV/bin/python" -m pip install -v --disable-pip-version-check -e "$1" 2>&1 \
    | tee "$log" \
    | build_progress
  local status="${PIPESTATUS[0]}"
  set -o pipefail
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "pip failed (exit $status); its whole output is in $log" >&2
    exit "$status"
  fi
}

# pip -v's build output (stdin) to progress lines: Ninja's "[12/140] /usr/bin/g++ ... -c
# .../ggml.cpp" becomes "[12/140] compiling ggml.cpp", a link step "[15/140] linking
# libggml-base.so"; Make's "[ 42%] Building CXX object ..." keeps its first words.
build_progress() {
  grep --line-buffered -E '^\s*\[ *[0-9]+%\]|^\s*\[[0-9]+/[0-9]+\]|^Successfully installed' \
    | sed -u -E 's/^\s+//; t strip
      :strip
      s/^(\[[0-9]+\/[0-9]+\]) .* -c ([^ ]*\/)?([^ \/]+)$/\1 compiling \3/; t
      s/^(\[[0-9]+\/[0-9]+\]) .* -o ([^ ]*\/)?([^ \/]+) .*/\1 linking \3/; t
      s/^(\[[0-9]+\/[0-9]+\]) .*/\1/; t
      s/ -o .*//'
}
