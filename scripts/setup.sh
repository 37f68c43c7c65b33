# Sourced by sweep.sh and test.sh: create .venv if missing and install xferbench with the given extras.
# Re-installs only when pyproject.toml or the extras change. Set PYTHON to pick the interpreter.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras="$1"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "error: xferbench needs Python >= 3.10; '$PYTHON' is $("$PYTHON" --version 2>&1 || echo missing). Set PYTHON=/path/to/python3.x" >&2
    exit 2
fi
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version)" >&2
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.xferbench-$extras-$(.venv/bin/python -c "import hashlib; print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")"
if [ ! -f "$stamp" ]; then
    echo "setup: installing xferbench[$extras] into .venv (the first time takes a few minutes: PyTorch and TensorFlow are large)" >&2
    .venv/bin/python -m pip install --disable-pip-version-check --quiet --editable ".[$extras]"
    touch "$stamp"
fi
