#include "agent/continuous/service_name.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/continuous/cgroup_identity.h"
#include "base/printable_text.h"

namespace ehprof {
namespace {

bool AllHex(absl::string_view s) {
  if (s.size() < 12) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "docker-<id>.scope", "cri-containerd-<id>.scope", "crio-<id>.scope",
// "libpod-<id>.scope", or a bare "<id>" (cgroupfs drivers): the id.
std::string ContainerId(absl::string_view component) {
  absl::string_view c = component;
  if (absl::EndsWith(c, ".scope")) c.remove_suffix(6);
  for (absl::string_view prefix : {"docker-", "cri-containerd-", "crio-", "libpod-"}) {
    if (absl::StartsWith(c, prefix)) {
      c.remove_prefix(prefix.size());
      break;
    }
  }
  return AllHex(c) ? std::string(c.substr(0, 12)) : "";
}

}  // namespace

std::string ServiceFromCgroup(const std::string& text) {
  std::string path;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (f[0] == "0" && f[1].empty()) {
      path = std::string(f[2]);
      break;
    }
    if (path.empty()) path = std::string(f[2]);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  // Innermost first: a container inside a service's slice is the container.
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (std::string id = ContainerId(*it); !id.empty()) return absl::StrCat("container/", id);
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (absl::EndsWith(*it, ".service")) return std::string(*it);
  }
  return "";
}

bool ParseCgroupLabels(absl::string_view list, unsigned* out) {
  *out = kNoCgroupLabels;
  if (list == "none") return true;
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    if (name == "container.id") {
      *out |= kContainerIdLabel;
    } else if (name == "k8s.pod.uid") {
      *out |= kPodUidLabel;
    } else {
      return false;
    }
  }
  return true;
}

std::string SeriesKey(const ServiceSeries& s) {
  std::string key = s.name;
  for (const auto& [k, v] : s.labels) absl::StrAppend(&key, "\x1f", k, "=", v);
  return key;
}

ServiceSeries SplitSeriesKey(absl::string_view key) {
  ServiceSeries s;
  std::vector<absl::string_view> parts = absl::StrSplit(key, '\x1f');
  s.name = std::string(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == absl::string_view::npos) continue;
    s.labels.emplace_back(std::string(parts[i].substr(0, eq)), std::string(parts[i].substr(eq + 1)));
  }
  return s;
}

std::string ServiceNames::KeyOf(uint32_t pid, const std::string& comm) const {
  std::ifstream f(absl::StrCat(proc_, "/", pid, "/cgroup"));
  // Bounded: a cgroup file is a few hundred bytes; the parser refuses one
  // over 64 KiB, so a byte more than that is all that is read.
  std::string text;
  char buf[4096];
  while (text.size() <= (64u << 10) && f.read(buf, sizeof(buf)).gcount() > 0) text.append(buf, f.gcount());
  const CgroupIdentity id = IdentityFromCgroup(text);
  ServiceSeries s;
  s.name = fixed_;
  // A pod's processes are its service when nothing names them: Pyroscope
  // then shows a pod as one application (its containers told apart by
  // container.id), as a Kubernetes user reads them.
  if (s.name.empty() && !id.pod_uid.empty()) s.name = absl::StrCat("pod/", id.pod_uid);
  if (s.name.empty()) s.name = ServiceFromCgroup(text);
  if (s.name.empty()) s.name = comm.empty() ? "unknown" : comm;
  if (!IsPrintableText(s.name)) s.name = PrintableText(s.name);
  if ((labels_ & kContainerIdLabel) && !id.container_id.empty()) s.labels.emplace_back("container.id", id.container_id);
  if ((labels_ & kPodUidLabel) && !id.pod_uid.empty()) s.labels.emplace_back("k8s.pod.uid", id.pod_uid);
  return SeriesKey(s);
}

const std::string& ServiceNames::Of(uint32_t pid, const std::string& comm) {
  auto [it, inserted] = names_.try_emplace(pid);
  Entry& e = it->second;
  e.seen = true;
  if (inserted) e.name = KeyOf(pid, comm);
  if (e.interval != interval_) {
    e.interval = interval_;
    e.overflow = !Admit(e.name);
    overflowed_ += e.overflow;
  }
  return e.overflow ? overflow_ : e.name;
}

bool ServiceNames::Admit(const std::string& name) {
  if (auto it = admitted_.find(name); it != admitted_.end()) {
    it->second = true;
    return true;
  }
  if (admitted_.size() >= max_) return false;
  admitted_.emplace(name, true);
  return true;
}

void ServiceNames::Prune() {
  for (auto it = names_.begin(); it != names_.end();) {
    if (!it->second.seen) {
      names_.erase(it++);
    } else {
      it->second.seen = false;
      ++it;
    }
  }
  for (auto it = admitted_.begin(); it != admitted_.end();) {
    if (!it->second) {
      admitted_.erase(it++);
    } else {
      it->second = false;
      ++it;
    }
  }
  ++interval_;
}

}  // namespace ehprof
