#include "agent/session/kernel_features.h"

#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/parse_number.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

// libbpf's probes answer 1 (present), 0 (absent) or a negative errno (the
// probe itself could not run: no privileges, no bpf() at all).
void Record(KernelFeature& f, int probe) {
  f.present = probe == 1;
  if (probe < 0) f.detail = absl::StrCat("probe failed: ", std::strerror(-probe));
}

KernelFeature Feature(const char* name, const char* since, const char* why) {
  KernelFeature f;
  f.name = name;
  f.since = since;
  f.why = why;
  return f;
}

}  // namespace

std::string KernelRelease() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return u.release;
}

std::vector<KernelFeature> ProbeKernelFeatures() {
  std::vector<KernelFeature> out;
  {
    KernelFeature f = Feature("kernel BTF", "5.4", "CO-RE and tp_btf (CONFIG_DEBUG_INFO_BTF, /sys/kernel/btf/vmlinux)");
    f.present = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
    if (!f.present) f.detail = absl::StrCat("/sys/kernel/btf/vmlinux: ", std::strerror(errno));
    out.push_back(std::move(f));
  }
  {
    KernelFeature f = Feature("perf_event programs", "4.9", "the sampler");
    Record(f, libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, nullptr));
    out.push_back(std::move(f));
  }
  {
    KernelFeature f = Feature("ring buffer maps", "5.8", "samples to user space");
    Record(f, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr));
    out.push_back(std::move(f));
  }
  // Helpers the sampler calls, oldest first, so the first missing one
  // reads as the kernel's age.
  // The last three only the bpf_loop build calls.
  struct Helper {
    bpf_func_id id;
    const char* name;
    const char* since;
    const char* why;
    bool loop_build_only;
  } helpers[] = {
      {BPF_FUNC_get_stack, "bpf_get_stack", "4.18", "kernel stacks", false},
      {BPF_FUNC_probe_read_user, "bpf_probe_read_user", "5.5", "reading user stacks", false},
      {BPF_FUNC_ringbuf_output, "bpf_ringbuf_output", "5.8", "sending samples", false},
      {BPF_FUNC_tail_call, "bpf_tail_call", "4.2", "the walk without bpf_loop", false},
      {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf", "5.11", "the sampled task", true},
      {BPF_FUNC_task_pt_regs, "bpf_task_pt_regs", "5.15", "user registers in kernel mode", true},
      {BPF_FUNC_loop, "bpf_loop", "5.17", "the frame-by-frame walk", true},
  };
  const bool pretend_old = std::getenv("EHPROF_PRETEND_OLD_KERNEL") &&
                           std::strcmp(std::getenv("EHPROF_PRETEND_OLD_KERNEL"), "1") == 0;
  for (const Helper& h : helpers) {
    KernelFeature f = Feature(h.name, h.since, h.why);
    f.loop_build_only = h.loop_build_only;
    if (pretend_old && h.loop_build_only) {
      f.detail = "taken as absent (EHPROF_PRETEND_OLD_KERNEL=1)";
    } else {
      Record(f, libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, h.id, nullptr));
    }
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

bool Pretending() {
  const char* pretend = std::getenv("EHPROF_PRETEND_OLD_KERNEL");
  return pretend && std::strcmp(pretend, "1") == 0;
}

}  // namespace

bool NeedsPreallocatedHashMaps() {
  const std::string release = KernelRelease();
  std::string_view rest = release;
  const std::optional<int> major = ConsumeDecimal<int>(&rest);
  std::optional<int> minor;
  if (major && !rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    minor = ConsumeDecimal<int>(&rest);
  }
  if (!minor) return true;  // "MAJOR.MINOR..." or not a kernel we can judge
  return *major < 6 || (*major == 6 && *minor < 1) || Pretending();
}

bool NeedsTailCallBuild(const std::vector<KernelFeature>& features) {
  for (const KernelFeature& f : features) {
    if (f.loop_build_only && !f.present) return true;
  }
  return false;
}

std::string WalkBuildLine(const std::vector<KernelFeature>& features) {
  const std::string prealloc =
      NeedsPreallocatedHashMaps()
          ? absl::StrCat("; perf_event programs take only preallocated hash maps before 6.1: "
                         "the process map is preallocated, at most ",
                         kPreallocatedProcs, " processes")
          : "";
  if (!NeedsTailCallBuild(features)) {
    return absl::StrCat("user walk: bpf_loop, up to ", EHP_MAX_USER_FRAMES, " frames", prealloc);
  }
  std::string missing;
  for (const KernelFeature& f : features) {
    if (f.loop_build_only && !f.present) absl::StrAppend(&missing, missing.empty() ? "" : ", ", f.name);
  }
  return absl::StrCat("user walk: tail calls (", missing, " missing), up to ",
                      EHP_TAIL_MAX_USER_FRAMES, " frames (", EHP_TAIL_FRAMES, " in each of ",
                      EHP_TAIL_CALLS,
                      " tail-called programs); sampling, --off-cpu, -e probes, --verify and "
                      "kernel-side process learning all run",
                      prealloc);
}

absl::Status CheckKernelFeatures(const std::vector<KernelFeature>& features) {
  std::string missing;
  for (const KernelFeature& f : features) {
    if (f.present || f.loop_build_only) continue;
    absl::StrAppend(&missing, missing.empty() ? "" : "; ", f.name, " (Linux ", f.since, "+, for ",
                    f.why, f.detail.empty() ? "" : ": ", f.detail, ")");
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this kernel (", KernelRelease(), ") lacks what ehprof's BPF programs need: ", missing,
      ". ehprof needs Linux 5.10 or later with BTF (Debian 11's 5.10 and newer)"));
}

}  // namespace ehprof
