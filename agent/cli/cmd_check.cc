// `ehprof check`: can this machine run ehprof, and how much verifier
// headroom do its BPF programs keep.
#include <linux/perf_event.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agent/cli/cli.h"
#include "agent/jvm/jvm_check.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/python/python_check.h"
#include "agent/python/python_tracker.h"
#include "agent/record/interp_trackers.h"
#include "agent/record/event_handler.h"
#include "agent/record/run_control.h"
#include "agent/v8/v8_check.h"
#include "agent/v8/v8_tracker.h"
#include "base/printable_text.h"
#include "agent/session/bpf_session.h"
#include "agent/session/kernel_features.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Probes what ehprof needs from the kernel (BTF, ring buffers, the BPF
helpers the sampler calls) and prints each with the first Linux version
that has it; then loads ehprof's BPF programs (as `record` would, attaching
nothing that samples) and prints, per program, the instructions the verifier
processed against its limit of 1,000,000, its states, and the translated and
JITed sizes; then the language runtimes installed here (CPython, HotSpot
JVMs, V8 in node) and the Python, JVM and node processes running now, each with
whether ehprof reads its frames. Exit 0 when ehprof can run here, 1 with the reason when it
cannot.)";

constexpr uint64_t kVerifierLimit = 1000000;

// The language runtimes installed here and running now, one line each,
// with whether ehprof reads their frames.
void PrintRuntimes() {
  std::vector<RuntimeCheck> all = CheckInstalledInterpreters();
  for (auto* installed : {&CheckInstalledJvms, &CheckInstalledV8s}) {
    for (RuntimeCheck& c : installed()) all.push_back(std::move(c));
  }
  // The trackers as a recording has them, without the BPF maps: each
  // process looked at once.
  Warnings warnings;
  PythonTracker pythons(nullptr, &warnings);
  JvmTracker jvms(nullptr, &warnings);
  V8Tracker v8s(nullptr, &warnings);
  InterpFrameTable interp_frames;
  const auto interps = MakeInterpTrackers(
      InterpSelection{}, [](ehp_interp_kind) { return std::unique_ptr<MapWriter>(); }, &interp_frames, &warnings);
  RuntimeTrackers runtimes{&pythons, &jvms, &v8s, {}};
  for (const auto& t : interps) runtimes.interps.push_back(t.get());
  const uint32_t self = static_cast<uint32_t>(getpid());
  for (uint32_t pid : AllPids()) {
    if (pid == self) continue;
    runtimes.ForEach([&](auto& runtime) {
      if (auto c = runtime.CheckProcess(pid)) all.push_back(*std::move(c));
    });
  }
  std::printf("%-8s %-60s %-10s %s\n", "runtime", "binary or process", "version", "frames");
  // Paths, comms and versions come from files and processes their owners
  // named: made printable before they reach a terminal.
  for (const RuntimeCheck& c : all) {
    std::printf("%-8s %-60s %-10s %s%s\n", c.runtime.c_str(), PrintableText(c.what).c_str(),
                c.version.empty() ? "-" : PrintableText(c.version).c_str(), c.readable ? "readable: " : "not read: ",
                PrintableText(c.detail).c_str());
  }
}

}  // namespace

int RunCheckCommand(const std::vector<std::string>& args) {
  SessionOptions o;
  auto app = NewCommandApp("check", kDescription);
  app->add_option("--bpf-object", o.bpf_object_path,
                  "load this build of bpf/profiler.bpf.c instead of the built-in one (the same source "
                  "compiled against another kernel's vmlinux.h; scripts/kernel_matrix.sh uses it)")
      ->type_name("FILE");
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  utsname u{};
  uname(&u);
  std::printf("kernel %s %s\n", u.release, u.machine);
  std::vector<KernelFeature> features = ProbeKernelFeatures();
  std::printf("%-26s %6s  %s\n", "feature", "since", "here");
  for (const KernelFeature& f : features) {
    std::printf("%-26s %6s  %s%s%s\n", f.name.c_str(), f.since.c_str(), f.present ? "yes" : "NO",
                f.detail.empty() ? "" : ": ", f.detail.c_str());
  }
  if (absl::Status s = CheckKernelFeatures(features); !s.ok()) {
    std::printf("ehprof cannot run here: %s\n", std::string(s.message()).c_str());
    return kExitFailure;
  }
  std::printf("%s\n", WalkBuildLine(features).c_str());
  o.verifier_stats = true;
  o.frequency_hz = 1;
  o.event_type = PERF_TYPE_SOFTWARE;  // cpu-clock at 1 Hz: harmless
  o.event_config = PERF_COUNT_SW_CPU_CLOCK;
  o.config.filter_pids = 1;  // and no target: nothing is sampled
  o.config.max_frames = EHP_MAX_USER_FRAMES;
  o.config.user_stacks = o.config.kernel_stacks = 1;
  // The off-CPU walk is verified only when some state is counted (the
  // verifier drops code a constant .rodata setting makes dead).
  o.config.offcpu_states = EHP_OFFCPU_ALL_STATES;
  // And the filters, so the counts are the worst case a recording can load.
  o.config.filter_cpus = o.config.filter_comm = 1;
  o.config.cgroup_id = 1;
  o.config.learn_maps = 1;  // the fork, exec and mmap programs in full
  o.config.python = 1;      // and the Python walk (record's default)
  auto session = BpfSession::Start(o);
  if (!session.ok()) {
    std::printf("ehprof cannot run here: %s\n", std::string(session.status().message()).c_str());
    return kExitFailure;
  }
  std::printf("%-16s %10s %7s %12s %10s %8s %8s\n", "program", "insns", "limit%", "total_states",
              "peak", "xlated", "jited");
  for (const auto& p : (*session)->Programs()) {
    std::printf("%-16s %10llu %6.2f%% %12llu %10llu %7uB %7uB\n", p.name.c_str(),
                static_cast<unsigned long long>(p.processed_insns),
                100.0 * p.processed_insns / kVerifierLimit,
                static_cast<unsigned long long>(p.total_states),
                static_cast<unsigned long long>(p.peak_states), p.xlated_bytes, p.jited_bytes);
  }
  PrintRuntimes();
  std::printf("ehprof can run here (%d CPUs)\n", (*session)->num_cpus());
  return kExitOk;
}

}  // namespace ehprof
