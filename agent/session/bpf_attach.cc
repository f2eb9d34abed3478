// BpfSession's attach steps: the lifecycle tracepoints, the sampler's
// perf events, the off-CPU and probe programs (bpf/profiler.bpf.c).
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/session/bpf_session.h"
#include "agent/session/capabilities.h"
#include "base/unique_fd.h"

// The skeleton declares libbpf's usdt.bpf.h kconfig extern as C's _Bool.
#define _Bool bool
#include "profiler.skel.h"
#undef _Bool

namespace ehprof {
namespace {

int OpenPerfEvent(const SessionOptions& o, int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = o.event_type;
  attr.config = o.event_config;
  if (o.sample_period != 0) {
    attr.sample_period = o.sample_period;
  } else {
    attr.freq = 1;
    attr.sample_freq = o.frequency_hz;
  }
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

// libbpf finds a tracepoint's id in tracefs, which a fresh machine may not
// have mounted yet.
void MountTracefs() {
  if (::access("/sys/kernel/tracing/events", F_OK) != 0 &&
      ::access("/sys/kernel/debug/tracing/events", F_OK) != 0) {
    ::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr);
  }
}

}  // namespace

absl::Status BpfSession::AttachLifecycle() {
  ehprof_bpf* skel = skel_.get();
  for (bpf_program* prog : {skel->progs.ehprof_fork, skel->progs.ehprof_exec, skel->progs.ehprof_exit}) {
    BpfLinkPtr link(bpf_program__attach(prog));
    if (!link) return PermissionHint(errno, absl::StrCat("attaching ", bpf_program__name(prog)));
    links_.push_back(std::move(link));
  }
  return absl::OkStatus();
}

bool MmapTracepointReachable() {
  MountTracefs();
  // Opened, not access()ed: what counts is this process's capabilities,
  // as libbpf will use them, not its real uid.
  for (const char* path : {"/sys/kernel/tracing/events/syscalls/sys_exit_mmap/id",
                           "/sys/kernel/debug/tracing/events/syscalls/sys_exit_mmap/id"}) {
    if (UniqueFd(::open(path, O_RDONLY | O_CLOEXEC)).valid()) return true;
  }
  return false;
}

void BpfSession::AttachMmapLearning() {
  // BpfSession::Open loads one of the two, or neither; `ehprof check`
  // loads both, and the syscall tracepoint is the one attached then.
  bpf_program* prog = bpf_program__autoload(skel_->progs.ehprof_mmap) ? skel_->progs.ehprof_mmap
                      : bpf_program__autoload(skel_->progs.ehprof_mmap_raw) ? skel_->progs.ehprof_mmap_raw
                                                                            : nullptr;
  if (!prog) return;
  MountTracefs();  // for `ehprof check`, whose Open loads both without looking at tracefs
  // A kernel without syscall tracepoints (CONFIG_FTRACE_SYSCALLS) still
  // unwinds: libraries are then learned from /proc/PID/maps only.
  BpfLinkPtr link(bpf_program__attach(prog));
  if (!link) return;
  links_.push_back(std::move(link));
}

absl::Status BpfSession::AttachOffCpu() {
  BpfLinkPtr link(bpf_program__attach(skel_->progs.ehprof_switch));
  if (!link) return PermissionHint(errno, "attaching ehprof_switch to sched_switch");
  links_.push_back(std::move(link));
  return absl::OkStatus();
}

absl::Status BpfSession::AttachProbe(const ProbeSpec& p) {
  bpf_link* link = nullptr;
  switch (p.kind) {
    case ProbeSpec::Kind::kUprobe:
    case ProbeSpec::Kind::kUretprobe: {
      LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = p.kind == ProbeSpec::Kind::kUretprobe);
      uint64_t offset = p.offset;
      if (p.symbol.empty()) {
        absl::StatusOr<uint64_t> off = FileOffsetOfAddress(p.path, p.address);
        if (!off.ok()) return absl::InvalidArgumentError(absl::StrCat("-e ", p.text, ": ", off.status().message()));
        offset = *off;
      } else {
        uo.func_name = p.symbol.c_str();
      }
      // All processes: the targets map says whose hits count.
      link = bpf_program__attach_uprobe_opts(skel_->progs.ehprof_uprobe, -1, p.path.c_str(), offset, &uo);
      break;
    }
    case ProbeSpec::Kind::kUsdt:
      link = bpf_program__attach_usdt(skel_->progs.ehprof_usdt, -1, p.path.c_str(), p.group.c_str(),
                                      p.name.c_str(), nullptr);
      break;
    case ProbeSpec::Kind::kKprobe:
      link = bpf_program__attach_kprobe(skel_->progs.ehprof_kprobe, false, p.name.c_str());
      if (!link && ::access("/sys/bus/event_source/devices/kprobe", F_OK) != 0 &&
          ::access("/sys/kernel/tracing/kprobe_events", F_OK) != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "-e ", p.text, ": this kernel has no kprobes (built without CONFIG_KPROBES); "
            "tracepoint:CATEGORY:NAME works where a tracepoint exists"));
      }
      break;
    case ProbeSpec::Kind::kTracepoint:
      MountTracefs();
      link = bpf_program__attach_tracepoint(skel_->progs.ehprof_tracepoint, p.group.c_str(), p.name.c_str());
      break;
  }
  if (!link) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH || err == EINVAL) {
      return absl::NotFoundError(absl::StrCat("-e ", p.text, ": cannot attach (", std::strerror(err),
                                              "): no such file, symbol, USDT note, tracepoint or "
                                              "kernel function?"));
    }
    return PermissionHint(err, absl::StrCat("attaching -e ", p.text));
  }
  links_.emplace_back(link);
  return absl::OkStatus();
}

absl::Status BpfSession::AttachSampler(const SessionOptions& o) {
  for (int cpu : OnlineCpus()) {
    if (!o.cpus.empty() && std::find(o.cpus.begin(), o.cpus.end(), static_cast<uint32_t>(cpu)) == o.cpus.end()) {
      continue;
    }
    int fd = OpenPerfEvent(o, cpu);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT || err == EOPNOTSUPP) {
        return absl::FailedPreconditionError(absl::StrCat(
            "-e ", o.event_name, " (perf event type ", o.event_type, " config ", o.event_config,
            ") is not supported here: this machine has no hardware PMU for it (a VM without one "
            "passed through?); -e cpu-clock, the default, samples on a timer and works anywhere"));
      }
      return PermissionHint(err, absl::StrCat("perf_event_open on CPU ", cpu));
    }
    BpfLinkPtr link(bpf_program__attach_perf_event(skel_->progs.ehprof_sample, fd));
    if (!link) {
      int err = errno;
      ::close(fd);
      return PermissionHint(err, absl::StrCat("attaching the sampler on CPU ", cpu));
    }
    links_.push_back(std::move(link));
    sampler_fds_.push_back(fd);
    // libbpf enabled it on attaching; held, it counts from SetSampling.
    if (o.hold_sampler && ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return absl::InternalError(absl::StrCat("holding the sampler on CPU ", cpu, ": ", std::strerror(errno)));
    }
    ++num_cpus_;
  }
  return absl::OkStatus();
}

absl::Status BpfSession::SetSampling(bool on) {
  absl::Status status;
  for (int fd : sampler_fds_) {
    if (::ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0 && status.ok()) {
      status = absl::InternalError(
          absl::StrCat(on ? "starting" : "stopping", " the sampling events: ", std::strerror(errno)));
    }
  }
  return status;
}

}  // namespace ehprof
