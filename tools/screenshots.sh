#!/usr/bin/env bash
# Headless-Chromium screenshots of the built book, to check pages as a reader sees them.
# Usage: tools/screenshots.sh [HTML_DIR] [OUT_DIR]
#   HTML_DIR defaults to _build/html (build first: see README), OUT_DIR to _build/screenshots.
# Needs Debian's chromium (apt-get install -y chromium). Not part of CI.
# WIDTH and HEIGHT set the window (default 1280 x 2400: tall enough for a page's first figures).
set -euo pipefail

cd "$(dirname "$0")/.."
HTML_DIR="$(realpath "${1:-_build/html}")"
OUT_DIR="$(realpath -m "${2:-_build/screenshots}")"
WIDTH="${WIDTH:-1280}"
HEIGHT="${HEIGHT:-2400}"

CHROMIUM="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROMIUM" ]; then
    echo "screenshots: no chromium found (Debian: apt-get install -y chromium)" >&2
    exit 1
fi
if [ ! -f "$HTML_DIR/intro.html" ]; then
    echo "screenshots: $HTML_DIR/intro.html not found: build the book first" >&2
    exit 1
fi
mkdir -p "$OUT_DIR"
# the interactive views are photographed through the DevTools protocol (websocket-client)
PYTHON="${PYTHON:-$(pwd)/.venv/bin/python}"

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT

cd "$HTML_DIR"
for page in intro.html book/*.html chapters/*.html; do
    [ -f "$page" ] || continue
    name="$(echo "${page%.html}" | tr '/' '_')"
    out="$OUT_DIR/$name.png"
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
        --user-data-dir="$profile" --virtual-time-budget=5000 \
        --window-size="$WIDTH,$HEIGHT" --screenshot="$out" "file://$HTML_DIR/$page" >/dev/null 2>&1
    echo "screenshots: $out"
    # the interactive elements, each scrolled to: the trace view (a debugger) and the MMA explorer
    for cls in gk-interactive gk-explorer; do
        if grep -q "class=\"[^\"]*\b$cls\b" "$page"; then
            shot="${out%.png}-$cls.png"
            "$PYTHON" "$OLDPWD/tests/chromium_page.py" "$page" "$shot" ".$cls"
            echo "screenshots: $shot"
        fi
    done
done
