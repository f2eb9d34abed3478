// What a recording asks of the BPF session: RecordOptions as SessionOptions
// and the programs' load-time config (targets, walks, off-CPU, filters).
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "agent/record/recorder.h"
#include "agent/record/walk_budget.h"
#include "agent/sampling/cgroup_filter.h"

namespace ehprof {

absl::StatusOr<SessionOptions> SessionOptionsFor(const RecordOptions& o) {
  SessionOptions so;
  so.config.unwinder = o.unwinder;
  so.config.user_stacks = o.user;
  so.config.kernel_stacks = o.kernel;
  so.config.filter_pids = !o.all;
  so.config.max_frames = EHP_MAX_USER_FRAMES;
  so.config.self_pid = static_cast<uint32_t>(getpid());
  so.config.verify_every = o.verify_every;
  so.config.interp_alternate = o.alternate_interp_walks;
  // Deferred walks finish the DWARF walk only, and only for timer samples.
  so.config.deferred_rate =
      o.unwinder == EHP_UNWINDER_DWARF && o.user && o.sample_cpu ? o.deferred_kib_per_s * 1024 : 0;
  so.config.offcpu_states = o.off_cpu_states;
  so.config.offcpu_min_ns = o.off_cpu_min_ns;
  so.config.walk_budget_ns = o.walk_budget_ns ? o.walk_budget_ns : WalkBudgetNs(PerfCpuTimeMaxPercent());
  so.off_cpu = o.off_cpu;
  so.learn_mmap = o.kernel_maps;
  so.config.learn_maps = o.kernel_maps;
  so.config.python = o.python;
  so.sample_cpu = o.sample_cpu;
  so.hold_sampler = o.sample_cpu && o.delay_ms > 0;
  so.probes = o.probes;
  so.cpus = o.cpus;
  so.config.filter_cpus = !o.cpus.empty();
  so.config.include_idle = o.include_idle;
  if (!o.comm.empty()) {
    so.config.filter_comm = 1;
    std::memcpy(so.config.comm, o.comm.data(), std::min(o.comm.size(), sizeof(so.config.comm) - 1));
  }
  if (!o.cgroup.empty()) {
    absl::StatusOr<CgroupTarget> cg = ResolveCgroup(o.cgroup);
    if (!cg.ok()) return cg.status();
    so.config.cgroup_id = cg->id;
    so.config.cgroup_level = cg->level;
  }
  so.sizes = o.sizes;
  so.frequency_hz = o.frequency_hz;
  so.event_type = o.event_type;
  so.event_config = o.event_config;
  so.event_name = o.event_name;
  so.sample_period = o.sample_period;
  return so;
}

}  // namespace ehprof
