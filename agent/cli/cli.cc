#include "agent/cli/cli.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "unwind_tables/table_cache.h"

namespace ehprof {
namespace {

// The events -e names, with their perf_event_attr type and config.
struct EventName {
  const char* name;
  uint32_t type;
  uint64_t config;
  bool clock;  // counts nanoseconds
};
constexpr EventName kEvents[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, true},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, false},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, false},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false},
};

const EventName* FindEvent(const std::string& name) {
  for (const EventName& e : kEvents) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

// CLI11's help with the option descriptions wrapped to the terminal's
// customary 80 columns, and value names as written ("-p PID[,PID...]", not
// "-p UINT ... =99": defaults are in the descriptions).
class HelpFormatter : public CLI::Formatter {
 public:
  // The usage line first, as man pages and perf put it.
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    return absl::StrCat(make_usage(app, name), "\n", make_description(app), make_positionals(app),
                        make_groups(app, mode), "\n", make_footer(app));
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    const std::string& t = opt->get_type_name();
    if (opt->get_expected_max() == 0 || t.empty()) return "";
    return t[0] == '[' ? t : " " + t;
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string out;
    size_t line = 0;
    for (absl::string_view word : absl::StrSplit(opt->get_description(), ' ', absl::SkipEmpty())) {
      if (line > 0 && line + 1 + word.size() > 80 - column_width_) {
        out += '\n';
        line = 0;
      } else if (line > 0) {
        out += ' ';
        ++line;
      }
      absl::StrAppend(&out, word);
      line += word.size();
    }
    return out;
  }
};

// Positive numbers, with the value named in the error.
const CLI::Validator kPositive(
    [](std::string& s) {
      double v;
      return absl::SimpleAtod(s, &v) && v > 0 ? std::string() : "'" + s + "' is not a positive number";
    },
    "");

// A directory given on the command line must not depend on where ehprof
// was started (the agent runs as a service).
const CLI::Validator kAbsoluteDir(
    [](std::string& s) { return !s.empty() && s[0] == '/' ? std::string() : "takes an absolute directory"; },
    "");

// --off-cpu-state names and their enum ehp_offcpu_state bits.
constexpr std::pair<const char*, uint32_t> kOffCpuStates[] = {
    {"all", EHP_OFFCPU_ALL_STATES},
    {"sleeping", EHP_OFFCPU_SLEEPING},
    {"uninterruptible", EHP_OFFCPU_UNINTERRUPTIBLE},
    {"preempted", EHP_OFFCPU_PREEMPTED},
};

// -e: a clock or counter of kEvents, or a probe spec that parses.
CLI::Validator EventValidator() {
  return CLI::Validator(
      [](std::string& e) -> std::string {
        if (LooksLikeProbe(e)) {
          absl::StatusOr<ProbeSpec> p = ParseProbeSpec(e);
          return p.ok() ? "" : std::string(p.status().message());
        }
        if (FindEvent(e) != nullptr) return "";
        std::vector<std::string> names;
        for (const EventName& n : kEvents) names.push_back(n.name);
        return absl::StrCat("unknown event ", e, " (", absl::StrJoin(names, ", "), ", or a probe)");
      },
      "");
}

// -C, --cgroup, --comm, --include-idle: which tasks every event records.
void AddFilterOptions(CLI::App& app, RecordOptions* record) {
  const std::string g = "filters (every event)";
  app.add_option("-C,--cpu", record->cpus, "only on these CPUs")
      ->type_name("CPU[,CPU...]")
      ->delimiter(',')
      ->check(InRange<uint32_t>(0, EHP_MAX_FILTER_CPUS - 1))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(g);
  app.add_option("--cgroup", record->cgroup,
                 "only tasks in this cgroup v2 or below it (a path under the cgroup2 mount, or "
                 "relative to it: system.slice/nginx.service)")
      ->type_name("PATH")
      ->group(g);
  app.add_option("--comm", record->comm, "only tasks with this command name (as in /proc/PID/comm)")
      ->type_name("NAME")
      ->check(CLI::Validator(
          [](std::string& s) { return s.empty() || s.size() >= EHP_COMM_LEN ? "takes 1 to 15 characters" : ""; },
          ""))
      ->group(g);
  app.add_flag("--include-idle", record->include_idle, "with -a: sample the idle task too (swapper)")->group(g);
  // A description-only flag: add_flag(name, description) is ambiguous for g++
  // (CLI11 also offers add_flag(name, T& variable)).
  app.add_flag("--exclude-idle")->description("leave the idle task out (the default)")->group(g);
}

// What the BPF side may spend: walk time, copies of stacks to finish later.
void AddBudgetOptions(CLI::App& app, RecordOptions* record) {
  // Hidden: tests set a budget every walk outlasts (agent/record/walk_budget.h).
  app.add_option("--walk-budget-ns", record->walk_budget_ns, "what each CPU's stack walks may take in every 100 ms")
      ->check(InRange<uint64_t>(1, uint64_t{1} << 62))
      ->group("");
  // Hidden: tests make the cold window of processes running at the start.
  app.add_option("--start-wait-ms", record->start_wait_ms,
                 "how long sampling waits for the tables of the processes running at the start")
      ->check(InRange<uint32_t>(0, 60000))
      ->group("");
  app.add_option("--defer-budget", record->deferred_kib_per_s,
                 "KiB of user stack each CPU may copy a second for walks stopped before their table or "
                 "process was known, finished once it is (record: 8192, agent: 512; 0: such walks stay stopped)")
      ->type_name("KIB")
      ->check(InRange<uint32_t>(0, 1u << 20));
}

}  // namespace

int UsageError(std::string_view subcommand, std::string_view reason) {
  std::fprintf(stderr, "ehprof %.*s: %.*s (see 'ehprof %.*s --help')\n",
               static_cast<int>(subcommand.size()), subcommand.data(),
               static_cast<int>(reason.size()), reason.data(),
               static_cast<int>(subcommand.size()), subcommand.data());
  return kExitUsage;
}

std::unique_ptr<CLI::App> NewCommandApp(std::string_view subcommand, std::string description) {
  auto app = std::make_unique<CLI::App>(std::move(description), absl::StrCat("ehprof ", absl::string_view(subcommand.data(), subcommand.size())));
  app->set_help_flag("-h,--help", "this text");
  // A repeated option takes its last value, as perf does (scripts append
  // overrides); options collecting a list say so themselves.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto help = std::make_shared<HelpFormatter>();
  help->column_width(26);
  help->label("OPTIONS", "options");
  app->formatter(help);
  return app;
}

std::optional<int> ParseCommandLine(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::string reason = e.what();
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    // "ehprof record" -> "record"
    return UsageError(app.get_name().substr(app.get_name().find(' ') + 1), reason);
  }
  return std::nullopt;
}

const CLI::Validator& Positive() { return kPositive; }

MapSizes SizesForMemory(uint64_t mb) {
  // Rows dominate (3 bytes each); the rest scales with them.
  MapSizes z;
  const uint64_t bytes = mb << 20;
  z.row_chunks = static_cast<uint32_t>(std::max<uint64_t>(16, bytes * 7 / 10 / (EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES)));
  z.pages = std::max<uint32_t>(1024, z.row_chunks * 16);
  // ~1 palette entry per 30 rows in Debian's libraries; 4 entries a word.
  z.palette_words = std::max<uint32_t>(4096, z.row_chunks * EHP_ROW_CHUNK_ROWS / 60);
  z.rules = std::max<uint32_t>(4096, z.row_chunks * 64);
  return z;
}

void AddSamplingOptions(CLI::App& app, RecordOptions* record, SamplingFlags* flags) {
  app.add_option("-F,--freq", record->frequency_hz,
                 "sampling frequency per CPU (default 99; max: the kernel's "
                 "perf_event_max_sample_rate)")
      ->type_name("HZ")
      ->transform(CLI::Validator(
          [](std::string& s) {
            if (s == "max") {
              std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
              uint64_t rate = 0;
              if (!(in >> rate) || rate == 0) return std::string("max: cannot read perf_event_max_sample_rate");
              s = std::to_string(std::min<uint64_t>(rate, 100000));
            }
            return std::string();
          },
          ""))
      ->check(InRange(1, 100000));
  app.add_option("-c,--count", record->sample_period,
                 "a sample every N events of -e instead of -F a second (N cycles, N cache misses, ...)")
      ->type_name("N")
      ->check(InRange<uint64_t>(1, uint64_t{1} << 62))
      ->excludes("-F");
  AddBudgetOptions(app, record);
  app.add_option("-e,--event", flags->event,
                 "cpu-clock (default, works in VMs), task-clock; hardware counters cycles, "
                 "instructions, cache-misses, cache-references, branch-misses, branches (where "
                 "the PMU exists); page-faults, context-switches; or stacks at every hit of "
                 "uprobe:PATH:SYMBOL[+OFF], uprobe:PATH:0xADDR (an ELF address: stripped statics), "
                 "uretprobe:..., usdt:PATH:PROVIDER:NAME, tracepoint:CATEGORY:NAME, kprobe:FUNCTION")
      ->type_name("EVENT")
      ->check(EventValidator());
  app.add_option("-p,--pid", record->pids, "profile these processes (and their children)")
      ->type_name("PID[,PID...]")
      ->delimiter(',')
      ->check(Positive())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--table-memory", flags->table_mb,
                 "memory for unwind tables in BPF maps (default 64); when full, unused tables are "
                 "evicted (least recently used first), then files go without (frame pointers there)")
      ->type_name("MB")
      ->check(InRange(1, 65536));
  app.add_option("--max-procs", flags->max_procs,
                 "processes the BPF process map holds (default 4096, 33 KiB each, allocated as used); "
                 "beyond it user stacks stop at the leaf")
      ->type_name("N")
      ->check(InRange(1, 1 << 20));
  app.add_option("--table-cache", record->table_cache_dir,
                 "built unwind tables kept across runs, checked on load (default "
                 "/var/cache/ehprof/tables, or $CACHE_DIRECTORY/tables under systemd; 1 GiB at most)")
      ->type_name("DIR")
      ->check(kAbsoluteDir);
  app.add_flag("--no-table-cache", flags->no_table_cache, "build every table every run");
  app.add_flag("--no-kernel-maps", flags->no_kernel_maps,
               "learn processes' mappings from /proc/PID/maps only, not also in the kernel at fork, exec "
               "and mmap (short-lived processes then lose their first milliseconds; for comparison)");
  app.add_flag("--no-python", flags->no_python,
               "native frames only in Python processes (by default the Python functions a CPython "
               "3.10-3.13 eval loop runs are shown among them, as qualname with file.py:line)");
  app.add_flag("--no-java", flags->no_java,
               "HotSpot JVMs' code by frame pointers and perf maps only (by default their Java frames "
               "are walked and named from the JVM's own memory, as Class.method with File.java:line)");
  app.add_flag("--no-js", flags->no_js,
               "node (V8) processes' JavaScript by frame pointers and perf maps only (by default their "
               "JavaScript frames are named from V8's own heap, as function with script:line)");
  app.add_flag("--no-ruby", flags->no_ruby,
               "native frames only in Ruby processes (by default the Ruby methods and blocks the VM runs "
               "are shown among them, as Class#method with file.rb:line)");
  app.add_flag("--no-php", flags->no_php,
               "native frames only in PHP processes (by default the PHP functions the Zend VM runs are "
               "shown among them, as Class::method with file.php:line)");
  app.add_flag("--no-perl", flags->no_perl,
               "native frames only in Perl processes (by default the Perl subs libperl's run loop runs are "
               "shown among them, as Package::sub with file.pl:line)");
  AddFilterOptions(app, record);
}

void ApplySamplingFlags(const SamplingFlags& flags, const CLI::App& app, RecordOptions* record) {
  if (LooksLikeProbe(flags.event)) {
    record->probes = {*ParseProbeSpec(flags.event)};  // checked when parsed
    record->sample_cpu = false;
  } else {
    const EventName* e = FindEvent(flags.event);  // checked when parsed
    record->event_type = e->type;
    record->event_config = e->config;
    record->event_name = e->name;
  }
  record->sizes = SizesForMemory(flags.table_mb);
  record->sizes.procs = flags.max_procs;
  record->table_cache_explicit = app.count("--table-cache") > 0;
  // A service's cache directory (the unit's CacheDirectory=) is the only
  // one it may write; not being able to use it is said.
  if (!record->table_cache_explicit) {
    if (std::optional<std::string> dir = ServiceTableCacheDir()) {
      record->table_cache_dir = *dir;
      record->table_cache_explicit = true;
    }
  }
  if (flags.no_table_cache) record->table_cache_dir.clear();
  record->kernel_maps = !flags.no_kernel_maps;
  record->python = !flags.no_python;
  record->jvm = !flags.no_java;
  record->v8 = !flags.no_js;
  record->interps.ruby = !flags.no_ruby;
  record->interps.php = !flags.no_php;
  record->interps.perl = !flags.no_perl;
}

void AddOffCpuOptions(CLI::App& app, OffCpuFlags* f) {
  const std::string g = "off-CPU";
  app.add_flag("--off-cpu", f->off_cpu,
               "where threads wait: the time each spends off the CPU (switched out until it runs "
               "again), with its stacks, in nanoseconds (record: instead of CPU samples; agent: "
               "beside them, as off_cpu profiles)")
      ->group(g);
  app.add_option("--off-cpu-min-us", f->min_us,
                 "leave out blocks shorter than this (default 10); each block at least this long is "
                 "one event, so it bounds the cost on a busy machine")
      ->type_name("US")
      ->check(InRange(0.0, 1e9))
      ->group(g);
  std::vector<std::string> names;
  for (const auto& [name, bits] : kOffCpuStates) names.push_back(name);
  app.add_option("--off-cpu-state", f->states,
                 "count the time of threads that left the CPU sleeping (S: waiting for an event), "
                 "uninterruptible (D: mostly disk I/O) or preempted (runnable, waiting for a CPU); "
                 "default all")
      ->type_name("STATE[,STATE...]")
      ->delimiter(',')
      ->check(CLI::IsMember(names).description(""))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(g);
}

void ApplyOffCpuFlags(const OffCpuFlags& f, RecordOptions* record) {
  record->off_cpu = f.off_cpu;
  record->off_cpu_min_ns = static_cast<uint64_t>(f.min_us * 1000);
  if (!f.states.empty()) record->off_cpu_states = 0;
  for (const std::string& name : f.states) {
    for (const auto& [n, bits] : kOffCpuStates) {
      if (name == n) record->off_cpu_states |= bits;
    }
  }
}

bool IsClockEvent(const std::string& event) {
  const EventName* e = FindEvent(event);
  return e != nullptr && e->clock;
}

}  // namespace ehprof
