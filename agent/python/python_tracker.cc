#include "agent/python/python_tracker.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/interp/interp_process.h"
#include "agent/process/look_again.h"
#include "agent/process/proc_maps.h"
#include "agent/python/debug_offsets.h"
#include "base/guarded.h"
#include "base/monotonic_clock.h"

namespace ehprof {

namespace {

// A code object read is trusted this long before it is checked again
// (freed and reused code objects differ in their identifying fields).
constexpr uint64_t kRecheckNs = 100'000'000;
// Frame checks before an interpreter whose frames hold no code object is refused.
constexpr int kFrameCheckTries = 3;
constexpr uint64_t kFrameCheckSpacingNs = 50'000'000;

const char* StopName(uint32_t why) {
  switch (why) {
    case EHP_PY_STOP_NO_THREAD: return "[python: thread state not found]";
    case EHP_PY_STOP_READ_FAULT: return "[python: frame read fault]";
    case EHP_PY_STOP_FRAMES_END: return "[python: no frame left]";
    case EHP_PY_STOP_BAD_FRAME: return "[python: bad frame]";
    default: return "[python: stopped]";
  }
}

}  // namespace

PythonCodeTable::PythonCodeTable() {
  Entry unreadable;
  unreadable.code.qualname = "[python: unreadable code object]";
  codes_.push_back(std::move(unreadable));  // index 0 is never a code: stop markers
  codes_.push_back(codes_[0]);               // index 1: a code object that could not be read
}

uint32_t PythonCodeTable::Add(PythonCode code, CodeFields fields) {
  if (codes_.size() >= EHP_PY_CODE_MASK) return 1;
  codes_.push_back({std::move(code), fields});
  return static_cast<uint32_t>(codes_.size() - 1);
}

PythonFrameName PythonCodeTable::Name(uint64_t value) const {
  const uint64_t index = value & EHP_PY_CODE_MASK;
  const uint32_t offset = EHP_PY_FRAME_OFFSET(value);
  if (index == 0) return {StopName(offset), "", -1};
  if (index >= codes_.size()) return {codes_[1].code.qualname, "", -1};
  const Entry& e = codes_[index];
  PythonFrameName n{e.code.qualname, e.code.file, -1};
  if (index == 1) return n;
  // Before its first instruction (a frame just pushed, 3.10's f_lasti -1)
  // a frame is on its first line, as CPython says.
  const int64_t at = InstructionIndex(e.fields, offset);
  n.line = at >= 0 ? LineAt(e.code.lines, static_cast<uint32_t>(at)) : e.code.first_line;
  return n;
}

namespace {

// The runtime address of ELF address 0 for a mapping of the file.
// Whether the offsets lead to code objects in this process: the first
// frames of its threads have PyCode_Type as their type. nullopt: no frame
// to look at (every thread in C code); false: a frame without a code
// object, the offsets are not this build's.
std::optional<bool> FramesHoldCode(const ProcessMemory& mem, const ehp_py_proc& p, uint64_t interp,
                                   uint64_t code_type) {
  uint64_t tstate = 0;
  if (!mem.ReadU64(interp + p.interp_threads, &tstate)) return false;
  for (int t = 0; tstate && t < 64; ++t) {
    uint64_t frame = 0, next = 0;
    if (!mem.ReadU64(tstate + p.tstate_frame, &frame)) return false;
    if (frame && p.cframe_frame != EHP_PY_NO_CFRAME && !mem.ReadU64(frame + p.cframe_frame, &frame)) {
      return false;
    }
    for (int i = 0; frame && i < 16; ++i) {
      uint8_t owner = 0;
      uint64_t code = 0, type = 0, previous = 0;
      if (!mem.ReadU64(frame + p.frame_code, &code) || !mem.ReadU64(frame + p.frame_previous, &previous) ||
          !mem.Read(frame + p.frame_entry, &owner, 1)) {
        return false;
      }
      if (p.layout == EHP_PY_CSTACK_OWNER && owner == p.owner_cstack) {
        frame = previous;
        continue;
      }
      code &= ~uint64_t{p.code_tags};
      return mem.ReadU64(code + 8, &type) && type == code_type;
    }
    if (!mem.ReadU64(tstate + p.tstate_next, &next)) return false;
    tstate = next;
  }
  return std::nullopt;
}

// Whether p's data stack offset (3.11+) may stand: in the first thread
// that has a data stack, datastack_chunk, _top, _limit are in order and the
// chunk's own size field (8 bytes in) is its length; true too while no
// thread has one yet (a wrong offset costs only speed: the BPF walk's
// window still holds each frame's own bytes). Where it fails, the BPF walk
// reads frames in page windows.
bool DataStackHolds(const ProcessMemory& mem, const ehp_py_proc& p, uint64_t interp) {
  uint64_t tstate = 0;
  if (p.tstate_datastack == EHP_PY_NO_DATASTACK || !mem.ReadU64(interp + p.interp_threads, &tstate)) {
    return false;
  }
  for (int t = 0; tstate && t < 64; ++t) {
    uint64_t chunk = 0, top = 0, limit = 0, size = 0, next = 0;
    if (!mem.ReadU64(tstate + p.tstate_datastack, &chunk)) return false;
    if (chunk) {
      return (chunk & 7) == 0 && mem.ReadU64(tstate + p.tstate_datastack + 8, &top) &&
             mem.ReadU64(tstate + p.tstate_datastack + 16, &limit) && chunk < top && top <= limit &&
             mem.ReadU64(chunk + 8, &size) && size == limit - chunk;
    }
    if (!mem.ReadU64(tstate + p.tstate_next, &next)) return false;
    tstate = next;
  }
  return true;
}

// The walk's offsets for the process: 3.13+ from its own _Py_DebugOffsets
// (the file's may be patched in memory, or the file not what is mapped);
// the file's measured ones before. interp_head relative to the file.
absl::StatusOr<ehp_py_proc> OwnLayout(const ProcessMemory& mem, const PythonBinary& b, uint64_t bias) {
  if (b.minor < 13) return b.layout;
  auto own = LayoutFromProcess(mem, b.runtime + bias, b.py_version_value);
  if (absl::IsUnavailable(own.status())) return own.status();
  if (!own.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(b.path, ": a Python ehprof cannot read: ", own.status().message(),
                                                      " (in the process)"));
  }
  own->interp_head += b.runtime;
  return own;
}

}  // namespace

absl::StatusOr<bool> PythonTracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  auto found = binaries_.Find(pid, *maps);
  if (!found) {
    proc.state = Proc::kNotPython;
    return false;
  }
  const MapsEntry& e = found->entry;
  auto refuse = [&](std::string why) -> absl::StatusOr<bool> {
    warnings_->AddOnce(e.path, absl::StrCat(why, "; its stacks are native only"));
    proc.state = Proc::kRefused;
    return absl::FailedPreconditionError(why);
  };
  if (!found->refused.ok()) return refuse(std::string(found->refused.message()));
  const PythonBinary& b = *found->binary;
  proc.binary = e.path;
  proc.version = absl::StrCat(b.major, ".", b.minor);
  const uint64_t bias = found->bias;
  ProcessMemory mem(static_cast<pid_t>(pid));
  if (b.py_version) {
    uint32_t v = 0;
    if (!mem.Read(b.py_version + bias, &v, 4)) return absl::UnavailableError("process memory unreadable");
    if (v != b.py_version_value) return refuse(absl::StrCat(e.path, ": Py_Version in memory is not the file's"));
  }
  auto layout = OwnLayout(mem, b, bias);
  if (absl::IsUnavailable(layout.status())) return layout.status();
  if (!layout.ok()) return refuse(std::string(layout.status().message()));
  ehp_py_proc p = *layout;
  p.interp_head += bias;
  for (size_t i = 0; i < b.eval.size() && i < 2; ++i) {
    p.eval_begin[i] = b.eval[i].begin + bias;
    p.eval_end[i] = b.eval[i].end + bias;
  }
  uint64_t interp = 0;
  if (!mem.ReadU64(p.interp_head, &interp)) return absl::UnavailableError("process memory unreadable");
  if (!interp) {
    // Not initialized yet: look again soon.
    proc.state = Proc::kUnknown;
    return false;
  }
  // A check that fails may have read too early: PyCode_Type before the
  // loader relocated it (a dlopen'd libpython is met at its first mmap), a
  // frame mid-push. Looked at again at the next sample, at most
  // kFrameCheckTries times kFrameCheckSpacingNs apart, then refused.
  auto look_again = [&] {
    if (const uint64_t now = MonotonicNs();
        proc.frame_check_failures == 0 || now - proc.frame_check_failed_ns >= kFrameCheckSpacingNs) {
      ++proc.frame_check_failures;
      proc.frame_check_failed_ns = now;
    }
    if (proc.frame_check_failures >= kFrameCheckTries) return false;
    proc.state = Proc::kUnknown;
    return true;
  };
  auto fields = ReadCodeFields(mem, b.code_type + bias, b.minor, b.ascii_header);
  if (!fields.ok()) {
    if (look_again()) return false;
    return refuse(absl::StrCat(e.path, ": ", fields.status().message()));
  }
  if (FramesHoldCode(mem, p, interp, fields->code_type) == false && look_again()) return false;
  if (proc.frame_check_failures >= kFrameCheckTries) {
    return refuse(absl::StrCat(e.path, ": Python ", b.major, ".", b.minor,
                               " frames do not hold code objects at the offsets ehprof knows"));
  }
  if (!DataStackHolds(mem, p, interp)) p.tstate_datastack = EHP_PY_NO_DATASTACK;
  if (!WriteProcEntry(py_procs_.get(), pid, &p, "Python", warnings_)) return false;
  proc.fields = *fields;
  proc.state = Proc::kPython;
  proc.loops.Set(p.eval_begin, p.eval_end, 2);
  return true;
}

void PythonTracker::Exec(uint32_t pid) { Exit(pid); }

void PythonTracker::ForgetCodes() {
  codes_ = PythonCodeTable();
  for (auto& [pid, p] : procs_) p.code_index = {};
}

void PythonTracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == Proc::kPython && py_procs_) py_procs_->Delete(pid);
  procs_.erase(it);
}

uint32_t PythonTracker::CodeIndex(uint32_t pid, Proc& p, uint64_t addr, uint64_t now_ns) {
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto it = p.code_index.find(addr);
  if (it != p.code_index.end()) {
    if (now_ns - it->second.checked_ns < kRecheckNs) return it->second.index;
    const uint32_t index = it->second.index;
    // PythonCodeTable::Add's entries stay put: compare against the one read.
    // A process that is gone (its last samples drain after it exits) cannot
    // have changed its objects since: the name read stays.
    if (index > 1) {
      switch (CheckCode(mem, p.fields, addr, codes_.code(index))) {
        case CodeCheck::kSame:
        case CodeCheck::kUnreadable:
          it->second.checked_ns = now_ns;
          return index;
        case CodeCheck::kChanged:
          break;
      }
    }
  }
  auto code = ReadCode(mem, p.fields, addr);
  const uint32_t index = code.ok() ? codes_.Add(std::move(*code), p.fields) : 1;
  p.code_index[addr] = {index, now_ns};
  return index;
}

void PythonTracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == Proc::kUnknown, p.state == Proc::kNotPython, now_ns)) {
    // Its binaries and memory are its user's: whatever they make the
    // reading throw, that process is not looked at again (every sample of
    // it would throw the same), and the others are.
    const absl::Status st = Guarded("reading a Python process", "its stacks are native only", [&] {
      (void)Attach(pid);
      return absl::OkStatus();
    });
    if (!st.ok()) procs_[pid].state = Proc::kRefused;
  }
}

void PythonTracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  for (uint64_t& v : *user) {
    if (!EHP_IS_PY_FRAME(v)) continue;
    const uint64_t code = EHP_PY_FRAME_CODE(v);
    if (code == 0) continue;  // a stop marker stays as it is
    const uint32_t index = p.state == Proc::kPython ? CodeIndex(pid, p, code, now_ns) : 1;
    v = (v & ~EHP_PY_CODE_MASK) | index;
  }
}

std::vector<PythonFound> PythonTracker::Found() const {
  std::vector<PythonFound> out;
  binaries_.ForEachInspected([&](std::string_view path, const absl::StatusOr<std::optional<PythonBinary>>& bin) {
    if (bin.ok() && !*bin) return;
    PythonFound f;
    if (bin.ok()) {
      f.path = (*bin)->path;
      f.version = absl::StrCat((*bin)->major, ".", (*bin)->minor);
    } else {
      f.path = std::string(path);
      f.problem = std::string(bin.status().message());
    }
    out.push_back(std::move(f));
  });
  return out;
}

}  // namespace ehprof
