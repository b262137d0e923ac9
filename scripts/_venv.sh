# Shared by scripts/start and scripts/test: a virtual environment in .venv with kb-ai
# installed in editable mode and the given extras. Re-running is cheap: pip only
# installs what changed.
VENV="${KB_AI_VENV:-.venv}"

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
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec"
}
