#!/usr/bin/env bash
# Regenerates the flame graph pictures in docs/ from a real recording: the
# bundled CPU-bound fio job (as scripts/demo.sh profiles it) written as SVG,
# opened in headless Chromium with a search (?s=, literal) and a zoom (?z=)
# and screenshotted. Needs root (BPF), a built build/ehprof, fio and chromium.
#   bash scripts/svg_screenshots.sh [SEARCH] [ZOOM]
# SEARCH defaults to "fio_gettime" (fio reads the clock from several places),
# ZOOM to "io_queue_event" (where a finished I/O is accounted). A third
# picture, docs/flamegraph-hover.png, has the mouse on a libc frame, whose
# tooltip text the line under the graph repeats; it needs playwright-core in
# the npm cache (tests/flamegraph_browser_priv_test.cc installs it there).
set -euo pipefail
cd "$(dirname "$0")/.."
search=${1:-fio_gettime}
zoom=${2:-io_queue_event}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/ehprof record -F 999 -q -o "$work/fio.svg" -- fio testdata/workloads/fio-cpu.job >/dev/null
# As tall as the graph, so nothing is cut; 1400 px wide, which the script
# lays the graph out to.
height=$(grep -o -m1 '<svg [^>]*height="[0-9.]*"' "$work/fio.svg" | sed 's/.*height="\([0-9]*\).*/\1/')
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
shot() {  # NAME QUERY
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$work/profile-$1" --hide-scrollbars \
    --virtual-time-budget=5000 --window-size="1400,$height" \
    --screenshot="docs/flamegraph-$1.png" "file://$work/fio.svg$2" 2>/dev/null
  echo "docs/flamegraph-$1.png: $2"
}
shot search "?s=$(enc "$search")"
shot zoom "?z=$(enc "$zoom")&s=$(enc "$search")"

pw=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}/node_modules/playwright-core
if [[ -d $pw ]]; then
  node - "$pw" "$work/fio.svg" "$work/profile-hover" "$height" <<'EOF'
const [pw, svg, profile, height] = process.argv.slice(2);
(async () => {
  const ctx = await require(pw).chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true,
    viewport: { width: 1400, height: Number(height) },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = ctx.pages()[0] || await ctx.newPage();
  await page.goto('file://' + svg);
  await page.waitForFunction(() => document.documentElement.getAttribute('data-ehprof-ready'));
  const box = await page.evaluate(() => {
    const g = [...document.querySelectorAll('#frames g')]
      .find((e) => e.querySelector('title').textContent.startsWith('__libc_start_call_main ('));
    const r = g.querySelector('rect').getBoundingClientRect();
    return { x: r.x + r.width / 3, y: r.y + r.height / 2 };
  });
  await page.mouse.move(box.x, box.y);
  await page.screenshot({ path: 'docs/flamegraph-hover.png' });
  await ctx.close();
})().catch((e) => { console.error(e); process.exit(1); });
EOF
  echo "docs/flamegraph-hover.png: the mouse on __libc_start_call_main"
fi
