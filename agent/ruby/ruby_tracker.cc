#include "agent/ruby/ruby_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/interp/interp_process.h"
#include "agent/process/proc_maps.h"

namespace ehprof {

namespace {

// Tries to find where the process's classes keep their path before names
// stay bare labels (classes not set up yet, or a Ruby keeping it elsewhere).
constexpr int kClassProbeTries = 20;
// A frame named is trusted this long before it is read again (an iseq of
// eval'd code can be freed and its memory reused).
constexpr uint64_t kRereadNs = 1'000'000'000;
// Looks at a process whose symbol table does not read yet before it is
// refused (a Ruby still starting has none for a few milliseconds).
constexpr int kProbeTries = kTlsModuleTries;

}  // namespace

const char* RubyStopName(uint32_t why) {
  switch (why) {
    case EHP_RUBY_STOP_NO_EC: return "[ruby: execution context not found]";
    case EHP_RUBY_STOP_READ_FAULT: return "[ruby: control frame read fault]";
    case EHP_RUBY_STOP_BAD_FRAME: return "[ruby: bad control frame]";
    case EHP_RUBY_STOP_FRAMES_END: return "[ruby: no control frame left]";
    case EHP_RUBY_STOP_JIT_EXIT: return "[ruby: JIT code not entered from the VM]";
    default: return "[ruby: stopped]";
  }
}

absl::StatusOr<bool> RubyTracker::Publish(uint32_t pid, Proc& proc, const RubyBinary& b, uint64_t bias) {
  proc.mem = std::make_unique<ProcessMemory>(static_cast<pid_t>(pid));
  auto module = ReadTlsModuleId(*proc.mem, b.tls_modid_slot + bias, &proc.probe_failures, b.path);
  if (!module.ok()) return module.status();
  if (!*module) return false;  // libruby not relocated yet (a process just exec'd): look again
  RubyObjectLayout layout;
  layout.symbols_last_id = b.symbols_last_id + bias;
  layout.symbols_ids = b.symbols_ids + bias;
  proc.objects.emplace(*proc.mem, layout);
  proc.classes.emplace(*proc.mem, *proc.objects);
  for (int i = 0; i < 3; ++i) proc.class_vars[i] = b.class_vars[i] ? b.class_vars[i] + bias : 0;
  if (absl::Status st = proc.objects->Probe(); !st.ok()) {
    if (++proc.probe_failures < kProbeTries) return false;  // still starting: look again
    return absl::FailedPreconditionError(absl::StrCat(b.path, ": ", st.message()));
  }
  ehp_ruby_proc p = b.layout;
  p.vm_begin = b.vm_begin + bias;
  p.vm_end = b.vm_end + bias;
  p.tls_module = **module;
  p.tls_offset = static_cast<uint64_t>(b.tls_offset);
  if (!WriteProcEntry(ruby_procs_.get(), pid, &p, "Ruby", warnings_)) return false;
  proc.loops.Set(&p.vm_begin, &p.vm_end, 1);
  return true;
}

absl::StatusOr<bool> RubyTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  return AttachInterp(pid, proc, binaries_, warnings_,
                      [&](const RubyBinary& b, uint64_t bias) { return Publish(pid, proc, b, bias); });
}

void RubyTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == InterpState::kUnknown, p.state == InterpState::kAbsent, now_ns) &&
      !LookGuarded("Ruby", [&] { (void)Attach(pid); })) {
    procs_[pid].state = InterpState::kRefused;
  }
}

std::optional<RubyClassName> RubyTracker::ClassOf(Proc& proc, uint64_t me, bool cfunc) {
  if (!proc.classes || !proc.class_vars[0] || !proc.class_vars[1] || !proc.class_vars[2]) return std::nullopt;
  if (!proc.classes->ready()) {
    if (proc.class_probes >= kClassProbeTries) return std::nullopt;
    ++proc.class_probes;
    if (!proc.classes->Probe(proc.class_vars[0], proc.class_vars[1], proc.class_vars[2]).ok()) return std::nullopt;
  }
  auto entry = proc.objects->MethodEntry(me);
  auto klass = entry.ok() ? proc.classes->OfMethodEntry(*entry, cfunc) : entry.status();
  if (!klass.ok()) return std::nullopt;
  return *klass;
}

InterpFrameName RubyTracker::Name(uint32_t pid, uint64_t word, uint64_t method) {
  InterpFrameName n;
  n.kind = EHP_INTERP_RUBY;
  const uint64_t object = EHP_INTERP_FRAME_OBJECT(word);
  const uint32_t aux = EHP_INTERP_FRAME_AUX(word);
  if (object == 0) {
    n.function = RubyStopName(aux);
    return n;
  }
  n.function = "[ruby: unreadable frame]";
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.state != InterpState::kPublished || !it->second.objects) return n;
  Proc& proc = it->second;
  RubyObjects& objects = *proc.objects;
  if (aux == EHP_INTERP_AUX_UNKNOWN) {  // a C method's entry
    bool cfunc = false;
    auto name = objects.MethodName(object, &cfunc);
    if (name.ok()) {
      auto klass = ClassOf(proc, object, /*cfunc=*/true);
      n.function = klass ? QualifiedLabel(*name, *name, *klass) : *name;
      n.native = true;
    }
    return n;
  }
  // A Ruby method's frame holds its method entry, others their iseq (a
  // block's followed by its method's entry).
  uint64_t iseq_addr = object;
  std::optional<RubyClassName> klass;
  if (auto me = objects.MethodEntry(object); me.ok()) {
    auto from_me = objects.MethodIseq(*me);
    if (!from_me.ok()) return n;
    iseq_addr = *from_me;
    klass = ClassOf(proc, *me, false);
  } else if (method) {
    klass = ClassOf(proc, method, false);
  }
  auto iseq = objects.Iseq(iseq_addr);
  if (!iseq.ok()) return n;
  n.function = klass ? QualifiedLabel(iseq->label, iseq->base_label, *klass) : iseq->label;
  n.file = iseq->path;
  // aux is (pc >> 3) % EHP_RUBY_PC_MOD: the index is exact while the iseq
  // is shorter than the modulus.
  const uint32_t base = static_cast<uint32_t>((iseq->encoded >> 3) % EHP_RUBY_PC_MOD);
  const uint32_t index = (aux + EHP_RUBY_PC_MOD - base) % EHP_RUBY_PC_MOD;
  if (iseq->size < EHP_RUBY_PC_MOD && index <= iseq->size) {
    auto line = objects.Line(*iseq, index);
    if (line.ok()) n.line = *line;
  }
  return n;
}

namespace {

bool IsRubyWord(uint64_t v) { return EHP_IS_INTERP_FRAME(v) && EHP_INTERP_FRAME_KIND(v) == EHP_INTERP_RUBY; }
bool IsMethodWord(uint64_t v) { return IsRubyWord(v) && EHP_INTERP_FRAME_AUX(v) == EHP_RUBY_AUX_METHOD; }

}  // namespace

void RubyTracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  std::vector<uint64_t>& u = *user;
  size_t out = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    uint64_t v = u[i];
    if (IsMethodWord(v)) continue;  // read with the block before it; one alone is dropped
    if (IsRubyWord(v)) {
      const uint64_t method = i + 1 < u.size() && IsMethodWord(u[i + 1]) ? EHP_INTERP_FRAME_OBJECT(u[i + 1]) : 0;
      const std::pair<uint64_t, uint64_t> key{v & EHP_INTERP_INDEX_MASK, method};
      auto it = p.words.find(key);
      if (it == p.words.end() || now_ns - it->second.read_ns >= kRereadNs) {
        it = p.words.insert_or_assign(key, Proc::Cached{table_->Add(Name(pid, v, method)), now_ns}).first;
      }
      v = table_->Word(it->second.index);
    }
    u[out++] = v;
  }
  u.resize(out);
}

void RubyTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == InterpState::kPublished && ruby_procs_) ruby_procs_->Delete(pid);
  procs_.erase(it);
}

void RubyTracker::ForgetFrames() {
  for (auto& [pid, p] : procs_) p.words = {};
}

}  // namespace ehprof
