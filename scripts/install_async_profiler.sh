#!/usr/bin/env bash
# async-profiler, the outside reference for Java frames
# (bench/jvm_vs_async_profiler.py and tests/jvm_reference_priv_test.py):
# the pinned Maven artifact tools.profiler:async-profiler, fetched by `mvn`
# from the Maven repositories the machine's Maven is set up for, its jar
# checked against the pinned SHA-256, and the jar's
# linux-x64/libasyncProfiler.so extracted to
# /var/cache/ehprof/async-profiler-VERSION/ (idempotent: a second run finds
# it there and does nothing). Prints the .so path.
set -euo pipefail
VERSION=4.1   # 2025-07-21
JAR_SHA256=5535baa56133628cfffe2f05ca9bfef1fae3d5abe49835447262b1c6da4a9582
CACHE=${EHPROF_ASYNC_PROFILER_CACHE:-/var/cache/ehprof/async-profiler-$VERSION}
SO=$CACHE/libasyncProfiler.so
mkdir -p "$(dirname "$CACHE")"
exec 9>"$(dirname "$CACHE")/async-profiler-install.lock"
flock 9
if [[ -s $SO && $(cat "$CACHE/VERSION" 2>/dev/null) == "$VERSION" ]]; then
  echo "$SO"
  exit 0
fi
if ! command -v mvn >/dev/null; then
  # Debian's; a machine with Maven from elsewhere keeps its own.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Run in an empty folder so that no pom.xml around changes what Maven
# resolves; its output (colour codes even with -q -B) only when it failed.
if ! (cd "$work" && mvn -q -B dependency:copy "-Dartifact=tools.profiler:async-profiler:$VERSION" \
  "-DoutputDirectory=$work/out") >"$work/mvn.log" 2>&1; then
  cat "$work/mvn.log" >&2
  echo "install_async_profiler: mvn could not fetch tools.profiler:async-profiler:$VERSION" >&2
  exit 1
fi
jar=$work/out/async-profiler-$VERSION.jar
if ! echo "$JAR_SHA256  $jar" | sha256sum --check --status; then
  echo "install_async_profiler: $jar does not have the pinned SHA-256 $JAR_SHA256" >&2
  exit 1
fi
python3 - "$jar" "$work/libasyncProfiler.so" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("linux-x64/libasyncProfiler.so") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
mkdir -p "$CACHE"
mv "$work/libasyncProfiler.so" "$SO.tmp"
mv "$SO.tmp" "$SO"
echo "$VERSION" > "$CACHE/VERSION"
echo "install_async_profiler: async-profiler $VERSION in $CACHE" >&2
echo "$SO"
