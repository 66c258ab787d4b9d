#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian/Ubuntu machine: Python venv, packages, system tools,
# database, translations, the built-in course and demo accounts. Safe and fast to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# --- Python 3.12+ (3.13 preferred, selected by .python-version under pyenv) ---------------
python_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
find_python() {
  local candidate
  for candidate in python3 python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ] || ! python_ok .venv/bin/python; then
  if ! PYTHON=$(find_python); then
    echo "Dikkat needs Python 3.12 or newer (3.13 preferred). Install it (e.g. 'pyenv install 3.13'" >&2
    echo "or 'apt-get install python3.13 python3.13-venv') and run this again." >&2
    exit 1
  fi
  say "Creating .venv with $("$PYTHON" --version) ($PYTHON)"
  rm -rf .venv
  "$PYTHON" -m venv .venv
fi

# --- Python packages, pinned by requirements/constraints.txt -----------------------------
stamp=.venv/.dikkat-installed
want=$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "Installing Python packages"
  mkdir -p var
  if ! .venv/bin/python -m pip install --disable-pip-version-check -c requirements/constraints.txt -e ".[dev]" > var/pip-install.log 2>&1; then
    tail -n 30 var/pip-install.log >&2
    echo "Installing the Python packages failed; the whole log is in var/pip-install.log." >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi

# --- System packages (installed when running as root; otherwise we say what is missing) ---
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v msgfmt >/dev/null 2>&1 || missing+=(gettext)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "Installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Missing system packages: ${missing[*]} — install them with: sudo apt-get install ${missing[*]}" >&2
  fi
fi

# --- The code editor's bundle (CodeMirror, built by esbuild) and axe-core for the browser ---
# --- tests, pinned by package-lock.json; static/build/ is not in git. Optional: without it ---
# --- the exercise pages keep a plain text area (and `manage.py check` says so) -------------
node_major=$(node --version 2>/dev/null | sed -nE 's/^v([0-9]+)\..*/\1/p') || node_major=""  # no node
if ! command -v npm >/dev/null 2>&1 || [ -z "$node_major" ]; then
  echo "Without Node.js and npm the code editor is not built; pages fall back to a plain text area." >&2
elif [ "$node_major" -lt 18 ]; then
  echo "Node.js $(node --version) is too old to build the code editor (18 or newer is needed);" \
       "pages fall back to a plain text area." >&2
else
  stamp=node_modules/.dikkat-installed
  want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
  installed=yes
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "Installing JavaScript packages (npm ci)"
    mkdir -p var
    # --ignore-scripts: nothing here needs an install script (esbuild's binary comes as a package).
    if npm ci --ignore-scripts --no-audit --no-fund > var/npm-install.log 2>&1; then
      echo "$want" > "$stamp"
    else
      tail -n 30 var/npm-install.log >&2
      echo "Installing the JavaScript packages failed (the whole log is in var/npm-install.log);" \
           "the code editor is not built and pages fall back to a plain text area." >&2
      installed=no
    fi
  fi
  stamp=node_modules/.dikkat-built
  # Every file under frontend/, in a stable order (a glob skips subfolders).
  want=$( (cat package-lock.json; find frontend -type f -print0 | sort -z | xargs -0 cat) | sha256sum | cut -d' ' -f1)
  if [ "$installed" = yes ] && { [ ! -f static/build/editor.js ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; }; then
    say "Building the code editor"
    mkdir -p var
    if npm run --silent build -- --log-level=warning > var/npm-build.log 2>&1; then
      echo "$want" > "$stamp"
    else
      tail -n 30 var/npm-build.log >&2
      echo "Building the code editor failed (the whole log is in var/npm-build.log); pages fall back" \
           "to a plain text area until it builds." >&2
    fi
  fi
fi

# --- Database, translations, course, accounts --------------------------------------------
say "Preparing the database, translations and the built-in course"
.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python manage.py compilemessages -v 0 --ignore '.venv/*'
.venv/bin/python manage.py collectstatic --noinput -v 0
.venv/bin/python manage.py import_course courses/content/attention
.venv/bin/python manage.py demo_accounts
