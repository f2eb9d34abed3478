#include "agent/output/perf_script_reader.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ehprof {
namespace {

constexpr uint64_t kKernelMin = 0xffff800000000000ull;

// "\t<hex> <symbol> (<dso>)": the symbol may hold spaces and parentheses,
// so the dso is the last parenthesised group.
bool ParseFrame(const std::string& line, ResolvedFrame* f) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return false;
  size_t sp = line.find(' ', i);
  if (sp == std::string::npos || !absl::SimpleHexAtoi(line.substr(i, sp - i), &f->addr)) return false;
  size_t close = line.find_last_not_of(" \r");
  if (close == std::string::npos || line[close] != ')') return false;
  size_t open = line.rfind(" (", close);
  if (open == std::string::npos || open < sp) return false;
  // "ADDR (DSO)" (perf script -F ip,dso): the space after the address is
  // the one before the dso, and the symbol is empty.
  f->symbol = open == sp ? std::string() : line.substr(sp + 1, open - sp - 1);
  f->dso = line.substr(open + 2, close - open - 2);
  f->inlined = f->dso == "inlined";
  f->kernel = f->addr >= kKernelMin || (f->dso.size() > 1 && f->dso[0] == '[' &&
                                         f->dso.rfind("[kernel", 0) == 0);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<ResolvedSample>> ReadPerfScript(std::istream& in,
                                                           const std::string& name) {
  std::vector<ResolvedSample> out;
  std::string line;
  size_t lineno = 0;
  bool in_sample = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      in_sample = false;
      continue;
    }
    if (line[0] == '\t' || line[0] == ' ') {
      ResolvedFrame f;
      if (!in_sample || !ParseFrame(line, &f)) {
        return absl::InvalidArgumentError(absl::StrCat(name, ":", lineno, ": not a frame line"));
      }
      out.back().frames.push_back(std::move(f));
      continue;
    }
    // "COMM TID" (perf may add more fields; the comm may hold spaces, the
    // first all-digit token after it is the tid).
    std::vector<std::string> tok = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ResolvedSample s;
    size_t t = 1;
    // "PID/TID" in perf's default header, a bare "TID" in the short one.
    for (; t < tok.size(); ++t) {
      const size_t slash = tok[t].find('/');
      if (slash == std::string::npos) {
        if (absl::SimpleAtoi(tok[t], &s.tid)) break;
      } else if (absl::SimpleAtoi(tok[t].substr(0, slash), &s.pid) &&
                 absl::SimpleAtoi(tok[t].substr(slash + 1), &s.tid)) {
        break;
      }
    }
    if (tok.empty() || t == tok.size()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", lineno, ": not a sample header"));
    }
    for (size_t k = 0; k < t; ++k) absl::StrAppend(&s.comm, k ? " " : "", tok[k]);
    out.push_back(std::move(s));
    in_sample = true;
  }
  return out;
}

}  // namespace ehprof
