# Sourced by the build scripts from the checkout's root: ccache (when the
# build uses it) hashes the paths under this checkout relative to the
# compile's directory and leaves that directory out of the hash, so a clone
# elsewhere (CI's fresh one) reuses what this one compiled: the same file
# and flags are the same object wherever the checkout lies. Their debug
# info then names the first checkout's build directory (DW_AT_comp_dir):
# so the C++ only, never the C test programs in testdata/, whose source
# lines tests read. Settings the caller made win.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# Root's builds (CI's among them) keep the cache beside the project's other
# caches, whatever HOME the caller has.
if [[ $(id -u) == 0 && -z ${CCACHE_DIR:-} ]]; then
  export CCACHE_DIR=/var/cache/ehprof/ccache
fi
