# Sourced by the scripts that build a Go program from its module on the Go
# module proxy (install_pyroscope.sh, install_otel_profiler.sh):
#   go_module_env NAME      sets GO (a Go >= 1.22; bookworm-backports'
#                           golang-1.23 installed when there is none; newer
#                           toolchains a module asks for come through
#                           GOTOOLCHAIN=auto) and work, a directory removed
#                           at exit holding the module cache
#   mod_dir MODULE@VERSION  downloads it, prints its (read-only) directory
go_ok() { "$1" version 2>/dev/null | awk '{split($3, v, "."); exit !(v[1] == "go1" && v[2] >= 22)}'; }

go_module_env() {
  GO=
  for g in go /usr/local/go/bin/go /usr/lib/go-1.2[2-9]/bin/go; do
    if command -v "$g" >/dev/null && go_ok "$g"; then GO=$(command -v "$g"); break; fi
  done
  if [[ -z $GO ]]; then
    echo "$(basename "$0"): no Go >= 1.22; installing golang-1.23 from bookworm-backports" >&2
    local archive
    archive=$(python3 "$(dirname "${BASH_SOURCE[0]}")/debian_archive.py") || exit 1
    echo "deb $archive bookworm-backports main" > /etc/apt/sources.list.d/ehprof-backports.list
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports golang-1.23-go
    GO=/usr/lib/go-1.23/bin/go
  fi
  work=$(mktemp -d "/tmp/ehprof-$1-build.XXXXXX")
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  export GOPATH=$work/gopath GOMODCACHE=$work/gopath/pkg/mod GOFLAGS=-mod=mod GOTOOLCHAIN=auto
  export GOCACHE=${EHPROF_GOCACHE:-/var/cache/ehprof/gobuild}
}

mod_dir() {
  "$GO" mod download -json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error","no Dir")))' || {
    echo "$(basename "$0"): cannot download $1 from the Go module proxy" >&2; return 1; }
}
