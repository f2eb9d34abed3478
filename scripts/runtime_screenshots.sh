#!/usr/bin/env bash
# The runtimes' flame graph pictures in docs/, each from a real recording
# written as SVG, opened in headless Chromium with a search (?s=, literal)
# and screenshotted. Needs root (BPF), a built build/ehprof, chromium and
# the runtime.
#   bash scripts/runtime_screenshots.sh python [PYTHON]  docs/python-flamegraph.png:
#       testdata/python/mix.py under 3.12, searching <lambda>
#   bash scripts/runtime_screenshots.sh java [JAVA_HOME]  docs/java-flamegraph.png:
#       testdata/JvmHot.java with no JVM flag (Debian's OpenJDK 17 by
#       default), recorded with -p after its warm-up, searching fmod (the
#       double % of fmodLoop runs in libm's fmod, walked back into Java)
#   bash scripts/runtime_screenshots.sh node  docs/node-flamegraph.png:
#       terser (scripts/install_npm_tools.sh) minifying playwright-core's
#       bundle under node with no flag, searching _walk
#   bash scripts/runtime_screenshots.sh ruby  docs/ruby-flamegraph.png:
#       Debian 12's rdoc (Ruby 3.1) documenting RubyGems' sources, searching
#       parse
#   bash scripts/runtime_screenshots.sh php  docs/php-flamegraph.png:
#       Debian 12's phpcs (PHP 8.2) checking Composer's sources against
#       PSR-12, searching Tokenizer
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:?python, java, node, ruby or php}
work=$(mktemp -d)
child=
trap '[ -n "$child" ] && kill "$child" 2>/dev/null; rm -rf "$work"' EXIT
svg=$work/profile.svg
case $what in
  python)
    python=${2:-/root/.pyenv/versions/3.12.1/bin/python3.12}
    build/ehprof record -F 999 -q -o "$svg" -- "$python" testdata/python/mix.py 4 >/dev/null
    search='%3Clambda%3E' ;;
  java)
    jdk=${2:-/usr/lib/jvm/java-17-openjdk-amd64}
    "$jdk/bin/javac" -d "$work" testdata/JvmHot.java
    "$jdk/bin/java" -cp "$work" JvmHot 12 >/dev/null &
    child=$!
    sleep 4
    build/ehprof record -F 999 -q -p "$child" -d 4 -o "$svg" >/dev/null
    search=fmod ;;
  node)
    npm=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}/node_modules
    build/ehprof record -F 999 -q -o "$svg" -- node "$npm/terser/bin/terser" \
      "$npm/playwright-core/lib/coreBundle.js" -c -m -o "$work/min.js" >/dev/null
    search=_walk ;;
  ruby)
    build/ehprof record -F 999 -q -o "$svg" -- rdoc3.1 -q -o "$work/doc" /usr/lib/ruby/3.1.0/rubygems >/dev/null
    search=parse ;;
  php)
    build/ehprof record -F 999 -q -o "$svg" -- sh -c \
      'phpcs --standard=PSR12 -q --report=summary /usr/share/php/Composer >/dev/null; true' >/dev/null
    search=Tokenizer ;;
  *) echo "runtime_screenshots.sh: python, java, node, ruby or php, not $what" >&2; exit 2 ;;
esac
# As tall as the graph, 1400 px wide, which the graph is laid out to; a
# graph taller than 2400 px is shown by its bottom 2400 px (the root side,
# where the time is), through a page that holds it bottom-aligned.
height=$(grep -o -m1 '<svg [^>]*height="[0-9.]*"' "$svg" | sed 's/.*height="\([0-9]*\).*/\1/')
url="file://$svg?s=$search"
if ((height > 2400)); then
  cat >"$work/bottom.html" <<HTML
<!DOCTYPE html><body style="margin:0;overflow:hidden"><div style="position:relative;height:2400px;overflow:hidden">
<iframe src="profile.svg?s=$search" style="position:absolute;bottom:0;border:0;width:1400px;height:${height}px"></iframe></div></body>
HTML
  url="file://$work/bottom.html"
  height=2400
fi
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-dev-shm-usage --user-data-dir="$work/chromium" --hide-scrollbars \
  --allow-file-access-from-files --virtual-time-budget=5000 --window-size="1400,$height" \
  --screenshot="docs/$what-flamegraph.png" "$url" 2>/dev/null
echo "docs/$what-flamegraph.png: $what, search $search"
