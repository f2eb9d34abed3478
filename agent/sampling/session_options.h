// What a recording asks of the BPF programs when they load: their
// load-time config, the maps' sizes, the sampling event and the probes to
// attach. Plain data, so the recorder builds it without linking libbpf.
#ifndef EHPROF_AGENT_SAMPLING_SESSION_OPTIONS_H_
#define EHPROF_AGENT_SAMPLING_SESSION_OPTIONS_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agent/sampling/probe_spec.h"
#include "agent/tables/map_sizes.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

struct SessionOptions {
  ehp_config config{};
  // Collect the verifier's statistics (log level 4) for Programs().
  bool verifier_stats = false;
  MapSizes sizes;
  uint64_t frequency_hz = 99;
  // cpu-clock by default: a software event, so it works in VMs without a PMU.
  uint32_t event_type = PERF_TYPE_SOFTWARE;
  uint64_t event_config = PERF_COUNT_SW_CPU_CLOCK;
  // As the user named it, for errors ("cycles").
  std::string event_name = "cpu-clock";
  // Non-zero: a sample every this many events (-c), instead of
  // frequency_hz samples a second.
  uint64_t sample_period = 0;
  // Load this BPF object file instead of the one built in: the same
  // profiler.bpf.c compiled against another kernel's vmlinux.h (the kernel
  // matrix checks that an object built on one kernel loads on the others).
  // It must define the same maps and programs.
  std::string bpf_object_path;
  // Attach the sampling event (off for --off-cpu alone).
  bool sample_cpu = true;
  // Attached but not counting until SetSampling(true) (-D, as perf's: the
  // command's first moments cost no interrupts, at -F max none of its
  // start-up crawls under 100,000 timer interrupts a second per CPU).
  bool hold_sampler = false;
  // Attach the off-CPU programs (config.offcpu_* say which blocks count).
  bool off_cpu = false;
  // Attach the mmap program (bpf/proc_learn.bpf.h): libraries of loaded
  // tables mapped into entries by the kernel.
  bool learn_mmap = true;
  // -C: sample only on these CPUs (config.filter_cpus); empty: all.
  std::vector<uint32_t> cpus;
  // Attach the probe programs here (-e uprobe:..., usdt:..., tracepoint:...).
  std::vector<ProbeSpec> probes;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_SAMPLING_SESSION_OPTIONS_H_
