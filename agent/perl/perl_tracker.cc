#include "agent/perl/perl_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/proc_maps.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

// A process that is not (yet) Perl is looked at again after 10 ms, then
// twice as long each time up to a second.
constexpr uint64_t kNotPerlFirstRetryNs = 10'000'000;
constexpr uint64_t kNotPerlRetryNs = 1'000'000'000;
// Looks at a process whose TLS module id does not read yet before it is
// refused (a perl just exec'd has not relocated libperl).
constexpr int kProbeTries = 20;
constexpr uint64_t kMaxTlsModule = 1u << 16;

bool LooksLikePerl(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  return base.find("perl") != std::string::npos;
}

std::optional<uint64_t> BiasOf(const PerlBinary& b, const MapsEntry& e) {
  for (const ElfSegment& seg : b.loads) {
    if (e.offset >= (seg.offset & ~uint64_t{4095}) && e.offset < seg.offset + seg.filesz) {
      return e.start - (e.offset + seg.vaddr - seg.offset);
    }
  }
  return std::nullopt;
}

}  // namespace

const char* PerlStopName(uint32_t why) {
  switch (why) {
    case EHP_PERL_STOP_NO_INTERP: return "[perl: interpreter not found]";
    case EHP_PERL_STOP_READ_FAULT: return "[perl: context read fault]";
    case EHP_PERL_STOP_BAD_CONTEXT: return "[perl: bad context]";
    case EHP_PERL_STOP_TOO_DEEP: return "[perl: too many contexts]";
    default: return "[perl: stopped]";
  }
}

absl::StatusOr<std::optional<PerlBinary>> PerlTracker::Binary(const std::string& open_path,
                                                              const std::string& path, uint64_t inode) {
  const std::string key = absl::StrCat(path, ":", inode);
  auto it = binaries_.find(key);
  if (it != binaries_.end()) return it->second;
  absl::StatusOr<std::optional<PerlBinary>> result = std::nullopt;
  auto elf = ElfFile::Open(open_path);
  if (elf.ok()) result = InspectPerlBinary(*elf, path);
  binaries_.emplace(key, result);
  return result;
}

absl::StatusOr<bool> PerlTracker::Publish(uint32_t pid, Proc& proc, const PerlBinary& b, uint64_t bias) {
  proc.mem = std::make_unique<ProcessMemory>(static_cast<pid_t>(pid));
  uint64_t module = 1;  // the executable's own TLS
  if (b.tls_modid_slot && !proc.mem->ReadU64(b.tls_modid_slot + bias, &module)) {
    return absl::UnavailableError("process memory unreadable");
  }
  // 0: the dynamic linker has not relocated libperl yet: look again.
  if (module == 0 && ++proc.probe_failures < kProbeTries) return false;
  if (module == 0 || module > kMaxTlsModule) {
    return absl::FailedPreconditionError(absl::StrFormat("%s: TLS module id %d is not one", b.path, module));
  }
  proc.objects.emplace(*proc.mem);
  ehp_perl_proc p = b.layout;
  p.runops_begin = b.runops_begin + bias;
  p.runops_end = b.runops_end + bias;
  p.tls_module = module;
  p.tls_offset = static_cast<uint64_t>(b.tls_offset);
  if (absl::Status st = perl_procs_ ? perl_procs_->Write(pid, &p, 1) : absl::OkStatus(); !st.ok()) {
    warnings_->AddOnce("perl_procs", absl::IsResourceExhausted(st)
                                         ? absl::StrCat("Perl processes: the BPF map is full (", pid, ")")
                                         : absl::StrCat("Perl processes: ", st.message()));
    return false;
  }
  proc.state = Proc::kPerl;
  return true;
}

absl::StatusOr<bool> PerlTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.path.empty() || e.path[0] != '/' || !LooksLikePerl(e.path)) continue;
    const std::string open = absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end);
    auto bin = Binary(open, e.path, e.inode);
    auto refuse = [&](std::string why) -> absl::StatusOr<bool> {
      warnings_->AddOnce(e.path, absl::StrCat(why, "; its stacks are native only"));
      proc.state = Proc::kRefused;
      return absl::FailedPreconditionError(why);
    };
    if (!bin.ok()) return refuse(std::string(bin.status().message()));
    if (!*bin) continue;
    proc.binary = e.path;
    proc.version = (*bin)->version;
    auto bias = BiasOf(**bin, e);
    if (!bias) return refuse(absl::StrCat(e.path, ": its mapping lies in no segment"));
    auto published = Publish(pid, proc, **bin, *bias);
    if (!published.ok() && absl::IsFailedPrecondition(published.status())) {
      return refuse(std::string(published.status().message()));
    }
    if (published.ok() && !*published && proc.state != Proc::kPerl) proc.state = Proc::kUnknown;
    return published;
  }
  proc.state = Proc::kNotPerl;
  return false;
}

void PerlTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  const uint64_t retry = std::min(kNotPerlRetryNs, kNotPerlFirstRetryNs << std::min(p.not_perl_checks, 7));
  if (p.state == Proc::kUnknown || (p.state == Proc::kNotPerl && now_ns - p.checked_ns > retry)) {
    if (p.state == Proc::kNotPerl) ++p.not_perl_checks;
    p.checked_ns = now_ns;
    // Its binaries and memory are its user's: whatever they make the
    // reading throw, that process is not looked at again.
    const absl::Status st = Guarded("reading a Perl process", "its stacks are native only", [&] {
      (void)Attach(pid);
      return absl::OkStatus();
    });
    if (!st.ok()) procs_[pid].state = Proc::kRefused;
  }
}

void PerlTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == Proc::kPerl && perl_procs_) perl_procs_->Delete(pid);
  procs_.erase(it);
}

void PerlTracker::ForgetFrames() {
  for (auto& [pid, p] : procs_) p.words = {};
}

}  // namespace ehprof
