// `ehprof record`: sample, unwind in BPF, write the profile.
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/cli/cli.h"
#include "agent/cli/record_summary.h"
#include "agent/output/output_folded.h"
#include "agent/output/output_perf_script.h"
#include "agent/output/output_pprof.h"
#include "agent/output/output_svg.h"
#include "agent/output/output_text.h"
#include "agent/process/vdso_file.h"
#include "agent/record/recorder.h"
#include "agent/resolve/profile_resolver.h"
#include "agent/resolve/stop_reasons.h"
#include "agent/verify/verify.h"
#include "agent/verify/walk_compare.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "symbolizer/symbol_cache.h"

namespace ehprof {
namespace {

constexpr char kHelp[] = R"(usage: ehprof record [options] [-- COMMAND [ARGS...]]

Samples CPU stacks and unwinds user stacks in the kernel with the binaries'
CFI (no frame pointers needed). Target: a COMMAND (and its children, until
it exits), -p, -t, or -a. Ctrl-C ends a recording and still writes it.

options:
  -F HZ              sampling frequency (default 99)
  -d SECONDS         stop after this long
  -p PID[,PID...]    profile these processes (until they exit or Ctrl-C)
  -t TID[,TID...]    profile these threads
  -a                 profile the whole system
  -e EVENT           cpu-clock (default, works in VMs), task-clock, cycles
  -K                 kernel stacks only      -U  user stacks only
  --unwinder U       dwarf (default: CFI, frame pointers where no CFI),
                     fp (frame pointers only), both (record both walks)
  -o FILE            output file (default ehprof.folded)
  --format F         svg | folded | perf-script | pprof | text (default: from the
                     -o extension: .svg -> svg (an interactive flame graph),
                     .folded/.collapsed -> folded, .pb.gz/.pprof -> pprof,
                     else perf-script)
  --fp-walk          with --unwinder both: write the frame-pointer walk
  --compare FILE     with --unwinder both: write the FP-vs-CFI report
  --diff-folded FILE with --unwinder both: "stack FP_COUNT CFI_COUNT" lines
                     (a differential flame graph for flamegraph.pl)
  --output-mode OCT  permissions of the output file (default 0600: profiles
                     show what ran on the machine)
  --no-demangle      keep C++ names as the binaries spell them
  --srcline          perf-script: each frame's file:line on the next line
                     (as perf script -F +srcline); folded: name (file:line)
  --table-memory MB  memory for unwind tables in BPF maps (default 64); when
                     full, unused tables are evicted (least recently used
                     first), then files go without (frame pointers there)
  --max-procs N      processes the BPF process map holds (default 4096,
                     32 KiB each, allocated as used); beyond it user
                     stacks stop at the leaf
  --table-cache DIR  built unwind tables kept across runs, checked on load
                     (default /var/cache/ehprof/tables, 1 GiB at most;
                     --no-table-cache: build every run)
  --verify[=N]       also capture registers and 64 KiB of stack for every
                     Nth sample (default 10), unwind that copy with libdwfl
                     and report how the in-kernel walk agrees, frame by frame
  --verify-report F  write that report to F (default: stderr)
  -q                 no live status line
  -h, --help         this text
)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


// Writes via a temporary file in the same directory, renamed at the end, so
// a failed write never leaves a truncated profile under the final name.
absl::Status WriteOutput(const std::vector<ResolvedSample>& samples, const std::string& path,
                         const std::string& format, const PprofOptions& pprof,
                         const PerfScriptOptions& script, mode_t mode) {
  const bool srcline = script.srcline;
  // A device or pipe (-o /dev/null, -o /dev/stdout) is written in place:
  // renaming a file over it would replace the device.
  struct stat st;
  const bool special = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const std::string tmp = special ? path : absl::StrCat(path, ".tmp.", getpid());
  {
    // A profile holds command lines, paths and symbols of whatever ran:
    // private to its owner unless --output-mode says otherwise. umask(077)
    // keeps the file from ever existing with wider permissions.
    const mode_t old_umask = special ? ::umask(0) : ::umask(077);
    if (special) ::umask(old_umask);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!special) ::umask(old_umask);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
    absl::Status st;
    if (format == "folded") {
      st = WriteFolded(samples, out, srcline);
    } else if (format == "pprof") {
      st = WritePprof(samples, out, pprof);
    } else if (format == "text") {
      st = WriteText(samples, out);
    } else if (format == "svg") {
      FlameGraphOptions fg;
      uint64_t total = 0;
      for (const ResolvedSample& r : samples) total += r.count;
      fg.title = absl::StrCat("ehprof: ", total, " samples");
      st = WriteFlameGraphSvg(samples, out, fg);
    } else {
      st = WritePerfScript(samples, out, script);
    }
    if (!st.ok()) return st;
    out.flush();
    if (!out) {
      return absl::DataLossError(absl::StrCat("writing ", tmp, " failed (disk full?): ",
                                              std::strerror(errno), "; partial output kept there"));
    }
  }
  if (!special && mode != 0600 && ::chmod(tmp.c_str(), mode) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot chmod ", tmp, ": ", std::strerror(errno)));
  }
  if (!special && std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ",
                                                    std::strerror(errno), "; the profile is in ", tmp));
  }
  return absl::OkStatus();
}

}  // namespace

int RunRecordCommand(const std::vector<std::string>& args) {
  RecordOptions o;
  o.live_status = isatty(STDERR_FILENO);
  std::string output = "ehprof.folded", format;
  bool use_fp_walk = false;
  bool demangle = true;
  bool srcline = false;
  mode_t output_mode = 0600;
  std::string compare_path, diff_path, verify_path;
  uint64_t table_mb = 64;
  uint32_t max_procs = MapSizes{}.procs;
  int targets = 0;
  std::string event_name = "cpu-clock";
  bool o_event_is_clock = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) return false;
      *v = args[++i];
      return true;
    };
    std::string v;
    if (IsHelpFlag(a)) {
      std::fputs(kHelp, stdout);
      return kExitOk;
    } else if (a == "--") {
      o.command.assign(args.begin() + i + 1, args.end());
      if (o.command.empty()) return UsageError("record", "-- needs a COMMAND");
      ++targets;
      break;
    } else if (a == "-F") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.frequency_hz) || o.frequency_hz == 0 ||
          o.frequency_hz > 100000) {
        return UsageError("record", "-F takes a frequency in Hz (1..100000)");
      }
    } else if (a == "-d") {
      if (!value(&v) || !absl::SimpleAtod(v, &o.duration_s) || o.duration_s <= 0) {
        return UsageError("record", "-d takes a positive number of seconds");
      }
    } else if (a == "-p") {
      if (!value(&v) || !ParseIdList(v, &o.pids)) return UsageError("record", "-p takes PID[,PID...]");
      ++targets;
    } else if (a == "-t") {
      if (!value(&v) || !ParseIdList(v, &o.tids)) return UsageError("record", "-t takes TID[,TID...]");
      ++targets;
    } else if (a == "-a") {
      o.all = true;
      ++targets;
    } else if (a == "-K") {
      o.user = false;
    } else if (a == "-U") {
      o.kernel = false;
    } else if (a == "-q") {
      o.live_status = false;
    } else if (a == "--no-demangle") {
      demangle = false;
    } else if (a == "--srcline") {
      srcline = true;
    } else if (a == "--output-mode") {
      uint32_t m = 0;
      if (!value(&v) || v.empty() || v.find_first_not_of("01234567") != std::string::npos ||
          (m = static_cast<uint32_t>(std::stoul(v, nullptr, 8))) > 0777) {
        return UsageError("record", "--output-mode takes octal permissions such as 0644");
      }
      output_mode = static_cast<mode_t>(m);
    } else if (a == "--fp-walk") {
      use_fp_walk = true;
    } else if (a == "--verify") {
      o.verify_every = 10;
    } else if (a.rfind("--verify=", 0) == 0) {
      if (!absl::SimpleAtoi(a.substr(9), &o.verify_every) || o.verify_every == 0) {
        return UsageError("record", "--verify=N takes a positive N");
      }
    } else if (a == "--verify-report") {
      if (!value(&verify_path)) return UsageError("record", "--verify-report takes a file");
    } else if (a == "--compare") {
      if (!value(&compare_path)) return UsageError("record", "--compare takes a file");
    } else if (a == "--diff-folded") {
      if (!value(&diff_path)) return UsageError("record", "--diff-folded takes a file");
    } else if (a == "-e") {
      if (!value(&v)) return UsageError("record", "-e takes an event");
      event_name = v;
      o_event_is_clock = v != "cycles";
      if (v == "cpu-clock") {
        o.event_type = PERF_TYPE_SOFTWARE;
        o.event_config = PERF_COUNT_SW_CPU_CLOCK;
      } else if (v == "task-clock") {
        o.event_type = PERF_TYPE_SOFTWARE;
        o.event_config = PERF_COUNT_SW_TASK_CLOCK;
      } else if (v == "cycles") {
        o.event_type = PERF_TYPE_HARDWARE;
        o.event_config = PERF_COUNT_HW_CPU_CYCLES;
      } else {
        return UsageError("record", absl::StrCat("unknown event ", v, " (cpu-clock, task-clock, cycles)"));
      }
    } else if (a == "--unwinder") {
      if (!value(&v)) return UsageError("record", "--unwinder takes dwarf, fp or both");
      if (v == "dwarf") o.unwinder = EHP_UNWINDER_DWARF;
      else if (v == "fp") o.unwinder = EHP_UNWINDER_FP;
      else if (v == "both") o.unwinder = EHP_UNWINDER_BOTH;
      else return UsageError("record", "--unwinder takes dwarf, fp or both");
    } else if (a == "-o") {
      if (!value(&output) || output.empty()) return UsageError("record", "-o takes a file");
    } else if (a == "--format") {
      if (!value(&format) || (format != "folded" && format != "perf-script" && format != "pprof" &&
                              format != "svg" && format != "text")) {
        return UsageError("record", "--format takes svg, folded, perf-script, pprof or text");
      }
    } else if (a == "--table-memory") {
      if (!value(&v) || !absl::SimpleAtoi(v, &table_mb) || table_mb < 1 || table_mb > 65536) {
        return UsageError("record", "--table-memory takes megabytes (1..65536)");
      }
    } else if (a == "--table-cache") {
      if (!value(&o.table_cache_dir) || o.table_cache_dir.empty() || o.table_cache_dir[0] != '/') {
        return UsageError("record", "--table-cache takes an absolute directory");
      }
      o.table_cache_explicit = true;
    } else if (a == "--no-table-cache") {
      o.table_cache_dir.clear();
    } else if (a == "--max-procs") {
      if (!value(&v) || !absl::SimpleAtoi(v, &max_procs) || max_procs < 1 || max_procs > 1 << 20) {
        return UsageError("record", "--max-procs takes a count (1..1048576)");
      }
    } else {
      return UsageError("record", absl::StrCat("unknown option ", a));
    }
  }
  if (targets == 0) return UsageError("record", "say what to profile: -- COMMAND, -p, -t or -a");
  if (targets > 1) return UsageError("record", "give one of -- COMMAND, -p, -t, -a");
  if (!o.user && !o.kernel) return UsageError("record", "-K and -U exclude each other");
  if ((use_fp_walk || !compare_path.empty() || !diff_path.empty()) &&
      o.unwinder != EHP_UNWINDER_BOTH) {
    return UsageError("record", "--fp-walk, --compare and --diff-folded need --unwinder both");
  }
  if (format.empty()) {
    format = EndsWith(output, ".folded") || EndsWith(output, ".collapsed") ? "folded"
             : EndsWith(output, ".pb.gz") || EndsWith(output, ".pprof")   ? "pprof"
             : EndsWith(output, ".svg")                                   ? "svg"
                                                                          : "perf-script";
  }
  const uint64_t frequency_hz = o.frequency_hz;
  // Outputs that sum samples take them aggregated (memory by distinct
  // stack); perf-script and text print each sample with its time, and
  // --verify / --compare pair samples one by one.
  o.aggregate = (format == "folded" || format == "svg" || format == "pprof") && o.verify_every == 0 &&
                compare_path.empty() && diff_path.empty();
  o.sizes = SizesForMemory(table_mb);
  o.sizes.procs = max_procs;

  InstallStopSignalHandlers();
  // One fd is kept per mapped file (for symbolizing files replaced or
  // deleted meanwhile); -a on a big machine needs more than the soft limit.
  rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  Recorder rec(std::move(o));
  absl::Status run = rec.Run();
  for (const std::string& w : rec.TakeWarnings()) {
    std::fprintf(stderr, "ehprof: warning: %s\n", w.c_str());
  }
  if (!run.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(run.message()).c_str());
    if (rec.samples().empty()) return kExitFailure;
  }

  // Symbolize and write what was collected, whatever ended the recording.
  std::vector<uint8_t> vdso = ReadOwnVdso();
  std::vector<std::string> resolve_warnings;
  ResolveOptions ro;
  ro.use_fp_walk = use_fp_walk;
  ro.demangle = demangle;
  ro.warnings = &resolve_warnings;
  const VdsoFile vdso_file(vdso);
  if (!vdso_file.path().empty()) ro.symbol_file_alias["[vdso]"] = vdso_file.path();
  auto kallsyms = Kallsyms::Load();
  if (!kallsyms.ok() && rec.summary().samples) {
    std::fprintf(stderr, "ehprof: warning: kernel symbols unavailable: %s\n",
                 std::string(kallsyms.status().message()).c_str());
  }
  auto elf_names = std::make_shared<SymbolCache>();
  DwarfSymbolizer symbols(elf_names);
  ro.symbol_table_names = elf_names.get();
  std::vector<ResolvedSample> resolved = ResolveSamples(
      rec.samples(), *rec.tracker(), symbols, kallsyms.ok() ? &*kallsyms : nullptr, ro);
  if (!compare_path.empty() || !diff_path.empty()) {
    ResolveOptions other = ro;
    other.use_fp_walk = !ro.use_fp_walk;
    std::vector<ResolvedSample> second = ResolveSamples(
        rec.samples(), *rec.tracker(), symbols, kallsyms.ok() ? &*kallsyms : nullptr, other);
    const auto& cfi = ro.use_fp_walk ? second : resolved;
    const auto& fp = ro.use_fp_walk ? resolved : second;
    if (!compare_path.empty()) {
      std::ofstream out(compare_path);
      CallSiteChecker checker;
      WriteComparisonReport(CompareWalks(cfi, fp, checker), out);
      if (!out) std::fprintf(stderr, "ehprof record: cannot write %s\n", compare_path.c_str());
    }
    if (!diff_path.empty()) {
      std::ofstream out(diff_path);
      if (!WriteDiffFolded(cfi, fp, out).ok() || !out) {
        std::fprintf(stderr, "ehprof record: cannot write %s\n", diff_path.c_str());
      }
    }
  }
  if (!rec.captures().empty()) {
    VerifyResult vr = VerifyWalks(rec.samples(), rec.captures(), *rec.tracker());
    if (verify_path.empty()) {
      std::ostringstream text;
      WriteVerifyReport(vr, text);
      std::fputs(text.str().c_str(), stderr);
    } else {
      std::ofstream out(verify_path);
      WriteVerifyReport(vr, out);
      if (!out) std::fprintf(stderr, "ehprof record: cannot write %s\n", verify_path.c_str());
    }
  }
  for (const std::string& w : resolve_warnings) {
    std::fprintf(stderr, "ehprof: warning: %s\n", w.c_str());
  }
  for (const std::string& w : symbols.TakeWarnings()) {
    std::fprintf(stderr, "ehprof: warning: %s\n", w.c_str());
  }
  PprofOptions pprof;
  pprof.frequency_hz = frequency_hz;
  pprof.duration_nanos = static_cast<int64_t>(rec.summary().seconds * 1e9);
  pprof.time_nanos = static_cast<int64_t>(absl::ToUnixNanos(absl::Now())) - pprof.duration_nanos;
  pprof.build_ids = rec.tracker() ? rec.tracker()->BuildIds() : std::map<std::string, std::string>{};
  PerfScriptOptions script;
  script.srcline = srcline;
  script.event = event_name;
  // Clock events count nanoseconds; a hardware event's period in frequency
  // mode varies from sample to sample and is not known here.
  script.period = o_event_is_clock ? 1000000000 / frequency_hz : 0;
  absl::Status wst = WriteOutput(resolved, output, format, pprof, script, output_mode);
  if (!wst.ok()) {
    // Never lose a recording to a bad -o: keep it where it can be written.
    const std::string fallback = absl::StrCat("/tmp/ehprof-", getpid(), ".", format);
    std::fprintf(stderr, "ehprof record: %s\n", std::string(wst.message()).c_str());
    if (WriteOutput(resolved, fallback, format, pprof, script, 0600).ok()) {
      std::fprintf(stderr, "ehprof record: the profile was written to %s instead\n", fallback.c_str());
      PrintSummary(rec, absl::StrCat(fallback, " (", format, ")"));
    } else {
      PrintSummary(rec, "");
    }
    return kExitFailure;
  }
  PrintSummary(rec, absl::StrCat(output, " (", format, ")"));
  return run.ok() ? kExitOk : kExitFailure;
}

}  // namespace ehprof
