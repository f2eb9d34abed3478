#include "agent/perl/perl_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/interp/interp_process.h"
#include "agent/process/proc_maps.h"

namespace ehprof {

const char* PerlStopName(uint32_t why) {
  switch (why) {
    case EHP_PERL_STOP_NO_INTERP: return "[perl: interpreter not found]";
    case EHP_PERL_STOP_READ_FAULT: return "[perl: context read fault]";
    case EHP_PERL_STOP_BAD_CONTEXT: return "[perl: bad context]";
    case EHP_PERL_STOP_TOO_DEEP: return "[perl: too many contexts]";
    default: return "[perl: stopped]";
  }
}

absl::StatusOr<bool> PerlTracker::Publish(uint32_t pid, Proc& proc, const PerlBinary& b, uint64_t bias) {
  proc.mem = std::make_unique<ProcessMemory>(static_cast<pid_t>(pid));
  uint64_t module = 1;  // the executable's own TLS
  if (b.tls_modid_slot) {
    auto id = ReadTlsModuleId(*proc.mem, b.tls_modid_slot + bias, &proc.probe_failures, b.path);
    if (!id.ok()) return id.status();
    if (!*id) return false;  // libperl not relocated yet: look again
    module = **id;
  }
  proc.objects.emplace(*proc.mem);
  ehp_perl_proc p = b.layout;
  p.runops_begin = b.runops_begin + bias;
  p.runops_end = b.runops_end + bias;
  p.tls_module = module;
  p.tls_offset = static_cast<uint64_t>(b.tls_offset);
  if (!WriteProcEntry(perl_procs_.get(), pid, &p, "Perl", warnings_)) return false;
  proc.loops.Set(&p.runops_begin, &p.runops_end, 1);
  return true;
}

absl::StatusOr<bool> PerlTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  return AttachInterp(pid, proc, binaries_, warnings_,
                      [&](const PerlBinary& b, uint64_t bias) { return Publish(pid, proc, b, bias); });
}

void PerlTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == InterpState::kUnknown, p.state == InterpState::kAbsent, now_ns) &&
      !LookGuarded("Perl", [&] { (void)Attach(pid); })) {
    procs_[pid].state = InterpState::kRefused;
  }
}

void PerlTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == InterpState::kPublished && perl_procs_) perl_procs_->Delete(pid);
  procs_.erase(it);
}

void PerlTracker::ForgetFrames() {
  for (auto& [pid, p] : procs_) p.words = {};
}

}  // namespace ehprof
