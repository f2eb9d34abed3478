#include "bpf/host/capture.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/exclusive_file.h"
#include "base/status_macros.h"
#include "bpf/host/host_maps.h"

namespace ehprof {
namespace {

constexpr size_t kStackBytesPerLine = 64;
constexpr size_t kEntryBytesPerLine = 64;
// The largest capture: every bound at its maximum, as hex text.
constexpr size_t kMaxCaptureFileBytes = 4 << 20;

bool ParseHex(absl::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  return absl::SimpleHexAtoi(s, out) && s.find_first_of("+-xX ") == absl::string_view::npos;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsHexString(absl::string_view s) {
  for (char c : s) {
    if (HexDigit(c) < 0) return false;
  }
  return true;
}

// Reads the capture a line at a time; errors name the file and the line.
class Parser {
 public:
  Parser(absl::string_view text, absl::string_view name) : lines_(absl::StrSplit(text, '\n')), name_(name) {}

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_no_, ": ", what));
  }
  // The next line's record name and the rest after one space.
  bool Next(absl::string_view* key, absl::string_view* rest) {
    if (at_ >= lines_.size()) return false;
    absl::string_view line = lines_[at_++];
    line_no_ = at_;
    const size_t sp = line.find(' ');
    *key = line.substr(0, sp);
    *rest = sp == absl::string_view::npos ? absl::string_view() : line.substr(sp + 1);
    return true;
  }
  absl::Status Expect(absl::string_view want, absl::string_view* rest) {
    absl::string_view key;
    if (!Next(&key, rest)) return Error(absl::StrCat("ends before '", want, "'"));
    if (key != want) return Error(absl::StrCat("'", key, "' where '", want, "' belongs"));
    return absl::OkStatus();
  }
  absl::Status Words(absl::string_view rest, absl::string_view what, size_t max,
                     std::vector<uint64_t>* out) {
    for (absl::string_view w : absl::StrSplit(rest, ' ', absl::SkipEmpty())) {
      uint64_t v;
      if (!ParseHex(w, &v)) return Error(absl::StrCat(what, ": '", w, "' is not a hex number"));
      if (out->size() >= max) return Error(absl::StrCat(what, ": more than ", max, " values"));
      out->push_back(v);
    }
    return absl::OkStatus();
  }
  absl::Status StackBytes(size_t len, std::vector<uint8_t>* out) {
    out->reserve(len);
    while (out->size() < len) {
      absl::string_view key, rest;
      if (!Next(&key, &rest)) return Error("the stack bytes end early");
      if (!rest.empty() || key.size() % 2 || key.size() > 2 * kStackBytesPerLine ||
          !IsHexString(key) || key.size() / 2 > len - out->size()) {
        return Error("a stack line is not hex bytes (at most 64 a line, no more than the length)");
      }
      for (size_t i = 0; i < key.size(); i += 2) {
        out->push_back(static_cast<uint8_t>(HexDigit(key[i]) << 4 | HexDigit(key[i + 1])));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::vector<absl::string_view> lines_;
  absl::string_view name_;
  size_t at_ = 0, line_no_ = 0;
};

absl::Status ParseMapping(Parser& p, absl::string_view rest, Capture* c) {
  std::vector<absl::string_view> f = absl::StrSplit(rest, absl::MaxSplits(' ', 5));
  CaptureMapping m;
  if (f.size() != 6 || !ParseHex(f[0], &m.start) || !ParseHex(f[1], &m.end) ||
      !ParseHex(f[2], &m.bias) || f[5].empty()) {
    return p.Error("a mapping is <start> <end> <bias> <table|-> <build-id|-> <path>, in hex");
  }
  if (m.start >= m.end) return p.Error("a mapping ends before it starts");
  if (f[3] != "-") {
    uint64_t id;
    if (!ParseHex(f[3], &id) || id >= EHP_DEFAULT_TABLES) {
      return p.Error(absl::StrCat("a table id is hex, below ", EHP_DEFAULT_TABLES));
    }
    m.table_id = static_cast<uint32_t>(id);
  }
  if (f[4] != "-") {
    if (f[4].size() > 128 || !IsHexString(f[4])) return p.Error("a build-id is not hex");
    m.build_id = std::string(f[4]);
  }
  m.path = std::string(f[5]);
  if (c->mappings.size() >= EHP_MAX_MAPPINGS) {
    return p.Error(absl::StrCat("more than ", EHP_MAX_MAPPINGS, " mappings"));
  }
  c->mappings.push_back(std::move(m));
  return absl::OkStatus();
}

// entry <map> <key> <offset> <bytes>: within the map's capacity and value.
absl::Status ParseEntry(Parser& p, absl::string_view rest, Capture* c) {
  std::vector<absl::string_view> f = absl::StrSplit(rest, ' ');
  uint64_t key, offset;
  if (f.size() != 4 || !ParseHex(f[1], &key) || !ParseHex(f[2], &offset)) {
    return p.Error("an entry is <map> <key> <offset> <bytes>, in hex");
  }
  const std::optional<ehp_replay_map> map = HostMapNamed(f[0]);
  if (!map) return p.Error(absl::StrCat("an entry of '", f[0], "', which is no table map"));
  const HostMapShape& shape = ShapeOf(*map);
  const absl::string_view hex = f[3];
  if (hex.empty() || hex.size() % 2 || hex.size() > 2 * kEntryBytesPerLine || !IsHexString(hex)) {
    return p.Error("an entry's bytes are hex, 1 to 64 of them");
  }
  if (key >= shape.capacity || offset > shape.value_size || hex.size() / 2 > shape.value_size - offset) {
    return p.Error(absl::StrCat("an entry past ", shape.name, "'s ", shape.capacity, " keys of ",
                                shape.value_size, " bytes"));
  }
  CaptureEntry e;
  e.map = *map;
  e.key = static_cast<uint32_t>(key);
  e.offset = static_cast<uint32_t>(offset);
  for (size_t i = 0; i < hex.size(); i += 2) {
    e.bytes.push_back(static_cast<uint8_t>(HexDigit(hex[i]) << 4 | HexDigit(hex[i + 1])));
  }
  c->entries.push_back(std::move(e));
  return absl::OkStatus();
}

// A name or path on one line: a newline in it would end its record.
std::string OneLine(std::string s) {
  for (char& ch : s) {
    if (ch == '\n') ch = '?';
  }
  return s;
}

}  // namespace

std::string FormatCapture(const Capture& c) {
  std::string out = absl::StrFormat("ehprof-capture %d\ncomm %s\npid %d\nexact %d\nregs",
                                    kCaptureVersion, OneLine(c.comm), c.pid, c.exact ? 1 : 0);
  for (uint64_t r : c.regs) absl::StrAppendFormat(&out, " %x", r);
  out += "\n";
  for (const CaptureMapping& m : c.mappings) {
    absl::StrAppendFormat(&out, "mapping %x %x %x %s %s %s\n", m.start, m.end, m.bias,
                          m.table_id ? absl::StrFormat("%x", *m.table_id) : "-",
                          m.build_id.empty() ? "-" : m.build_id, OneLine(m.path));
  }
  absl::StrAppendFormat(&out, "walk %x", c.bpf_stop);
  for (uint64_t f : c.bpf_frames) absl::StrAppendFormat(&out, " %x", f);
  out += "\nlibdwfl";
  for (uint64_t f : c.libdwfl_frames) absl::StrAppendFormat(&out, " %x", f);
  absl::StrAppendFormat(&out, "\nlibdwfl-stop %s\n", OneLine(c.libdwfl_stop));
  for (const CaptureEntry& e : c.entries) {
    for (size_t at = 0; at < e.bytes.size(); at += kEntryBytesPerLine) {
      absl::StrAppendFormat(&out, "entry %s %x %x ", ShapeOf(e.map).name, e.key, e.offset + at);
      for (size_t i = at; i < std::min(e.bytes.size(), at + kEntryBytesPerLine); ++i) {
        absl::StrAppendFormat(&out, "%02x", e.bytes[i]);
      }
      out += "\n";
    }
  }
  absl::StrAppendFormat(&out, "stack %d\n", c.stack.size());
  for (size_t i = 0; i < c.stack.size(); ++i) {
    absl::StrAppendFormat(&out, "%02x", c.stack[i]);
    if (i % kStackBytesPerLine == kStackBytesPerLine - 1 || i + 1 == c.stack.size()) out += "\n";
  }
  out += "end\n";
  return out;
}

absl::StatusOr<Capture> ParseCapture(absl::string_view text, absl::string_view name) {
  Parser p(text, name);
  Capture c;
  absl::string_view rest;
  EHP_RETURN_IF_ERROR(p.Expect("ehprof-capture", &rest));
  if (rest == "1") {
    return p.Error(absl::StrCat("version 1, without the walk's tables and libdwfl's frames; this ehprof "
                                "reads version ", kCaptureVersion, ": record the capture again"));
  }
  if (rest != absl::StrCat(kCaptureVersion)) {
    return p.Error(absl::StrCat("version '", rest, "'; this ehprof reads version ", kCaptureVersion));
  }
  EHP_RETURN_IF_ERROR(p.Expect("comm", &rest));
  c.comm = std::string(rest.substr(0, 64));
  EHP_RETURN_IF_ERROR(p.Expect("pid", &rest));
  if (!absl::SimpleAtoi(rest, &c.pid)) return p.Error("pid is not a number");
  EHP_RETURN_IF_ERROR(p.Expect("exact", &rest));
  if (rest != "0" && rest != "1") return p.Error("exact is 0 or 1");
  c.exact = rest == "1";
  EHP_RETURN_IF_ERROR(p.Expect("regs", &rest));
  std::vector<uint64_t> regs;
  EHP_RETURN_IF_ERROR(p.Words(rest, "regs", EHP_REG_RIP + 1, &regs));
  if (regs.size() != EHP_REG_RIP + 1) return p.Error("regs has 17 values");
  std::copy(regs.begin(), regs.end(), c.regs);
  absl::string_view key;
  while (true) {
    if (!p.Next(&key, &rest)) return p.Error("ends before 'walk'");
    if (key == "walk") break;
    if (key != "mapping") return p.Error(absl::StrCat("'", key, "' where a mapping or 'walk' belongs"));
    EHP_RETURN_IF_ERROR(ParseMapping(p, rest, &c));
  }
  std::vector<uint64_t> walk;
  EHP_RETURN_IF_ERROR(p.Words(rest, "walk", EHP_MAX_USER_FRAMES + 1, &walk));
  if (walk.empty() || walk[0] >= EHP_STOP_REASON_COUNT) return p.Error("walk starts with a stop reason");
  c.bpf_stop = static_cast<uint32_t>(walk[0]);
  c.bpf_frames.assign(walk.begin() + 1, walk.end());
  EHP_RETURN_IF_ERROR(p.Expect("libdwfl", &rest));
  EHP_RETURN_IF_ERROR(p.Words(rest, "libdwfl", EHP_MAX_USER_FRAMES, &c.libdwfl_frames));
  EHP_RETURN_IF_ERROR(p.Expect("libdwfl-stop", &rest));
  c.libdwfl_stop = std::string(rest);
  while (true) {
    if (!p.Next(&key, &rest)) return p.Error("ends before 'stack'");
    if (key == "stack") break;
    if (key != "entry") return p.Error(absl::StrCat("'", key, "' where an entry or 'stack' belongs"));
    EHP_RETURN_IF_ERROR(ParseEntry(p, rest, &c));
  }
  size_t len = 0;
  if (!absl::SimpleAtoi(rest, &len) || len > EHP_VERIFY_STACK_MAX) {
    return p.Error(absl::StrCat("stack length is a number up to ", EHP_VERIFY_STACK_MAX));
  }
  EHP_RETURN_IF_ERROR(p.StackBytes(len, &c.stack));
  EHP_RETURN_IF_ERROR(p.Expect("end", &rest));
  while (p.Next(&key, &rest)) {
    if (!key.empty() || !rest.empty()) return p.Error("text after 'end'");
  }
  return c;
}

absl::StatusOr<Capture> ReadCaptureFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open capture ", path));
  std::string text;
  text.resize(kMaxCaptureFileBytes + 1);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > kMaxCaptureFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than any capture (", kMaxCaptureFileBytes, " bytes)"));
  }
  return ParseCapture(text, path);
}

absl::Status WriteCaptureFile(const Capture& c, const std::string& path) {
  EHP_ASSIGN_OR_RETURN(ExclusiveFile f, ExclusiveFile::Create(path + ".tmp"));
  f.stream() << FormatCapture(c);
  // Stack bytes of whatever process was sampled: its owner's secrets, so
  // the file is the recording user's alone.
  return f.Commit(path, 0600);
}

}  // namespace ehprof
