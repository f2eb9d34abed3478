#include "agent/cli/record_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/cli/cli.h"
#include "agent/cli/record_summary.h"
#include "agent/output/output_formats.h"
#include "agent/output/output_svg.h"
#include "agent/output/wall_view.h"
#include "agent/process/vdso_file.h"
#include "agent/resolve/profile_resolver.h"
#include "agent/replay/save_captures.h"
#include "agent/verify/verify.h"
#include "agent/verify/walk_compare.h"
#include "base/exclusive_file.h"
#include "base/printable_text.h"

namespace ehprof {
namespace {

// Writes via a temporary file in the same directory, renamed at the end, so
// a failed write never leaves a truncated profile under the final name. The
// temporary file is made exclusively under an unpredictable name: root
// writing into /tmp or a shared directory never follows someone's link.
absl::Status WriteFile(const InternedProfile& profile, const std::string& path, const OutputFormat& format,
                       const OutputSettings& w, mode_t mode) {
  // A device or pipe (-o /dev/null, -o /dev/stdout) is written in place:
  // renaming a file over it would replace the device.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    if (absl::Status s = format.write(profile, w, out); !s.ok()) return s;
    out.flush();
    if (!out) return absl::DataLossError(absl::StrCat("writing ", path, " failed: ", std::strerror(errno)));
    return absl::OkStatus();
  }
  // A profile holds command lines, paths and symbols of whatever ran:
  // private to its owner (0600 from its creation) unless --output-mode says
  // otherwise.
  absl::StatusOr<ExclusiveFile> tmp = ExclusiveFile::Create(absl::StrCat(path, ".tmp."));
  if (!tmp.ok()) return tmp.status();
  if (absl::Status s = format.write(profile, w, tmp->stream()); !s.ok()) return s;
  return tmp->Commit(path, mode);
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  // Not all of them went through a Warnings (which makes them printable).
  for (const std::string& w : warnings) std::fprintf(stderr, "ehprof: warning: %s\n", PrintableText(w).c_str());
}

// --compare and --diff-folded: the same samples resolved with the other walk.
void WriteWalkComparison(const Recorder& rec, const RecordOutput& out, AddressSymbolizer& symbols,
                         const Kallsyms* kallsyms, const ResolveOptions& ro,
                         const std::vector<ResolvedSample>& resolved) {
  ResolveOptions other = ro;
  other.use_fp_walk = !ro.use_fp_walk;
  const std::vector<ResolvedSample> second =
      ResolveSamples(rec.samples(), *rec.tracker(), symbols, kallsyms, other);
  const auto& cfi = ro.use_fp_walk ? second : resolved;
  const auto& fp = ro.use_fp_walk ? resolved : second;
  if (!out.compare_path.empty()) {
    std::ofstream f(out.compare_path);
    CallSiteChecker checker;
    WriteComparisonReport(CompareWalks(cfi, fp, checker), f);
    if (!f) std::fprintf(stderr, "ehprof record: cannot write %s\n", out.compare_path.c_str());
  }
  if (!out.diff_path.empty()) {
    std::ofstream f(out.diff_path);
    if (!WriteDiffFolded(cfi, fp, f).ok() || !f) {
      std::fprintf(stderr, "ehprof record: cannot write %s\n", out.diff_path.c_str());
    }
  }
}

void WriteVerification(const Recorder& rec, const std::string& path) {
  VerifyResult vr = VerifyWalks(rec.samples(), rec.captures(), *rec.tracker());
  if (path.empty()) {
    std::ostringstream text;
    WriteVerifyReport(vr, text);
    std::fputs(text.str().c_str(), stderr);
    return;
  }
  std::ofstream f(path);
  WriteVerifyReport(vr, f);
  if (!f) std::fprintf(stderr, "ehprof record: cannot write %s\n", path.c_str());
}

void SaveRecordedCaptures(const Recorder& rec, const std::string& dir) {
  auto n = SaveCaptures(rec.samples(), rec.captures(), *rec.tracker(), dir);
  if (!n.ok()) {
    std::fprintf(stderr, "ehprof record: --save-captures: %s\n", std::string(n.status().message()).c_str());
  } else {
    std::fprintf(stderr, "ehprof record: %zu captures saved in %s\n", *n, dir.c_str());
  }
}

// Symbolizes the recording once, handing each resolved sample to `each`;
// writes the reports that need the samples one by one (--compare, --diff,
// --verify, --save-captures) on the way.
void Resolve(const Recorder& rec, const RecordOutput& out, absl::FunctionRef<void(ResolvedSample&&)> each) {
  const VdsoFile vdso_file(ReadOwnVdso());
  std::vector<std::string> resolve_warnings;
  ResolveOptions ro;
  ro.use_fp_walk = out.fp_walk;
  ro.warnings = &resolve_warnings;
  ro.python = rec.python_codes();
  if (!vdso_file.path().empty()) ro.symbol_file_alias["[vdso]"] = vdso_file.path();
  auto kallsyms = Kallsyms::Load();
  if (!kallsyms.ok() && rec.summary().samples) {
    std::fprintf(stderr, "ehprof: warning: kernel symbols unavailable: %s\n",
                 std::string(kallsyms.status().message()).c_str());
  }
  const Kallsyms* ksyms = kallsyms.ok() ? &*kallsyms : nullptr;
  // The agent's path, without its budget: one recording, named once.
  AddressSymbolizer symbols({.demangle = out.demangle});
  if (!out.compare_path.empty() || !out.diff_path.empty()) {
    // Both walks of every sample, side by side.
    std::vector<ResolvedSample> resolved = ResolveSamples(rec.samples(), *rec.tracker(), symbols, ksyms, ro);
    WriteWalkComparison(rec, out, symbols, ksyms, ro, resolved);
    for (ResolvedSample& r : resolved) each(std::move(r));
  } else {
    ResolveEach([&](auto sample) { rec.list().ForEach(sample); }, *rec.tracker(), symbols, ksyms, ro, each);
  }
  if (!rec.captures().empty()) WriteVerification(rec, out.verify_path);
  if (!out.captures_dir.empty()) SaveRecordedCaptures(rec, out.captures_dir);
  PrintWarnings(resolve_warnings);
  PrintWarnings(symbols.TakeWarnings());
}

OutputSettings MakeSettings(const Recorder& rec, const RecordOutput& out) {
  OutputSettings w;
  w.pprof.frequency_hz = out.frequency_hz;
  w.pprof.ns_type = out.wall ? "wall" : out.off_cpu ? "off_cpu" : "";
  w.pprof.count_type = out.probe_type;
  w.pprof.count_period = out.sample_period ? out.sample_period : 1;
  w.pprof.duration_nanos = static_cast<int64_t>(rec.summary().seconds * 1e9);
  w.pprof.time_nanos = static_cast<int64_t>(absl::ToUnixNanos(absl::Now())) - w.pprof.duration_nanos;
  // Keyed as the profile names each file (ProfileBuilder::String).
  if (rec.tracker()) {
    for (const auto& [path, id] : rec.tracker()->BuildIds()) w.pprof.build_ids.emplace(PrintableText(path), id);
  }
  // A rate only for a clock sampled at -F: probes and counters are counted,
  // --off-cpu alone is timed.
  const bool clocked = out.probe_type.empty() && (!out.off_cpu || out.wall);
  w.svg_details = FlameGraphDetails(out.target, clocked ? out.frequency_hz : 0,
                                    rec.summary().seconds, w.pprof.time_nanos);
  w.script.srcline = out.srcline;
  w.script.event = out.event;
  // Clock events count nanoseconds; a hardware event's period in frequency
  // mode varies from sample to sample and is not known here.
  w.script.period = out.sample_period        ? out.sample_period
                    : !out.probe_type.empty() ? 1
                    : out.clock_event         ? 1000000000 / out.frequency_hz
                                              : 0;
  w.folded.srcline = out.srcline;
  w.folded.annotate = out.folded_annotate;
  return w;
}

// The models the files are written from: one, or under --wall one per
// thread for the formats that sum by stack and one for the others.
struct Models {
  InternedProfile shared, per_thread;
};

Models BuildModels(const Recorder& rec, const RecordOutput& out) {
  bool per_sample = false, want_per_thread = false, want_shared = !out.wall;
  for (const OutputFile& f : out.files) {
    const OutputFormat& format = *FindOutputFormat(f.format);
    per_sample = per_sample || format.per_sample;
    (out.wall && format.per_thread_wall ? want_per_thread : want_shared) = true;
  }
  ProfileBuilder shared(per_sample), per_thread;
  const uint64_t period_ns = 1000000000 / out.frequency_hz;
  Resolve(rec, out, [&](ResolvedSample&& s) {
    if (!out.wall) {
      shared.Add(s);
      return;
    }
    if (want_per_thread) {
      ResolvedSample t = want_shared ? s : std::move(s);
      ToWallView(&t, period_ns, /*per_thread=*/true);
      per_thread.Add(t);
    }
    if (want_shared) {
      ToWallView(&s, period_ns, /*per_thread=*/false);
      shared.Add(s);
    }
  });
  return {shared.Take(), per_thread.Take()};
}

// Writes one -o; a path that cannot be written sends the profile to /tmp.
// Returns what was written ("PATH (FORMAT)"), empty when nothing was.
std::string WriteOutputFile(const InternedProfile& profile, const OutputFile& f, const OutputSettings& w,
                            mode_t mode, bool* ok) {
  const OutputFormat& format = *FindOutputFormat(f.format);
  absl::Status st = WriteFile(profile, f.path, format, w, mode);
  if (st.ok()) return absl::StrCat(f.path, " (", f.format, ")");
  *ok = false;
  std::fprintf(stderr, "ehprof record: %s\n", std::string(st.message()).c_str());
  // A name of its own in /tmp, made exclusively (never an existing file or
  // link); the profile is then written beside it and renamed over it.
  absl::StatusOr<ExclusiveFile> slot =
      ExclusiveFile::Create(absl::StrCat("/tmp/ehprof-", getpid(), "-"), absl::StrCat(".", f.format));
  if (!slot.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(slot.status().message()).c_str());
    return "";
  }
  const std::string fallback = slot->path();
  if (absl::Status s = WriteFile(profile, fallback, format, w, 0600); !s.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(s.message()).c_str());
    ::unlink(fallback.c_str());
    return "";
  }
  std::fprintf(stderr, "ehprof record: the profile was written to %s instead\n", fallback.c_str());
  return absl::StrCat(fallback, " (", f.format, ")");
}

}  // namespace

bool SumsSamples(const std::string& format) {
  const OutputFormat* f = FindOutputFormat(format);
  return f != nullptr && !f->per_sample;
}

int WriteRecording(const Recorder& rec, const RecordOutput& out, bool recorded_ok) {
  const Models models = BuildModels(rec, out);
  const OutputSettings w = MakeSettings(rec, out);
  bool ok = true;
  std::vector<std::string> written;
  for (const OutputFile& f : out.files) {
    const bool per_thread = out.wall && FindOutputFormat(f.format)->per_thread_wall;
    std::string what = WriteOutputFile(per_thread ? models.per_thread : models.shared, f, w, out.mode, &ok);
    if (!what.empty()) written.push_back(std::move(what));
  }
  PrintSummary(rec, absl::StrJoin(written, ", "));
  return recorded_ok && ok ? kExitOk : kExitFailure;
}

}  // namespace ehprof
