// `ehprof record`: sample, unwind in BPF, write the profile.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/cli/cli.h"
#include "agent/cli/record_output.h"
#include "agent/output/output_formats.h"
#include "agent/record/recorder.h"
#include "agent/record/run_control.h"
#include "base/parse_number.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Samples CPU stacks and unwinds user stacks in the kernel with the binaries'
CFI (no frame pointers needed). Target: a COMMAND (and its children, until
it exits), -p, -t, or -a. Ctrl-C ends a recording and still writes it.)";

constexpr char kFooter[] = R"(Formats by -o's extension unless --format says: .svg -> svg (an interactive
flame graph), .folded/.collapsed -> folded, .pb.gz/.pprof -> pprof, else
perf-script. Several -o write several formats from one recording
(-o p.svg -o p.pb.gz); each then takes its format from its extension.)";

// What the options set beyond RecordOptions and RecordOutput.
struct RecordFlags {
  SamplingFlags sampling;
  bool kernel_only = false;
  bool user_only = false;
  bool quiet = false;
  bool no_demangle = false;
  std::string unwinder = "dwarf";
  std::string output_mode;
  OffCpuFlags off_cpu;
  bool wall = false;
  std::string call_graph;  // -g/--call-graph: accepted, unused
  std::vector<std::string> outputs;  // every -o
  std::string format;
  std::string view = "full";
};

void AddWallOption(CLI::App& app, RecordFlags* f) {
  app.add_flag("--wall", f->wall,
               "on-CPU samples (weighted by their period) and off-CPU time in one profile, per "
               "thread, in nanoseconds: where each thread's wall-clock time went; off-CPU stacks "
               "end in an [off-cpu] frame")
      ->group("off-CPU");
}

void AddTargetOptions(CLI::App& app, RecordOptions* o) {
  app.add_option("-d,--duration", o->duration_s, "stop after this long")->type_name("SECONDS")->check(
      Positive());
  app.add_option("-D,--delay", o->delay_ms,
                 "sample from MS milliseconds after the start (a command's start-up, say), as perf record -D: "
                 "no sampling interrupts before it")
      ->type_name("MS")
      ->check(InRange(0.0, 1e9));
  app.add_option("-t,--tid", o->tids, "profile these threads")
      ->type_name("TID[,TID...]")
      ->delimiter(',')
      ->check(Positive())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("-a,--all-cpus", o->all, "profile the whole system");
  app.add_option("COMMAND", o->command, "the command to profile, after --")->type_name("ARGS...")->expected(-1);
}

void AddWalkOptions(CLI::App& app, RecordOptions* o, RecordFlags* f, RecordOutput* out) {
  // perf's way of asking for stacks; ehprof always records them.
  app.add_option("-g,--call-graph", f->call_graph,
                 "accepted as perf takes it; stacks are always recorded, unwound with CFI "
                 "(--unwinder chooses)")
      ->type_name("[=MODE]")
      ->expected(0, 1);
  app.add_flag("-K", f->kernel_only, "kernel stacks only");
  app.add_flag("-U", f->user_only, "user stacks only");
  app.add_option("--unwinder", f->unwinder,
                 "dwarf (default: CFI, frame pointers where no CFI), fp (frame pointers only), both "
                 "(record both walks)")
      ->type_name("U")
      ->check(CLI::IsMember({"dwarf", "fp", "both"}).description(""));
  app.add_flag("--show-stops", out->show_stops,
               "a stack the walk could not finish ends in a frame naming why, \"[stop: REASON]\" (one "
               "finished from its stack's copy once its table was loaded, in \"[finished late]\")");
  app.add_flag("--fp-walk", out->fp_walk, "with --unwinder both: write the frame-pointer walk");
  app.add_option("--compare", out->compare_path, "with --unwinder both: write the FP-vs-CFI report")
      ->type_name("FILE");
  app.add_option("--diff-folded", out->diff_path,
                 "with --unwinder both: \"stack FP_COUNT CFI_COUNT\" lines (a differential flame "
                 "graph for flamegraph.pl)")
      ->type_name("FILE");
  app.add_option("--verify", o->verify_every,
                 "also capture registers and 64 KiB of stack for every Nth sample (default 10), "
                 "unwind that copy with libdwfl and report how the in-kernel walk agrees, frame by "
                 "frame")
      ->type_name("[=N]")
      ->expected(0, 1)
      ->default_str("10")  // what --verify alone means
      ->check(Positive());
  app.add_flag("--alternate-interp-walks", o->alternate_interp_walks,
               "every other sample walks native frames only, no interpreter's (Python, Ruby, PHP, "
               "Perl), and the summary gives the BPF time of each half: what those walks cost, "
               "measured within one run (bench/interp_cost.py)");
  app.add_option("--verify-report", out->verify_path, "write that report to FILE (default: stderr)")
      ->type_name("FILE");
  app.add_option("--save-captures", out->captures_dir,
                 "with --verify: keep each capture (registers, stack, mappings with build-ids, the "
                 "kernel's walk) as a file in DIR, for `ehprof replay`")
      ->type_name("DIR");
}

void AddOutputOptions(CLI::App& app, RecordFlags* f, RecordOutput* out) {
  // Several -o: every format from the one recording and symbolization
  // (unlike perf's -o, which takes the last).
  app.add_option("-o,--output", f->outputs,
                 "output file (default ehprof.folded; -: standard output); give several for several "
                 "formats")
      ->type_name("FILE")
      ->allow_extra_args(false)  // one file an -o: "-o a.svg CMD" leaves CMD alone
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator([](std::string& s) { return s.empty() ? "takes a file" : ""; }, ""));
  std::vector<std::string> names;
  for (const OutputFormat& format : OutputFormats()) names.emplace_back(format.name);
  app.add_option("--format", f->format, absl::StrCat(OutputFormatNames(), " (default: from -o)"))
      ->type_name("F")
      ->check(CLI::IsMember(names).description(""));
  app.add_option("--output-mode", f->output_mode,
                 "permissions of the output file (default 0600: profiles show what ran on the machine)")
      ->type_name("OCTAL")
      ->check(CLI::Validator(
          [](std::string& s) {
            const std::optional<unsigned> mode = s.size() <= 4 ? ParseUnsigned<unsigned>(s, 8) : std::nullopt;
            return mode && *mode <= 0777
                       ? ""
                       : "takes octal permissions such as 0644";
          },
          ""));
  app.add_flag("--no-demangle", f->no_demangle, "keep C++ names as the binaries spell them");
  app.add_option("--max-dwarf-mb", out->max_dwarf_mb,
                 "compressed debug sections all files may expand to in memory at once; past it "
                 "files are named from their symbol tables, said once (default: a quarter of the "
                 "machine's memory, at least 256)")
      ->type_name("MB")
      ->check(Positive());
  app.add_flag("--srcline", out->srcline,
               "perf-script: each frame's file:line on the next line (as perf script -F +srcline); "
               "folded: name (file:line)");
  app.add_flag("--folded-annotate", out->folded_annotate,
               "folded: kernel frames end in _[k], inlined ones in _[i], JIT ones in _[j] (as "
               "stackcollapse-perf.pl --all; plain names without it)");
  AddViewOption(app, &f->view);
  app.add_flag("-q,--quiet", f->quiet, "no live status line");
}

// Several -o: each file once, standard output at most once, and no
// --format (which of the files would it name?).
std::string CheckOutputs(const RecordFlags& f) {
  if (f.outputs.size() > 1 && !f.format.empty()) {
    return "--format goes with one -o; several -o take their formats from their extensions";
  }
  std::vector<std::string> sorted = f.outputs;
  std::sort(sorted.begin(), sorted.end());
  auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end()) return "-o " + *twice + " given twice";
  return "";
}

// The checks no single option can make; an empty string when all hold.
std::string CheckCombination(const RecordOptions& o, const RecordFlags& f, const RecordOutput& out) {
  const int targets = !o.command.empty() + !o.pids.empty() + !o.tids.empty() + o.all;
  if (targets == 0) return "say what to profile: -- COMMAND, -p, -t or -a";
  if (targets > 1) return "give one of -- COMMAND, -p, -t, -a";
  if (f.kernel_only && f.user_only) return "-K and -U exclude each other";
  if (f.wall && f.off_cpu.off_cpu) return "--wall includes --off-cpu: give one";
  if (f.wall && !IsClockEvent(f.sampling.event)) return "--wall weighs samples by time: -e cpu-clock or task-clock";
  if (f.wall && o.sample_period) return "--wall takes -F, not -c";  // -F sets its fixed period
  if ((f.off_cpu.off_cpu || f.wall) && LooksLikeProbe(f.sampling.event)) {
    return "--off-cpu and --wall exclude a probe -e";
  }
  if ((f.off_cpu.off_cpu || f.wall) && (o.verify_every != 0 || f.unwinder == "both")) {
    return "--off-cpu takes neither --verify nor --unwinder both";
  }
  if (!out.captures_dir.empty() && o.verify_every == 0) return "--save-captures needs --verify";
  if ((out.fp_walk || !out.compare_path.empty() || !out.diff_path.empty()) && f.unwinder != "both") {
    return "--fp-walk, --compare and --diff-folded need --unwinder both";
  }
  return CheckOutputs(f);
}

void ApplyOffCpu(const RecordFlags& f, RecordOptions* o, RecordOutput* out);

// What was profiled, in the words of the command line, for the SVG's title.
std::string TargetText(const RecordOptions& o) {
  if (!o.command.empty()) return absl::StrJoin(o.command, " ");
  if (o.all) return "-a (all CPUs)";
  if (!o.pids.empty()) return absl::StrCat("-p ", absl::StrJoin(o.pids, ","));
  return absl::StrCat("-t ", absl::StrJoin(o.tids, ","));
}

void Apply(const RecordFlags& f, const CLI::App& app, RecordOptions* o, RecordOutput* out) {
  ApplySamplingFlags(f.sampling, app, o);
  o->kernel = !f.user_only;
  o->user = !f.kernel_only;
  o->unwinder = f.unwinder == "fp" ? EHP_UNWINDER_FP : f.unwinder == "both" ? EHP_UNWINDER_BOTH : EHP_UNWINDER_DWARF;
  if (f.quiet) o->live_status = false;
  if (!f.output_mode.empty()) out->mode = static_cast<mode_t>(ParseUnsigned<unsigned>(f.output_mode, 8).value_or(0600));
  out->demangle = !f.no_demangle;
  out->view = ViewOf(f.view);
  if (!f.outputs.empty()) out->files.clear();
  for (const std::string& path : f.outputs) {
    const std::string format = f.format.empty() ? std::string(FormatForPath(path).name) : f.format;
    out->files.push_back({path, format});
  }
  if (f.outputs.empty() && !f.format.empty()) out->files[0].format = f.format;
  out->event = f.sampling.event;
  out->target = TargetText(*o);
  out->clock_event = IsClockEvent(f.sampling.event);
  if (!o->probes.empty()) out->probe_type = o->probes[0].type_name();
  // A counter (cycles, cache-misses): counted, not timed.
  if (o->probes.empty() && !out->clock_event) out->probe_type = f.sampling.event;
  out->sample_period = o->sample_period;
  out->frequency_hz = o->frequency_hz;
  // A clock sampled every N ns (-e cpu-clock -c N) is N ns a sample.
  if (out->clock_event && o->sample_period) {
    out->frequency_hz = std::max<uint64_t>(1, 1000000000 / o->sample_period);
  }
  ApplyOffCpu(f, o, out);
  // Outputs that sum samples take them aggregated (memory by distinct
  // stack); perf-script and text print each sample with its time, and
  // --verify / --compare pair samples one by one.
  o->aggregate = std::all_of(out->files.begin(), out->files.end(),
                             [](const OutputFile& file) { return SumsSamples(file.format); }) &&
                 o->verify_every == 0 && out->compare_path.empty() && out->diff_path.empty();
}

// --off-cpu (off-CPU time only) and --wall (the sampler and off-CPU time).
void ApplyOffCpu(const RecordFlags& f, RecordOptions* o, RecordOutput* out) {
  ApplyOffCpuFlags(f.off_cpu, o);
  if (f.wall) {
    o->off_cpu = true;
    out->wall = true;
    // A fixed period, not frequency mode: the kernel retunes a frequency-
    // mode clock's period as it goes, and every on-CPU sample must stand
    // for the same nanoseconds (seen: a spinning thread's second came to
    // 0.85-0.95 s at the nominal period).
    o->sample_period = 1000000000 / o->frequency_hz;
  } else if (o->off_cpu) {
    o->sample_cpu = false;
  }
  out->off_cpu = o->off_cpu;
}

}  // namespace

int RunRecordCommand(const std::vector<std::string>& args) {
  RecordOptions o;
  o.live_status = isatty(STDERR_FILENO);
  RecordFlags f;
  RecordOutput out;
  auto app = NewCommandApp("record", kDescription);
  app->footer(kFooter);
  AddTargetOptions(*app, &o);
  AddSamplingOptions(*app, &o, &f.sampling);
  AddWalkOptions(*app, &o, &f, &out);
  AddOutputOptions(*app, &f, &out);
  AddOffCpuOptions(*app, &f.off_cpu);
  AddWallOption(*app, &f);
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  if (std::string bad = CheckCombination(o, f, out); !bad.empty()) return UsageError("record", bad);
  Apply(f, *app, &o, &out);

  // Every output opened first: a -o that cannot be written is said before
  // the command runs, not after it.
  absl::StatusOr<RecordTargets> targets = OpenRecordTargets(out);
  if (!targets.ok()) {
    std::fprintf(stderr, "ehprof record: %s\n", std::string(targets.status().message()).c_str());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  RaiseFileLimit();
  // The one sink every part of the recording and its symbolization says
  // its problems to.
  Warnings warnings;
  o.start_session = BpfSession::StartSampling;
  Recorder rec(std::move(o), &warnings);
  absl::Status run = rec.Run();
  rec.ReportWarnings();
  int rc = kExitFailure;
  if (!run.ok()) std::fprintf(stderr, "ehprof record: %s\n", std::string(run.message()).c_str());
  if (run.ok() || !rec.list().empty()) rc = WriteRecording(rec, out, *std::move(targets), run.ok());
  rec.ReportWarnings(/*last=*/true);
  return rc;
}

}  // namespace ehprof
