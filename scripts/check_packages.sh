#!/usr/bin/env bash
# Checks that the package sets of scripts/packages.sh resolve on each Debian
# release: `apt-get install -s` of both sets, as on a machine with nothing
# installed, against the release's own package lists, fetched through a
# private apt configuration (state, lists and sources under a cache
# directory; the machine's apt setup is neither read nor changed) whose
# archive is the machine's own (scripts/debian_archive.py).
#   check_packages.sh [CODENAME...]   default: bookworm trixie (Debian 12, 13)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/packages.sh"
archive=$(python3 "$here/debian_archive.py")
security=$(python3 "$here/debian_archive.py" --security)
cache=${EHPROF_APT_CHECK_CACHE:-/var/cache/ehprof/apt-check}
failed=0
for codename in "${@:-bookworm trixie}"; do
  for codename in $codename; do
    d=$cache/$codename
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    : > "$d/status"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    cat > "$d/sources.list" <<SOURCES
deb [signed-by=$keyring] $archive $codename main
deb [signed-by=$keyring] $archive $codename-updates main
deb [signed-by=$keyring] $security $codename-security main
SOURCES
    opts=(-o "Dir::State=$d" -o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/status"
          -o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts=/nonexistent
          -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root -o Acquire::Languages=none -o "APT::Architecture=$(dpkg --print-architecture)")
    # Lists younger than 12 hours are used as they are.
    if [[ -z $(find "$d/updated" -mmin -720 2>/dev/null) ]]; then
      apt-get "${opts[@]}" -qq update || { echo "$codename: apt-get update failed" >&2; failed=1; continue; }
      touch "$d/updated"
    fi
    build=$(ehprof_packages build) test=$(ehprof_packages test "${opts[@]}") || { failed=1; continue; }
    # shellcheck disable=SC2086  # package names are words
    if out=$(apt-get "${opts[@]}" install -s -qq $build $test 2>&1); then
      echo "$codename: $(wc -w <<<"$build $test") packages resolve ($(grep -c '^Inst ' <<<"$out") to install on an empty system)"
      # What scripts/demo.sh downloads on an empty system (install_deps.sh --build).
      # shellcheck disable=SC2086
      apt-get "${opts[@]}" install --no-install-recommends --print-uris -qq $build 2>/dev/null |
        awk -v c="$codename" '{ n++; b += $3 } END { printf "%s: the build set: %d packages, %.0f MB to download\n", c, n, b / 1e6 }'
    else
      echo "$codename: the package set does not resolve:" >&2
      grep -E '^E:|^ [^ ]' <<<"$out" >&2 || echo "$out" >&2
      failed=1
    fi
  done
done
exit $failed
