#!/usr/bin/env bash
# docs/java-flamegraph.png: a flame graph of a JVM started with no flag
# (testdata/JvmHot.java under the JDK given, Debian's 17 by default)
# recorded by `ehprof record -p` after its warm-up: Java frames (green,
# "Java" in the legend) among libjvm's and the kernel's, opened in headless
# Chromium with a search for the fmod loop and screenshotted. Needs root
# (BPF), a built build/ehprof, a JDK and chromium.
#   bash scripts/java_screenshot.sh [JAVA_HOME]
set -euo pipefail
cd "$(dirname "$0")/.."
jdk=${1:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d)
java_pid=
trap '[ -n "$java_pid" ] && kill "$java_pid" 2>/dev/null; rm -rf "$work"' EXIT
"$jdk/bin/javac" -d "$work" testdata/JvmHot.java
"$jdk/bin/java" -cp "$work" JvmHot 12 >/dev/null &
java_pid=$!
sleep 4
build/ehprof record -F 999 -q -p "$java_pid" -d 4 -o "$work/java.svg" >/dev/null
height=$(grep -o -m1 '<svg [^>]*height="[0-9.]*"' "$work/java.svg" | sed 's/.*height="\([0-9]*\).*/\1/')
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-dev-shm-usage --user-data-dir="$work/profile" --hide-scrollbars \
  --virtual-time-budget=5000 --window-size="1400,$height" \
  --screenshot="docs/java-flamegraph.png" "file://$work/java.svg?s=fmod" 2>/dev/null
echo "docs/java-flamegraph.png: $jdk testdata/JvmHot.java, search fmod"
