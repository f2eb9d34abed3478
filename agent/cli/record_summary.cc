// `ehprof record`'s closing lines on stderr: samples, completeness and stop
// reasons, BPF time per sample, own CPU, table and process-map use, the
// JVMs' metadata kept.
#include "agent/cli/record_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bpf/stop_reasons.h"

namespace ehprof {

namespace {

// What the recording kept of the JVMs it read (bench/jvm_node_cost.py reads it).
// The sorted copy of per-sample BPF times, read by percentile in µs.
class Percentiles {
 public:
  explicit Percentiles(std::vector<uint32_t> ns) : ns_(std::move(ns)) { std::sort(ns_.begin(), ns_.end()); }
  double Us(double p) const { return ns_[std::min(ns_.size() - 1, size_t(p * ns_.size()))] / 1e3; }

 private:
  std::vector<uint32_t> ns_;  // not empty
};

void PrintJvmMemory(const JvmMemory& j) {
  std::fprintf(stderr,
               "ehprof: JVM metadata: %zu JVMs (%zu running), %zu methods named, %.1f KB (method table %.1f KB, "
               "line tables %.1f KB, the running JVMs' method caches %.1f KB, inlining scopes %.1f KB)\n",
               j.jvms, j.live_jvms, j.methods, j.total() / 1e3, j.method_table / 1e3, j.line_tables / 1e3,
               j.method_cache / 1e3, j.scope_cache / 1e3);
}

// The cold window's samples (agent/deferred/): how many walks were finished
// late, and what the copies cost and left out.
void PrintDeferred(const RecordSummary& s) {
  const DeferredStats& d = s.deferred;
  if (s.deferred_sent == 0 && s.deferred_budget_drops == 0 && d.over_cap == 0) return;
  std::fprintf(stderr,
               "ehprof: walks finished late: %llu samples (their table or process not known yet at the "
               "sample: %llu stack copies sent, %.0f bytes each on average; %llu not copied, over the "
               "per-CPU budget; %llu over the cap of held samples; %llu not finishable, kept as the "
               "kernel left them); with the copies %.0f bytes a sample through the ring buffer\n",
               static_cast<unsigned long long>(d.finished), static_cast<unsigned long long>(s.deferred_sent),
               s.deferred_sent ? double(d.bytes) / s.deferred_sent : 0.0,
               static_cast<unsigned long long>(s.deferred_budget_drops),
               static_cast<unsigned long long>(d.over_cap), static_cast<unsigned long long>(d.unfinished),
               s.samples ? double(s.ring_bytes + d.bytes) / s.samples : 0.0);
}

void PrintOffCpu(const RecordSummary& s) {
  if (s.off_cpu_ns == 0 && s.off_cpu_untracked == 0) return;
  std::string notes;
  if (s.off_cpu_untracked > 0) {
    notes += absl::StrFormat(" (%d switch-outs not tracked: more threads blocked at once than the BPF map holds)",
                             s.off_cpu_untracked);
  }
  // Not lost: ended where the task's CPU time since its last pick says
  // (bpf/offcpu.bpf.h, offcpu_end_unseen).
  if (s.off_cpu_unseen > 0) {
    notes += absl::StrFormat(" (%d blocks ended by a switch-in no sched_switch event showed: their end "
                             "taken from the task's run time since)",
                             s.off_cpu_unseen);
  }
  std::fprintf(stderr, "ehprof: off-CPU: %.3f s blocked in all%s\n", s.off_cpu_ns / 1e9, notes.c_str());
}

}  // namespace

void PrintSummary(const Recorder& rec, const std::string& output) {
  const RecordSummary& s = rec.summary();
  std::map<unsigned, uint64_t> reasons = s.stop_reasons;
  const uint64_t user_walked = s.user_walked;
  std::fprintf(stderr, "ehprof: %llu samples in %.1f s (%llu lost), ended by %s\n",
               static_cast<unsigned long long>(s.samples), s.seconds,
               static_cast<unsigned long long>(s.ringbuf_drops), s.ended_by.c_str());
  PrintOffCpu(s);
  if (user_walked) {
    std::vector<std::pair<uint64_t, unsigned>> top;
    for (auto [r, n] : reasons) top.push_back({n, r});
    std::sort(top.rbegin(), top.rend());
    std::string line;
    for (size_t i = 0; i < top.size() && i < 4; ++i) {
      absl::StrAppendFormat(&line, "%s%s %.1f%%", i ? ", " : "", StopReasonName(top[i].second),
                            100.0 * top[i].first / user_walked);
    }
    std::fprintf(stderr, "ehprof: user stacks complete (reached the bottom): %.1f%%; stop reasons: %s\n",
                 100.0 * reasons[EHP_STOP_END_OF_STACK] / user_walked, line.c_str());
  }
  if (s.walks_cut > 0) {
    std::fprintf(stderr,
                 "ehprof: %llu stack walks cut short by their time budget (each CPU's walks may take "
                 "%.3f ms of every %.0f ms: kernel.perf_cpu_time_max_percent)\n",
                 static_cast<unsigned long long>(s.walks_cut), s.walk_budget_ns / 1e6,
                 EHP_BUDGET_WINDOW_NS / 1e6);
  }
  PrintDeferred(s);
  if (!s.bpf_ns.empty()) {
    const Percentiles on(s.bpf_ns);
    std::fprintf(stderr,
                 "ehprof: BPF time per sample: median %.2f us, p90 %.2f us, p99 %.2f us, p10 %.2f us; "
                 "%.0f bytes per sample through the ring buffer\n",
                 on.Us(0.5), on.Us(0.9), on.Us(0.99), on.Us(0.1), double(s.ring_bytes) / s.samples);
    if (!s.bpf_ns_interp_off.empty()) {
      const Percentiles off(s.bpf_ns_interp_off);
      std::fprintf(stderr,
                   "ehprof: --alternate-interp-walks: the %zu samples above walked the interpreters' "
                   "frames; the %zu without them: median %.2f us, p10 %.2f us (added: median %+.2f us, "
                   "p10 %+.2f us)\n",
                   s.bpf_ns.size(), s.bpf_ns_interp_off.size(), off.Us(0.5), off.Us(0.1),
                   on.Us(0.5) - off.Us(0.5), on.Us(0.1) - off.Us(0.1));
    }
  }
  if (s.prog.run_cnt) {
    std::fprintf(stderr, "ehprof: BPF run time per program run (kernel.bpf_stats_enabled): mean %.2f us over %llu runs\n",
                 s.prog.run_time_ns / 1e3 / s.prog.run_cnt, static_cast<unsigned long long>(s.prog.run_cnt));
  }
  if (s.seconds > 0) {
    std::fprintf(stderr,
                 "ehprof: own CPU time while recording %.2f%% of one CPU (setup before it: %.0f ms)\n",
                 100.0 * s.cpu_time_ns / 1e9 / s.seconds, s.setup_cpu_ns / 1e6);
  }
  if (s.start_processes > 0) {
    std::fprintf(stderr,
                 "ehprof: %zu processes running at start read before sampling began, after %.0f ms "
                 "waiting for their tables (%zu not ready then)\n",
                 s.start_processes, s.start_wait_ns / 1e6, s.start_tables_late);
  }
  const FileTables::Stats& t = s.tables;
  std::fprintf(stderr,
               "ehprof: unwind tables: %llu loaded (%llu from the table cache), %llu reused after "
               "their process ended, %llu evicted for room, %llu unloaded unused, %llu refused (maps full); "
               "%llu built ahead of their turn for a sample waiting\n",
               static_cast<unsigned long long>(t.loaded), static_cast<unsigned long long>(t.from_cache),
               static_cast<unsigned long long>(t.reused),
               static_cast<unsigned long long>(t.evicted), static_cast<unsigned long long>(t.expired),
               static_cast<unsigned long long>(t.no_space), static_cast<unsigned long long>(t.hurried));
  std::fprintf(stderr, "ehprof: %zu processes remembered for resolving, %zu files kept open, %zu known\n",
               s.remembered, s.kept_files, t.files);
  if (s.jvm.jvms) PrintJvmMemory(s.jvm);
  if (s.procs_refused) {
    std::fprintf(stderr, "ehprof: %llu processes found the BPF process map full (--max-procs)\n",
                 static_cast<unsigned long long>(s.procs_refused));
  }
  if (!output.empty()) std::fprintf(stderr, "ehprof: wrote %s\n", output.c_str());
}

}  // namespace ehprof
