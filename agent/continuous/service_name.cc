#include "agent/continuous/service_name.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

const std::string& ServiceNames::Of(uint32_t pid, const std::string& comm) {
  auto [it, inserted] = names_.try_emplace(pid);
  Entry& e = it->second;
  e.seen = true;
  if (inserted) {
    std::ifstream f(absl::StrCat(proc_, "/", pid, "/cgroup"));
    std::stringstream text;
    text << f.rdbuf();
    e.name = ServiceFromCgroup(text.str());
    if (e.name.empty()) e.name = comm.empty() ? "unknown" : comm;
    if (!IsPrintableText(e.name)) e.name = PrintableText(e.name);
  }
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
