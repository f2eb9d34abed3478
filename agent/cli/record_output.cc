#include "agent/cli/record_output.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
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
#include "base/output_target.h"
#include "base/printable_text.h"

namespace ehprof {
namespace {

uint64_t DwarfBudgetBytes(uint64_t mb) {
  if (mb != 0) return mb << 20;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t quarter = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page / 4 : 0;
  return std::max<uint64_t>(quarter, uint64_t{256} << 20);
}

// Finishes a report; a failure is said, naming the file.
void CommitReport(OutputTarget& target) {
  if (absl::Status s = target.Commit(); !s.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(s.message()).c_str());
  }
}

// --compare and --diff-folded: the same samples resolved with the other walk.
void WriteWalkComparison(const Recorder& rec, RecordTargets& targets, AddressSymbolizer& symbols,
                         const Kallsyms* kallsyms, const ResolveOptions& ro,
                         const std::vector<ResolvedSample>& resolved) {
  ResolveOptions other = ro;
  other.use_fp_walk = !ro.use_fp_walk;
  const std::vector<ResolvedSample> second =
      ResolveSamples(rec.samples(), *rec.tracker(), symbols, kallsyms, other);
  const auto& cfi = ro.use_fp_walk ? second : resolved;
  const auto& fp = ro.use_fp_walk ? resolved : second;
  if (targets.compare) {
    CallSiteChecker checker;
    WriteComparisonReport(CompareWalks(cfi, fp, checker), targets.compare->stream());
    CommitReport(*targets.compare);
  }
  if (targets.diff) {
    if (absl::Status s = WriteDiffFolded(cfi, fp, targets.diff->stream()); !s.ok()) {
      std::fprintf(stderr, "ehprof record: %s: %s\n", targets.diff->path().c_str(), std::string(s.message()).c_str());
    }
    CommitReport(*targets.diff);
  }
}

void WriteVerification(const Recorder& rec, std::optional<OutputTarget>& target) {
  VerifyResult vr = VerifyWalks(rec.samples(), rec.captures(), *rec.tracker());
  if (!target) {
    std::ostringstream text;
    WriteVerifyReport(vr, text);
    std::fputs(text.str().c_str(), stderr);
    return;
  }
  WriteVerifyReport(vr, target->stream());
  CommitReport(*target);
}

void SaveRecordedCaptures(const Recorder& rec, const std::string& dir) {
  auto n = SaveCaptures(rec.samples(), rec.captures(), *rec.tracker(), dir);
  if (!n.ok()) {
    std::fprintf(stderr, "ehprof record: --save-captures: %s\n", std::string(n.status().message()).c_str());
  } else {
    std::fprintf(stderr, "ehprof record: %zu captures saved in %s\n", n->written, dir.c_str());
    if (n->left_out > 0) {
      std::fprintf(stderr, "ehprof record: %zu captures left out (first: %s)\n", n->left_out,
                   n->first_left_out.c_str());
    }
  }
}

// Symbolizes the recording once, handing each resolved sample to `each`;
// writes the reports that need the samples one by one (--compare, --diff,
// --verify, --save-captures) on the way.
void Resolve(const Recorder& rec, const RecordOutput& out, RecordTargets& targets,
             absl::FunctionRef<void(ResolvedSample&&)> each) {
  const VdsoFile vdso_file(ReadOwnVdso());
  ResolveOptions ro;
  ro.use_fp_walk = out.fp_walk;
  ro.stop_frames = out.show_stops;
  ro.warnings = rec.warnings();
  ro.python = rec.python_codes();
  ro.jvm = rec.jvm_methods();
  ro.v8 = rec.v8_functions();
  ro.interp = rec.interp_frames();
  if (!vdso_file.path().empty()) ro.symbol_file_alias["[vdso]"] = vdso_file.path();
  auto kallsyms = Kallsyms::Load();
  if (!kallsyms.ok() && rec.summary().samples) {
    rec.warnings()->Add(absl::StrCat("kernel symbols unavailable: ", kallsyms.status().message()));
  }
  const Kallsyms* ksyms = kallsyms.ok() ? &*kallsyms : nullptr;
  // The agent's path, without its per-interval budget: one recording,
  // named once, with every DWARF session open to the end. What the files
  // (under -a or -p, other users') may expand is capped all together.
  AddressSymbolizer symbols({.max_expanded_dwarf_total = DwarfBudgetBytes(out.max_dwarf_mb),
                             .demangle = out.demangle},
                            rec.warnings());
  if (targets.compare || targets.diff) {
    // Both walks of every sample, side by side.
    std::vector<ResolvedSample> resolved = ResolveSamples(rec.samples(), *rec.tracker(), symbols, ksyms, ro);
    WriteWalkComparison(rec, targets, symbols, ksyms, ro, resolved);
    for (ResolvedSample& r : resolved) each(std::move(r));
  } else {
    ResolveEach([&](auto sample) { rec.list().ForEach(sample); }, *rec.tracker(), symbols, ksyms, ro, each);
  }
  if (!rec.captures().empty()) WriteVerification(rec, targets.verify);
  if (!out.captures_dir.empty()) SaveRecordedCaptures(rec, out.captures_dir);
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
  if (out.view == StackView::kRuntime) absl::StrAppend(&w.svg_details, " | runtime view");
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

Models BuildModels(const Recorder& rec, const RecordOutput& out, RecordTargets& targets) {
  bool per_sample = false, want_per_thread = false, want_shared = !out.wall;
  for (const OutputFile& f : out.files) {
    const OutputFormat& format = *FindOutputFormat(f.format);
    per_sample = per_sample || format.per_sample;
    (out.wall && format.per_thread_wall ? want_per_thread : want_shared) = true;
  }
  ProfileBuilder shared(per_sample, out.view), per_thread(false, out.view);
  const uint64_t period_ns = 1000000000 / out.frequency_hz;
  Resolve(rec, out, targets, [&](ResolvedSample&& s) {
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

// A profile whose -o failed while it was written (disk full, a closed
// pipe), in a file of its own in /tmp made exclusively: never lost.
std::string WriteFallback(const InternedProfile& profile, const OutputFile& f, const OutputSettings& w) {
  absl::StatusOr<ExclusiveFile> slot =
      ExclusiveFile::Create(absl::StrCat("/tmp/ehprof-", getpid(), "-"), absl::StrCat(".", f.format));
  absl::Status s = slot.ok() ? FindOutputFormat(f.format)->write(profile, w, slot->stream()) : slot.status();
  if (s.ok()) s = slot->Commit(slot->path());
  if (!s.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(s.message()).c_str());
    return "";
  }
  std::fprintf(stderr, "ehprof record: the profile was written to %s instead\n", slot->path().c_str());
  return absl::StrCat(slot->path(), " (", f.format, ")");
}

// Writes one -o into its target, opened before sampling. Returns what was
// written ("PATH (FORMAT)"), empty when nothing was.
std::string WriteOutputFile(const InternedProfile& profile, const OutputFile& f, OutputTarget& target,
                            const OutputSettings& w, bool* ok) {
  absl::Status st = FindOutputFormat(f.format)->write(profile, w, target.stream());
  if (st.ok()) st = target.Commit();
  if (st.ok()) return absl::StrCat(f.path == "-" ? "standard output" : f.path, " (", f.format, ")");
  *ok = false;
  std::fprintf(stderr, "ehprof record: %s\n", std::string(st.message()).c_str());
  // Only a failed rename leaves the whole profile behind (its message says
  // where); anything else is written again elsewhere.
  if (absl::IsPermissionDenied(st)) return "";
  return WriteFallback(profile, f, w);
}

// The report file of one option, when the option was given.
absl::Status OpenReport(const std::string& path, mode_t mode, std::optional<OutputTarget>* out) {
  if (path.empty()) return absl::OkStatus();
  absl::StatusOr<OutputTarget> t = OutputTarget::Open(path, mode);
  if (!t.ok()) return t.status();
  out->emplace(*std::move(t));
  return absl::OkStatus();
}

}  // namespace

bool SumsSamples(const std::string& format) {
  const OutputFormat* f = FindOutputFormat(format);
  return f != nullptr && !f->per_sample;
}

absl::StatusOr<RecordTargets> OpenRecordTargets(const RecordOutput& out) {
  RecordTargets t;
  for (const OutputFile& f : out.files) {
    absl::StatusOr<OutputTarget> target = OutputTarget::Open(f.path, out.mode);
    if (!target.ok()) return target.status();
    t.files.push_back(*std::move(target));
  }
  for (const auto& [path, target] : {std::pair{&out.compare_path, &t.compare}, std::pair{&out.diff_path, &t.diff},
                                     std::pair{&out.verify_path, &t.verify}}) {
    if (absl::Status s = OpenReport(*path, out.mode, target); !s.ok()) return s;
  }
  if (!out.captures_dir.empty()) {
    if (absl::Status s = MakeOwnDirectory(out.captures_dir, "--save-captures"); !s.ok()) return s;
  }
  return t;
}

int WriteRecording(const Recorder& rec, const RecordOutput& out, RecordTargets targets, bool recorded_ok) {
  const Models models = BuildModels(rec, out, targets);
  const OutputSettings w = MakeSettings(rec, out);
  bool ok = true;
  std::vector<std::string> written;
  for (size_t i = 0; i < out.files.size(); ++i) {
    const OutputFile& f = out.files[i];
    const bool per_thread = out.wall && FindOutputFormat(f.format)->per_thread_wall;
    std::string what = WriteOutputFile(per_thread ? models.per_thread : models.shared, f, targets.files[i], w, &ok);
    if (!what.empty()) written.push_back(std::move(what));
  }
  PrintSummary(rec, absl::StrJoin(written, ", "));
  return recorded_ok && ok ? kExitOk : kExitFailure;
}

}  // namespace ehprof
