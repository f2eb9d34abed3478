#include "agent/sampling/probe_spec.h"

#include <elf.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

bool ParseHex(absl::string_view s, uint64_t* out) {
  return absl::ConsumePrefix(&s, "0x") && !s.empty() && absl::SimpleHexAtoi(s, out);
}

absl::Status Bad(const std::string& event, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(event, ": ", why));
}

// PATH:SYMBOL[+OFF] or PATH:0xADDR (the path itself may hold no ':').
absl::Status ParseUprobeTarget(const std::string& event, absl::string_view rest, ProbeSpec* p) {
  const size_t colon = rest.find(':');
  if (colon == absl::string_view::npos) return Bad(event, "takes PATH:SYMBOL[+OFF] or PATH:0xADDR");
  p->path = std::string(rest.substr(0, colon));
  absl::string_view where = rest.substr(colon + 1);
  if (p->path.empty() || p->path[0] != '/') return Bad(event, "the PATH must be absolute");
  if (where.empty()) return Bad(event, "no SYMBOL or 0xADDR after the PATH");
  if (absl::StartsWith(where, "0x")) {
    if (!ParseHex(where, &p->address)) return Bad(event, "0xADDR is not a hex address");
    return absl::OkStatus();
  }
  const size_t plus = where.find('+');
  p->symbol = std::string(where.substr(0, plus));
  if (plus != absl::string_view::npos) {
    absl::string_view off = where.substr(plus + 1);
    if (!ParseHex(off, &p->offset) && !absl::SimpleAtoi(off, &p->offset)) {
      return Bad(event, "the +OFF after the symbol is not a number");
    }
  }
  if (p->symbol.empty()) return Bad(event, "empty SYMBOL");
  return absl::OkStatus();
}

}  // namespace

const char* ProbeSpec::type_name() const {
  switch (kind) {
    case Kind::kUprobe:
      return "uprobe";
    case Kind::kUretprobe:
      return "uretprobe";
    case Kind::kUsdt:
      return "usdt";
    case Kind::kTracepoint:
      return "tracepoint";
    case Kind::kKprobe:
      return "kprobe";
  }
  return "probe";
}

bool LooksLikeProbe(const std::string& event) {
  for (const char* prefix : {"uprobe:", "uretprobe:", "usdt:", "tracepoint:", "kprobe:"}) {
    if (absl::StartsWith(event, prefix)) return true;
  }
  return false;
}

absl::StatusOr<ProbeSpec> ParseProbeSpec(const std::string& event) {
  ProbeSpec p;
  p.text = event;
  absl::string_view rest = event;
  if (absl::ConsumePrefix(&rest, "uprobe:") || absl::ConsumePrefix(&rest, "uretprobe:")) {
    p.kind = absl::StartsWith(event, "uretprobe:") ? ProbeSpec::Kind::kUretprobe : ProbeSpec::Kind::kUprobe;
    if (absl::Status s = ParseUprobeTarget(event, rest, &p); !s.ok()) return s;
    return p;
  }
  std::vector<std::string> parts;
  if (absl::ConsumePrefix(&rest, "usdt:")) {
    parts = absl::StrSplit(rest, ':');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) {
      return Bad(event, "takes usdt:PATH:PROVIDER:NAME");
    }
    if (parts[0][0] != '/') return Bad(event, "the PATH must be absolute");
    p.kind = ProbeSpec::Kind::kUsdt;
    p.path = parts[0];
    p.group = parts[1];
    p.name = parts[2];
    return p;
  }
  if (absl::ConsumePrefix(&rest, "tracepoint:")) {
    parts = absl::StrSplit(rest, ':');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return Bad(event, "takes tracepoint:CATEGORY:NAME (as in /sys/kernel/tracing/events/CATEGORY/NAME)");
    }
    p.kind = ProbeSpec::Kind::kTracepoint;
    p.group = parts[0];
    p.name = parts[1];
    return p;
  }
  if (absl::ConsumePrefix(&rest, "kprobe:")) {
    if (rest.empty() || rest.find_first_of(": /") != absl::string_view::npos) {
      return Bad(event, "takes kprobe:FUNCTION (a kernel function, as in /proc/kallsyms)");
    }
    p.kind = ProbeSpec::Kind::kKprobe;
    p.name = std::string(rest);
    return p;
  }
  return Bad(event, "not a probe (uprobe:, uretprobe:, usdt:, tracepoint:, kprobe:)");
}

absl::StatusOr<uint64_t> FileOffsetOfAddress(const std::string& path, uint64_t vaddr) {
  auto elf = ElfFile::Open(path);
  if (!elf.ok()) return elf.status();
  for (const ElfSegment& seg : elf->segments()) {
    if (seg.type == PT_LOAD && (seg.flags & PF_X) && vaddr >= seg.vaddr && vaddr < seg.vaddr + seg.filesz) {
      return vaddr - seg.vaddr + seg.offset;
    }
  }
  return absl::NotFoundError(absl::StrCat(path, ": 0x", absl::Hex(vaddr), " is in no executable segment"));
}

}  // namespace ehprof
