#include "agent/jvm/jvm_tracker.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/jvm/code_heaps.h"
#include "agent/jvm/vm_structs.h"
#include "agent/process/proc_maps.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

// A Method read is trusted this long before it is checked again (a class
// unloaded frees its Methods, and the memory may hold another's).
constexpr uint64_t kRecheckNs = 100'000'000;
// A compiled frame's scopes, cached by pc, are checked against their
// nmethod this often; a process's cache holds at most this many pcs.
constexpr uint64_t kScopesRecheckNs = 10'000'000;
constexpr size_t kMaxCachedScopes = 65536;
// A process that is no JVM yet, or whose JVM is still starting, is looked
// at again after 10 ms, then twice as long each time up to a second.
constexpr uint64_t kFirstRetryNs = 10'000'000;
constexpr uint64_t kRetryNs = 1'000'000'000;
// The code heaps are read again this often: a JVM looked at while it
// sets up its code cache may have added only some of its heaps.
constexpr uint64_t kHeapRefreshNs = 1'000'000'000;
// Looks at a JVM whose tables do not read (its libjvm.so mapped, its
// static initializers not run yet) before it is refused.
constexpr int kTableTries = 8;

uint64_t RetryAfter(int looks) { return std::min(kRetryNs, kFirstRetryNs << std::min(looks, 7)); }

}  // namespace

JvmTracker::JvmTracker(std::unique_ptr<MapWriter> jvm_procs, Warnings* warnings)
    : jvm_procs_(std::move(jvm_procs)), warnings_(warnings) {}

JvmTracker::~JvmTracker() = default;

const JvmMethodTable& JvmTracker::methods() const { return methods_; }

void JvmTracker::Refuse(uint32_t pid, Proc& p, const std::string& why) {
  p.state = Proc::kRefused;
  auto it = libjvms_.find(p.libjvm);
  const std::string path = it != libjvms_.end() ? it->second.path : "libjvm.so";
  const std::string version = it != libjvms_.end() && !it->second.version.empty()
                                  ? absl::StrCat(" ", it->second.version) : "";
  if (it != libjvms_.end() && it->second.problem.empty()) it->second.problem = why;
  warnings_->AddOnce(absl::StrCat("jvm:", path),
                     absl::StrCat("JVM ", path, version, " (pid ", pid, "): ", why,
                                  "; its Java frames are not named"));
}

absl::Status JvmTracker::ReadLayout(uint32_t pid, Proc& p, const MapsEntry& e) {
  p.libjvm = absl::StrCat(e.path, ":", e.inode);
  auto it = libjvms_.find(p.libjvm);
  if (it == libjvms_.end()) {
    const std::string open = absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end);
    auto elf = ElfFile::Open(open);
    absl::StatusOr<LibjvmFile> file = elf.ok() ? InspectLibjvm(*elf) : absl::StatusOr<LibjvmFile>(elf.status());
    it = libjvms_.emplace(p.libjvm, Libjvm{e.path, std::move(file), "", ""}).first;
  }
  if (!it->second.file.ok()) return absl::FailedPreconditionError(it->second.file.status().message());
  auto bias = LoadBias(it->second.file->loads, e);
  if (!bias) return absl::FailedPreconditionError("its mapping lies in no segment of the file");
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto vm = VmStructs::Read(mem, RuntimeSymbols(*it->second.file, *bias));
  if (!vm.ok()) return absl::UnavailableError(vm.status().message());
  it->second.version = JvmVersion(*vm, mem);
  auto layout = ReadJvmLayout(*vm, mem);
  if (!layout.ok()) return layout.status();
  p.layout = std::move(*layout);
  return absl::OkStatus();
}

bool JvmTracker::Publish(uint32_t pid, const ehp_jvm_proc& value) {
  const absl::Status st = jvm_procs_ ? jvm_procs_->Write(pid, &value, 1) : absl::OkStatus();
  if (st.ok()) return true;
  warnings_->AddOnce("jvm_procs", absl::IsResourceExhausted(st)
                                      ? absl::StrCat("JVMs: the BPF map is full (pid ", pid, ")")
                                      : absl::StrCat("JVMs: ", st.message()));
  return false;
}

void JvmTracker::Look(uint32_t pid, Proc& p) {
  auto maps = ReadProcMaps(static_cast<int>(pid));
  std::optional<MapsEntry> e = maps.ok() ? FindLibjvmMapping(*maps) : std::nullopt;
  if (!e) {
    p.state = Proc::kNotJvm;
    return;
  }
  p.state = Proc::kNotUp;
  if (!p.layout) {
    const absl::Status st = ReadLayout(pid, p, *e);
    if (absl::IsUnavailable(st) && p.looks < kTableTries) return;
    if (!st.ok()) return Refuse(pid, p, std::string(st.message()));
  }
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto up = ReadCodeHeaps(mem, p.layout->heaps, &p.layout->proc);
  if (up.ok() && !*up) return;  // the code cache is not set up yet
  if (!up.ok()) {
    if (absl::IsUnavailable(up.status()) && p.looks < kTableTries) return;
    return Refuse(pid, p, std::string(up.status().message()));
  }
  if (Publish(pid, p.layout->proc)) {
    p.state = Proc::kJvm;
    ++jvms_read_;
  }
}

void JvmTracker::RefreshHeaps(uint32_t pid, Proc& p, uint64_t now_ns) {
  p.checked_ns = now_ns;
  ehp_jvm_proc now = p.layout->proc;
  auto up = ReadCodeHeaps(ProcessMemory(static_cast<pid_t>(pid)), p.layout->heaps, &now);
  if (!up.ok() || !*up || std::memcmp(&now, &p.layout->proc, sizeof(now)) == 0) return;
  if (Publish(pid, now)) p.layout->proc = now;
}

void JvmTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  const bool waiting = p.state == Proc::kNotJvm || p.state == Proc::kNotUp;
  if (p.state == Proc::kJvm && now_ns - p.checked_ns > kHeapRefreshNs) {
    RefreshHeaps(pid, p, now_ns);
    return;
  }
  if (p.state == Proc::kNotJvm && !p.maps_changed) return;
  if (p.state != Proc::kUnknown && !(waiting && now_ns - p.checked_ns > RetryAfter(p.looks))) return;
  if (waiting) ++p.looks;
  p.checked_ns = now_ns;
  p.maps_changed = false;
  // Its files and memory are its user's: whatever they make the reading
  // throw, that process is not looked at again, and the others are.
  const absl::Status st = Guarded("reading a JVM", "its Java frames are not named", [&] {
    Look(pid, p);
    return absl::OkStatus();
  });
  if (!st.ok()) p.state = Proc::kRefused;
}

uint32_t JvmTracker::MethodIndex(uint32_t pid, Proc& p, uint64_t method, uint64_t now_ns) {
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto it = p.method_index.find(method);
  if (it != p.method_index.end()) {
    if (now_ns - it->second.checked_ns < kRecheckNs) return it->second.index;
    // A process that is gone cannot have changed its methods since: the
    // name read stays (its last samples drain after it exits).
    const uint32_t index = it->second.index;
    if (index != 0 && CheckJvmMethod(mem, p.layout->method, method, methods_.method(index)) != MethodCheck::kChanged) {
      it->second.checked_ns = now_ns;
      return index;
    }
  }
  auto m = ReadJvmMethod(mem, p.layout->method, method);
  const uint32_t index = m.ok() ? methods_.Add(std::move(*m)) : 0;
  p.method_index[method] = {index, now_ns};
  return index;
}

uint64_t JvmTracker::NameFrame(uint32_t pid, Proc& p, uint64_t v, uint64_t now_ns) {
  const uint64_t method = EHP_JVM_FRAME_METHOD(v);
  if (method == 0) return v;  // method 0 stays as the walk sent it
  const uint32_t index = p.state == Proc::kJvm ? MethodIndex(pid, p, method, now_ns) : 0;
  v &= ~EHP_JVM_METHOD_MASK;
  if (index == 0) {
    // A Method* that does not read as a method: JVM code of method 0.
    const uint64_t blob = EHP_JVM_FRAME_COMPILED(v) ? EHP_JVM_BLOB_UNKNOWN : EHP_JVM_BLOB_INTERPRETER;
    v = (v & ~(uint64_t{EHP_JVM_BCI_UNKNOWN} << EHP_JVM_METHOD_BITS)) | (blob << EHP_JVM_METHOD_BITS);
  }
  return v | index;
}

const JvmScopes* JvmTracker::Scopes(uint32_t pid, Proc& p, uint64_t frame, uint64_t pc, bool leaf,
                                    uint64_t now_ns) {
  ProcessMemory mem(static_cast<pid_t>(pid));
  const uint64_t key = pc | (leaf ? uint64_t{1} << 63 : 0);
  auto it = p.scopes.find(key);
  // A freed nmethod's memory may hold another's: a cached chain is
  // checked against its nmethod's method and compile id, a failed read
  // is tried again, both after kScopesRecheckNs.
  if (it != p.scopes.end() &&
      (now_ns - it->second.checked_ns < kScopesRecheckNs ||
       (it->second.scopes.ok() && SameJvmNmethod(mem, p.layout->proc, p.layout->inlining, *it->second.scopes)))) {
    if (now_ns - it->second.checked_ns >= kScopesRecheckNs) it->second.checked_ns = now_ns;
    return it->second.scopes.ok() ? &*it->second.scopes : nullptr;
  }
  if (p.scopes.size() >= kMaxCachedScopes) p.scopes.clear();
  auto read = ReadJvmScopes(mem, p.layout->proc, p.layout->inlining, pc, leaf, EHP_JVM_FRAME_METHOD(frame),
                            p.layout->method.unsigned5_x);
  auto& cached = p.scopes[key];
  cached = {std::move(read), now_ns};
  return cached.scopes.ok() ? &*cached.scopes : nullptr;
}

bool JvmTracker::Expand(uint32_t pid, Proc& p, uint64_t v, uint64_t pc_word, bool leaf, uint64_t now_ns,
                        std::vector<uint64_t>* out) {
  if (p.state != Proc::kJvm || !EHP_JVM_FRAME_COMPILED(v) || EHP_JVM_FRAME_METHOD(v) == 0) return false;
  const JvmScopes* s = Scopes(pid, p, v, EHP_JVM_PC_OF(pc_word), leaf, now_ns);
  if (s == nullptr) return false;
  const size_t first = out->size();
  for (size_t i = 0; i < s->scopes.size(); ++i) {
    const JvmScope& scope = s->scopes[i];
    const uint32_t index = MethodIndex(pid, p, scope.method, now_ns);
    if (index == 0) {
      out->resize(first);
      return false;
    }
    const uint32_t bci = scope.bci >= 0 && scope.bci < int32_t{EHP_JVM_BCI_UNKNOWN}
                             ? static_cast<uint32_t>(scope.bci) : EHP_JVM_BCI_UNKNOWN;
    const uint64_t inlined = i + 1 < s->scopes.size() ? kJvmFrameInlined : 0;
    out->push_back(EHP_FRAME_JVM | EHP_JVM_COMPILED | uint64_t{bci} << EHP_JVM_METHOD_BITS | kJvmFrameScopeBci |
                   inlined | index);
  }
  return true;
}

void JvmTracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  std::vector<uint64_t> out;
  out.reserve(user->size());
  for (size_t i = 0; i < user->size(); ++i) {
    const uint64_t v = (*user)[i];
    if (EHP_IS_JVM_PC(v)) continue;  // one after no compiled frame: nothing to expand
    if (!EHP_IS_JVM_FRAME(v)) {
      out.push_back(v);
      continue;
    }
    // A pc word with EHP_JVM_PC_EXACT holds an interrupted pc: the leaf's,
    // or the one under a signal handler.
    if (i + 1 < user->size() && EHP_IS_JVM_PC((*user)[i + 1]) &&
        Expand(pid, p, v, (*user)[i + 1], ((*user)[i + 1] & EHP_JVM_PC_EXACT) != 0, now_ns, &out)) {
      ++i;
      continue;
    }
    out.push_back(NameFrame(pid, p, v, now_ns));
  }
  *user = std::move(out);
}

void JvmTracker::Exec(uint32_t pid) { Exit(pid); }

void JvmTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == Proc::kJvm && jvm_procs_) jvm_procs_->Delete(pid);
  procs_.erase(it);
}

void JvmTracker::ForgetMethods() {
  methods_ = JvmMethodTable();
  for (auto& [pid, p] : procs_) p.method_index = {};
}

std::vector<JvmFound> JvmTracker::Found() const {
  std::vector<JvmFound> out;
  for (const auto& [key, lib] : libjvms_) {
    JvmFound f{lib.path, lib.version, lib.problem};
    if (f.problem.empty() && !lib.file.ok()) f.problem = std::string(lib.file.status().message());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ehprof
