#include "agent/ruby/ruby_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/look_again.h"
#include "agent/process/proc_maps.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

// Tries to find where the process's classes keep their path before names
// stay bare labels (classes not set up yet, or a Ruby keeping it elsewhere).
constexpr int kClassProbeTries = 20;
// A frame named is trusted this long before it is read again (an iseq of
// eval'd code can be freed and its memory reused).
constexpr uint64_t kRereadNs = 1'000'000'000;
// Looks at a process whose TLS module id or symbol table does not read yet
// before it is refused (a Ruby still starting has neither for a few
// milliseconds).
constexpr int kProbeTries = 20;
// The largest TLS module id taken from a process's GOT.
constexpr uint64_t kMaxTlsModule = 1u << 16;

bool LooksLikeRuby(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  return base.find("ruby") != std::string::npos;
}

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

absl::StatusOr<std::optional<RubyBinary>> RubyTracker::Binary(const std::string& open_path,
                                                              const std::string& path, uint64_t inode) {
  const std::string key = absl::StrCat(path, ":", inode);
  auto it = binaries_.find(key);
  if (it != binaries_.end()) return it->second;
  absl::StatusOr<std::optional<RubyBinary>> result = std::nullopt;
  auto elf = ElfFile::Open(open_path);
  if (elf.ok()) result = InspectRubyBinary(*elf, path);
  binaries_.emplace(key, result);
  return result;
}

absl::StatusOr<bool> RubyTracker::Publish(uint32_t pid, Proc& proc, const RubyBinary& b, uint64_t bias) {
  proc.mem = std::make_unique<ProcessMemory>(static_cast<pid_t>(pid));
  uint64_t module = 0;
  if (!proc.mem->ReadU64(b.tls_modid_slot + bias, &module)) return absl::UnavailableError("process memory unreadable");
  // 0: the dynamic linker has not relocated libruby yet (a process just
  // exec'd): look again.
  if (module == 0 && ++proc.probe_failures < kProbeTries) return false;
  if (module == 0 || module > kMaxTlsModule) {
    return absl::FailedPreconditionError(absl::StrFormat("%s: TLS module id %d is not one", b.path, module));
  }
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
  p.tls_module = module;
  p.tls_offset = static_cast<uint64_t>(b.tls_offset);
  if (absl::Status st = ruby_procs_ ? ruby_procs_->Write(pid, &p, 1) : absl::OkStatus(); !st.ok()) {
    warnings_->AddOnce("ruby_procs", absl::IsResourceExhausted(st)
                                         ? absl::StrCat("Ruby processes: the BPF map is full (", pid, ")")
                                         : absl::StrCat("Ruby processes: ", st.message()));
    return false;
  }
  proc.state = Proc::kRuby;
  return true;
}

absl::StatusOr<bool> RubyTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.path.empty() || e.path[0] != '/' || !LooksLikeRuby(e.path)) continue;
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
    auto bias = LoadBias((*bin)->loads, e);
    if (!bias) return refuse(absl::StrCat(e.path, ": its mapping lies in no segment"));
    auto published = Publish(pid, proc, **bin, *bias);
    if (!published.ok() && absl::IsFailedPrecondition(published.status())) {
      return refuse(std::string(published.status().message()));
    }
    if (published.ok() && !*published && proc.state != Proc::kRuby) proc.state = Proc::kUnknown;
    return published;
  }
  proc.state = Proc::kNotRuby;
  return false;
}

void RubyTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == Proc::kUnknown, p.state == Proc::kNotRuby, now_ns)) {
    // Its binaries and memory are its user's: whatever they make the
    // reading throw, that process is not looked at again.
    const absl::Status st = Guarded("reading a Ruby process", "its stacks are native only", [&] {
      (void)Attach(pid);
      return absl::OkStatus();
    });
    if (!st.ok()) procs_[pid].state = Proc::kRefused;
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
  if (it == procs_.end() || it->second.state != Proc::kRuby || !it->second.objects) return n;
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
  if (it->second.state == Proc::kRuby && ruby_procs_) ruby_procs_->Delete(pid);
  procs_.erase(it);
}

void RubyTracker::ForgetFrames() {
  for (auto& [pid, p] : procs_) p.words = {};
}

}  // namespace ehprof
