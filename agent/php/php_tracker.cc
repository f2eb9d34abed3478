#include "agent/php/php_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/interp/interp_process.h"
#include "agent/process/proc_maps.h"

namespace ehprof {

namespace {

// A function read is trusted this long before its identifying pointers are
// compared again (closures' functions are freed and reused).
constexpr uint64_t kRecheckNs = 100'000'000;
// Frame checks that fail (frames read while the VM pushes them can) before
// the process is refused, at most one counted per kVerifySpacingNs.
constexpr int kVerifyTries = 3;
constexpr uint64_t kVerifySpacingNs = 50'000'000;
constexpr uint64_t kJitFirstRetryNs = 10'000'000;
constexpr int kJitFirstRetries = 100;
constexpr uint64_t kJitRetryNs = 1'000'000'000;
// Frames a check follows at most.
constexpr int kCheckFrames = 256;
// Functions remembered per process at most: a closure's function is a copy
// in its closure object, so a long-lived process that makes closures shows
// ever new addresses. Past this the cache starts over (the names read stay
// in the frame table).
constexpr size_t kMaxFuncs = 65536;

const char* StopName(uint32_t why) {
  switch (why) {
    case EHP_PHP_STOP_READ_FAULT: return "[php: frame read fault]";
    case EHP_PHP_STOP_BAD_FRAME: return "[php: bad frame]";
    case EHP_PHP_STOP_NO_FRAMES: return "[php: no frame left]";
    case EHP_PHP_STOP_TOO_DEEP: return "[php: too many frames]";
    default: return "[php: stopped]";
  }
}

// opcache's JIT code: the executable part of its shared memory, an
// anonymous shared mapping ("/dev/zero (deleted)"); 0, 0 when none.
std::pair<uint64_t, uint64_t> JitRange(const std::vector<MapsEntry>& maps) {
  for (const MapsEntry& e : maps) {
    if (e.exec && e.path.starts_with("/dev/zero")) return {e.start, e.end};
  }
  return {0, 0};
}

}  // namespace

std::optional<absl::Status> CheckPhpFrames(const ProcessMemory& mem, const PhpLayout& l,
                                           uint64_t current_execute_data) {
  uint64_t ex = 0;
  if (!mem.ReadU64(current_execute_data, &ex)) return absl::UnavailableError("executor_globals unreadable");
  if (!ex) return std::nullopt;
  for (int i = 0; i < kCheckFrames; ++i) {
    uint64_t func = 0, prev = 0;
    uint32_t info = 0;
    if (ex % 8 || !mem.ReadU64(ex + l.ex_func, &func) || !mem.ReadU64(ex + l.ex_prev, &prev) ||
        !mem.Read(ex + l.ex_call_info, &info, 4)) {
      return absl::DataLossError(absl::StrFormat("frame at 0x%x unreadable", ex));
    }
    if (func) {
      auto head = ReadPhpFunctionHead(mem, l, func);
      if (!head.ok()) return head.status();
      if (!prev) {
        if (head->internal || !(info & l.call_top)) {
          return absl::DataLossError("the outermost frame is no script begun by its own VM call");
        }
        auto file = ReadZendString(mem, l, head->file_ptr, kPhpMaxFile);
        if (!file.ok()) return file.status();
        if (file->empty()) return absl::DataLossError("the outermost frame names no file");
        return absl::OkStatus();
      }
    }
    ex = prev;
  }
  return absl::DataLossError(absl::StrCat("more than ", kCheckFrames, " frames"));
}

absl::StatusOr<bool> PhpTracker::Refuse(uint32_t pid, Proc& p, const std::string& why) {
  warnings_->AddOnce(p.binary.empty() ? why : p.binary, absl::StrCat(why, "; its stacks are native only"));
  if (p.state == Proc::kPhp && php_procs_) php_procs_->Delete(pid);
  p.state = Proc::kRefused;
  return absl::FailedPreconditionError(why);
}

absl::StatusOr<bool> PhpTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  auto found = binaries_.Find(pid, *maps);
  if (!found) {
    proc.state = Proc::kNotPhp;
    return false;
  }
  proc.binary = found->entry.path;
  if (!found->refused.ok()) return Refuse(pid, proc, std::string(found->refused.message()));
  const PhpBinary& b = *found->binary;
  proc.version = b.version;
  proc.bin = b;
  proc.bias = found->bias;
  proc.layout = b.layout;
  proc.current_execute_data = PhpProcFor(b, found->bias).current_execute_data;
  if (!Publish(pid, proc, JitRange(*maps))) return false;
  proc.state = Proc::kPhp;
  return true;
}

bool PhpTracker::Publish(uint32_t pid, Proc& p, std::pair<uint64_t, uint64_t> jit) {
  const ehp_php_proc value = PhpProcFor(p.bin, p.bias, jit.first, jit.second);
  p.jit = jit;
  if (!WriteProcEntry(php_procs_.get(), pid, &value, "PHP", warnings_)) return false;
  p.loops.Set(value.vm_begin, value.vm_end, EHP_PHP_VM_RANGES);
  return true;
}

// A published process's frames checked against its layout until one check
// passes; kVerifyTries failures refuse it.
void PhpTracker::Verify(uint32_t pid, Proc& p, uint64_t now_ns) {
  if (p.verified || now_ns - p.verify_ns < kVerifySpacingNs) return;
  p.verify_ns = now_ns;
  ProcessMemory mem(static_cast<pid_t>(pid));
  std::optional<absl::Status> st = CheckPhpFrames(mem, p.layout, p.current_execute_data);
  if (!st) return;  // no PHP code running now
  if (st->ok()) {
    p.verified = true;
    return;
  }
  if (++p.verify_failures >= kVerifyTries) {
    (void)Refuse(pid, p, absl::StrCat(p.binary, ": PHP ", p.version, " frames do not match its offsets (",
                                      st->message(), ")"));
  }
}

// opcache's JIT code, looked for while not found: opcache (a zend
// extension) makes it as PHP starts, its mapping is writable, not
// executable, while the JIT writes code, and opcache may have no JIT.
// Every 10 ms for its first second (JIT code run before it is found has no
// PHP frames), then every second; never again once PHP code runs in a
// process without opcache.
void PhpTracker::LookForJit(uint32_t pid, Proc& p, uint64_t now_ns) {
  const uint64_t wait = p.jit_checks < kJitFirstRetries ? kJitFirstRetryNs : kJitRetryNs;
  if (p.jit.first || p.no_opcache || now_ns - p.jit_checked_ns < wait) return;
  p.jit_checked_ns = now_ns;
  ++p.jit_checks;
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return;
  bool opcache = false;
  for (const MapsEntry& e : *maps) opcache = opcache || e.path.ends_with("/opcache.so");
  p.no_opcache = !opcache && p.verified;
  const std::pair<uint64_t, uint64_t> jit = JitRange(*maps);
  if (jit.first) (void)Publish(pid, p, jit);
}

void PhpTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == Proc::kUnknown, p.state == Proc::kNotPhp, now_ns) &&
      !LookGuarded("PHP", [&] { (void)Attach(pid); })) {
    procs_[pid].state = Proc::kRefused;
  }
  Proc& q = procs_[pid];
  if (q.state == Proc::kPhp) Verify(pid, q, now_ns);
  if (q.state == Proc::kPhp) LookForJit(pid, q, now_ns);
}

uint32_t PhpTracker::Named(const std::string& what) {
  InterpFrameName n;
  n.kind = EHP_INTERP_PHP;
  n.function = what;
  n.native = true;
  return frames_->Add(n);
}

uint32_t PhpTracker::FrameIndex(uint32_t pid, Proc& p, uint64_t word, uint64_t now_ns) {
  const uint64_t func = EHP_INTERP_FRAME_OBJECT(word);
  const uint32_t aux = EHP_INTERP_FRAME_AUX(word);
  if (func == 0) return Named(StopName(aux));
  if (p.state != Proc::kPhp) return Named("[php: process not read]");
  ProcessMemory mem(static_cast<pid_t>(pid));
  if (p.funcs.size() >= kMaxFuncs && !p.funcs.contains(func)) p.funcs.clear();
  auto [it, added] = p.funcs.try_emplace(func);
  Func& f = it->second;
  if (!added && now_ns - f.checked_ns >= kRecheckNs) {
    // A process that is gone keeps the names read; a function whose
    // pointers changed is read again.
    auto head = ReadPhpFunctionHead(mem, p.layout, func);
    f.checked_ns = now_ns;
    if (head.ok() && (head->name_ptr != f.f.name_ptr || head->file_ptr != f.f.file_ptr ||
                      head->scope != f.f.scope || head->internal != f.f.internal)) {
      added = true;
    }
  }
  if (added) {
    auto read = ReadPhpFunction(mem, p.layout, func);
    f.readable = read.ok();
    f.f = read.ok() ? *std::move(read) : PhpFunction{};
    f.checked_ns = now_ns;
    f.index_by_aux.clear();
  }
  if (!f.readable) return Named("[php: unreadable function]");
  auto [at, fresh] = f.index_by_aux.try_emplace(aux, 0);
  if (fresh) {
    InterpFrameName n;
    n.kind = EHP_INTERP_PHP;
    n.function = f.f.name;
    n.file = f.f.file;
    n.native = f.f.internal;
    n.line = PhpFrameLine(mem, p.layout, f.f, aux);
    at->second = frames_->Add(n);
  }
  return at->second;
}

void PhpTracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  for (uint64_t& v : *user) {
    if (!EHP_IS_INTERP_FRAME(v) || EHP_INTERP_FRAME_KIND(v) != EHP_INTERP_PHP) continue;
    v = frames_->Word(FrameIndex(pid, p, v, now_ns));
  }
}

void PhpTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == Proc::kPhp && php_procs_) php_procs_->Delete(pid);
  procs_.erase(it);
}

void PhpTracker::ForgetFrames() {
  for (auto& [pid, p] : procs_) {
    for (auto& [addr, f] : p.funcs) f.index_by_aux.clear();
  }
}

}  // namespace ehprof
