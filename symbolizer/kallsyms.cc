#include "symbolizer/kallsyms.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

struct RawLine {
  uint64_t addr;
  std::string_view name;
  uint32_t module;
  bool function;
  int rank;  // among aliases: global 2 > weak 1 > local 0
};

bool IsFunctionType(char t) { return t == 't' || t == 'T' || t == 'w' || t == 'W'; }

int TypeRank(char t) {
  if (t == 'W' || t == 'w') return 1;
  return t >= 'A' && t <= 'Z' ? 2 : 0;
}

// Splits on spaces and tabs; kallsyms separates the module with a tab.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  // procfs files report size 0, so read until EOF.
  std::string text;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::InternalError(absl::StrCat(path, ": read failed: ", std::strerror(errno)));
    }
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

// The symbols of every line with a text address, naming each module once
// in *modules (its index is the line's module). Errors name the line that is
// not "ADDRESS TYPE NAME [MODULE]", or say why no function has an address.
absl::StatusOr<std::vector<RawLine>> ReadLines(std::string_view text, const std::string& origin,
                                               std::vector<std::string>* modules) {
  absl::flat_hash_map<std::string_view, uint32_t> module_ids;
  std::vector<RawLine> lines;
  size_t functions = 0;
  bool nonzero = false;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    uint64_t addr = 0;
    auto [end, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), addr, 16);
    if (f.size() < 3 || f.size() > 4 || f[1].size() != 1 || ec != std::errc() ||
        end != f[0].data() + f[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ":", line_no, ": not \"ADDRESS TYPE NAME [MODULE]\": ", std::string(line)));
    }
    char type = f[1][0];
    bool function = IsFunctionType(type);
    if (function) {
      ++functions;
      nonzero = nonzero || addr != 0;
    }
    // Absolute symbols (per-CPU offsets and the like) are not in any text
    // range, and address 0 is kptr_restrict's mask.
    if (addr == 0 || type == 'a' || type == 'A' || type == 'U') continue;
    uint32_t module = 0;
    if (f.size() == 4) {
      std::string_view m = f[3];
      if (m.size() >= 2 && m.front() == '[' && m.back() == ']') m = m.substr(1, m.size() - 2);
      auto [it, inserted] = module_ids.try_emplace(m, static_cast<uint32_t>(modules->size()));
      if (inserted) modules->emplace_back(m);
      module = it->second;
    }
    lines.push_back({addr, f[2], module, function, TypeRank(type)});
  }
  if (functions == 0) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": no function symbols"));
  }
  if (!nonzero) {
    return absl::PermissionDeniedError(absl::StrCat(
        origin, ": every address is 0: reading kernel addresses needs root (CAP_SYSLOG) "
        "and kernel.kptr_restrict < 2"));
  }
  return lines;
}

// Among symbols at one address a function wins (so it is not hidden by a
// data label), then global over weak over local, then the longer name.
void SortAliases(std::vector<RawLine>& lines) {
  std::sort(lines.begin(), lines.end(), [](const RawLine& a, const RawLine& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if (a.function != b.function) return a.function;
    if (a.rank != b.rank) return a.rank > b.rank;
    if (a.name.size() != b.name.size()) return a.name.size() > b.name.size();
    return a.name < b.name;
  });
}

}  // namespace

absl::StatusOr<Kallsyms> Kallsyms::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

absl::StatusOr<Kallsyms> Kallsyms::Parse(std::string_view text, const std::string& origin) {
  Kallsyms k;
  k.modules_.push_back("");
  absl::StatusOr<std::vector<RawLine>> read = ReadLines(text, origin, &k.modules_);
  if (!read.ok()) return read.status();
  std::vector<RawLine>& lines = *read;
  SortAliases(lines);
  if (k.modules_.size() > UINT16_MAX >> 1) {
    return absl::ResourceExhaustedError(absl::StrCat(origin, ": more than 32767 modules"));
  }
  // Exact sizes: kept for the agent's life, no slack from growth.
  size_t distinct = 0, name_bytes = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0 && lines[i - 1].addr == lines[i].addr) continue;
    ++distinct;
    name_bytes += std::min<size_t>(lines[i].name.size(), UINT16_MAX);
  }
  if (name_bytes > UINT32_MAX) {
    return absl::ResourceExhaustedError(absl::StrCat(origin, ": names exceed 4 GiB"));
  }
  k.entries_.reserve(distinct);
  k.names_.reserve(name_bytes);
  for (size_t i = 0; i < lines.size(); ++i) {
    const RawLine& l = lines[i];
    if (i > 0 && lines[i - 1].addr == l.addr) continue;
    const std::string_view name = l.name.substr(0, UINT16_MAX);  // KSYM_NAME_LEN is 512
    k.entries_.push_back({l.addr, static_cast<uint32_t>(k.names_.size()), static_cast<uint16_t>(name.size()),
                          static_cast<uint16_t>(l.module << 1 | (l.function ? 1 : 0))});
    k.names_.append(name);
    if (l.function) ++k.function_count_;
  }
  return k;
}

std::optional<KernelSymbol> Kallsyms::Find(uint64_t addr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return std::nullopt;
  const Entry& e = *(it - 1);
  if (!e.function()) return std::nullopt;
  return KernelSymbol{names_.substr(e.name_offset, e.name_size), modules_[e.module()], e.start};
}

}  // namespace ehprof
