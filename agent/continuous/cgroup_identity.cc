#include "agent/continuous/cgroup_identity.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace ehprof {
namespace {

constexpr size_t kMaxText = 64 << 10;
constexpr size_t kMaxComponents = 64;

bool Hex(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "<id>" of exactly 64 hex digits.
bool FullId(absl::string_view s) { return s.size() == 64 && Hex(s); }

// A pod UID as kubelet writes it in a cgroup name, sep being '-' (cgroupfs)
// or '_' (systemd, which reserves '-' for nesting): canonical UUID form,
// or 32 hex digits (a static pod's UID, a hash). Returned with '-'.
std::optional<std::string> PodUid(absl::string_view s, char sep) {
  if (s.size() == 32 && Hex(s)) return std::string(s);
  if (s.size() != 36) return std::nullopt;
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash) {
      if (out[i] != sep) return std::nullopt;
      out[i] = '-';
    } else if (!Hex(out.substr(i, 1))) {
      return std::nullopt;
    }
  }
  return out;
}

// The pod UID a kubelet component names: "kubepods[-QOS]-pod<uid>.slice"
// (systemd) or "pod<uid>" under kubepods[/QOS] (cgroupfs).
std::optional<std::string> PodOf(absl::string_view c, absl::string_view parent) {
  if (absl::StartsWith(c, "kubepods") && absl::EndsWith(c, ".slice")) {
    const size_t at = c.rfind("-pod");
    if (at == absl::string_view::npos) return std::nullopt;
    return PodUid(c.substr(at + 4, c.size() - at - 4 - 6), '_');
  }
  if (absl::StartsWith(c, "pod") &&
      (parent == "kubepods" || parent == "burstable" || parent == "besteffort")) {
    return PodUid(c.substr(3), '-');
  }
  return std::nullopt;
}

// The container id a runtime's cgroup component names; under_pod: its
// parent is a pod's cgroup.
std::optional<std::string> ContainerOf(absl::string_view c, bool under_pod) {
  for (absl::string_view prefix : {"cri-containerd-", "crio-", "docker-", "libpod-"}) {
    if (!absl::StartsWith(c, prefix)) continue;
    absl::string_view id = c.substr(prefix.size());
    // systemd scopes end in .scope; cgroupfs podman (libpod_parent) has none.
    if (absl::EndsWith(id, ".scope")) id.remove_suffix(6);
    if (FullId(id)) return std::string(id);
    return std::nullopt;
  }
  // cgroupfs driver: a bare id right under its pod's cgroup.
  if (under_pod && FullId(c)) return std::string(c);
  return std::nullopt;
}

// A cgroup whose names a user chooses (systemd delegates user@N.service's
// subtree to that user; user.slice holds every user's).
bool Delegated(absl::string_view c) {
  return c == "user.slice" || (absl::StartsWith(c, "user@") && absl::EndsWith(c, ".service"));
}

// One line's path.
CgroupIdentity FromPath(absl::string_view path) {
  std::vector<absl::string_view> parts;
  for (absl::string_view c : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (c == "..") continue;
    if (c == "." || parts.size() == kMaxComponents) return {};
    if (Delegated(c)) return {};
    parts.push_back(c);
  }
  CgroupIdentity id;
  // The innermost container (a runtime may nest cgroups inside one), then
  // its pod above it.
  size_t at = parts.size();
  for (size_t i = parts.size(); i-- > 0;) {
    const bool under_pod = i > 0 && PodOf(parts[i - 1], i > 1 ? parts[i - 2] : "").has_value();
    if (auto c = ContainerOf(parts[i], under_pod)) {
      id.container_id = *c;
      at = i;
      break;
    }
  }
  for (size_t i = std::min(at, parts.size()); i-- > 0;) {
    if (auto p = PodOf(parts[i], i > 0 ? parts[i - 1] : "")) {
      id.pod_uid = *p;
      break;
    }
  }
  return id;
}

// a and b agree where both have a value; the result has either's.
bool Merge(std::string* into, const std::string& from) {
  if (from.empty()) return true;
  if (!into->empty() && *into != from) return false;
  *into = from;
  return true;
}

}  // namespace

CgroupIdentity IdentityFromCgroup(absl::string_view text) {
  if (text.size() > kMaxText) return {};
  CgroupIdentity out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3 || !absl::StartsWith(f[2], "/")) continue;
    const CgroupIdentity one = FromPath(f[2]);
    if (!Merge(&out.container_id, one.container_id) || !Merge(&out.pod_uid, one.pod_uid)) return {};
  }
  return out;
}

}  // namespace ehprof
