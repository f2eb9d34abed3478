#include "agent/python/debug_offsets.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ehprof {

namespace {

// Where each structure's part starts in _Py_DebugOffsets (its size field;
// the offsets follow it in u64s). 3.13 and 3.14 order the fields used here
// alike within each part; 3.14 adds interpreter fields (threads_main,
// code_object_generation, tlbc_generation) and frame fields
// (stackpointer, tlbc_index), which move the later parts.
struct BlockLayout {
  uint32_t runtime, interp, thread, frame;
};
constexpr BlockLayout k313{24, 48, 152, 224};
constexpr BlockLayout k314{24, 48, 176, 248};

// Field indexes within each part (0 is the structure's size).
enum : uint32_t {
  kRuntimeInterpretersHead = 2,
  kInterpNext = 2,
  kInterpThreadsHead = 3,
  kThreadNext = 2,
  kThreadCurrentFrame = 4,
  kThreadId = 5,
  kThreadDatastackChunk = 7,
  kFramePrevious = 1,
  kFrameExecutable = 2,
  kFrameInstrPtr = 3,
  kFrameOwner = 5,
};

// Largest plausible size of each structure: _PyRuntimeState and the
// interpreter state hold the main interpreter and its caches (hundreds of
// KiB); a thread state, a frame and a code object header are small.
constexpr uint64_t kMaxRuntimeSize = 1 << 24, kMaxThreadSize = 1 << 16, kMaxFrameSize = 1024;
// FRAME_OWNED_BY_CSTACK (3.12/3.13) and FRAME_OWNED_BY_INTERPRETER (3.14):
// the owner of the entry frame each eval call pushes on the C stack.
constexpr uint8_t kEntryFrameOwner = 3;
// 3.14's _PyStackRef tag bits (Py_TAG_BITS) in f_executable.
constexpr uint8_t kStackRefTags = 3;

uint64_t U64At(std::span<const uint8_t> b, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

// One part of the block: its size, then field reads bounded by it.
class Part {
 public:
  Part(std::span<const uint8_t> b, uint32_t at, const char* name) : b_(b), at_(at), name_(name) {}
  // Field i, which `width` bytes of the structure follow: inside it and
  // small enough for the walk's 16-bit offsets; else the error.
  absl::Status Field(uint32_t i, uint64_t width, uint64_t max_size, uint64_t* out) const {
    const uint64_t size = U64At(b_, at_), off = U64At(b_, at_ + 8 * i);
    if (size == 0 || size > max_size) {
      return absl::InvalidArgumentError(absl::StrCat("_Py_DebugOffsets gives ", name_, " a size of ", size));
    }
    if (off + width > size || off >= 0xffff) {
      return absl::InvalidArgumentError(
          absl::StrCat("_Py_DebugOffsets puts a ", name_, " field at ", off, ", past its size ", size));
    }
    *out = off;
    return absl::OkStatus();
  }

 private:
  std::span<const uint8_t> b_;
  uint32_t at_;
  const char* name_;
};

struct Fields {
  uint64_t interp_head, interp_next, threads, thread_next, frame, thread_id, datastack, previous, executable,
      instr, owner;
};

absl::Status ReadFields(std::span<const uint8_t> b, const BlockLayout& l, Fields* f) {
  const Part runtime(b, l.runtime, "_PyRuntimeState"), interp(b, l.interp, "PyInterpreterState"),
      thread(b, l.thread, "PyThreadState"), frame(b, l.frame, "_PyInterpreterFrame");
  for (absl::Status st : {
           runtime.Field(kRuntimeInterpretersHead, 8, kMaxRuntimeSize, &f->interp_head),
           interp.Field(kInterpNext, 8, kMaxRuntimeSize, &f->interp_next),
           interp.Field(kInterpThreadsHead, 8, kMaxRuntimeSize, &f->threads),
           thread.Field(kThreadNext, 8, kMaxThreadSize, &f->thread_next),
           thread.Field(kThreadCurrentFrame, 8, kMaxThreadSize, &f->frame),
           thread.Field(kThreadId, 8, kMaxThreadSize, &f->thread_id),
           // datastack_chunk, _top and _limit: the walk reads all three.
           thread.Field(kThreadDatastackChunk, 24, kMaxThreadSize, &f->datastack),
           frame.Field(kFramePrevious, 8, kMaxFrameSize, &f->previous),
           frame.Field(kFrameExecutable, 8, kMaxFrameSize, &f->executable),
           frame.Field(kFrameInstrPtr, 8, kMaxFrameSize, &f->instr),
           frame.Field(kFrameOwner, 1, kMaxFrameSize, &f->owner),
       }) {
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ehp_py_proc> LayoutFromDebugOffsets(std::span<const uint8_t> b, uint32_t py_version) {
  if (b.size() < kDebugOffsetsSize || std::memcmp(b.data(), "xdebugpy", 8) != 0) {
    return absl::InvalidArgumentError("_PyRuntime does not start with _Py_DebugOffsets' cookie \"xdebugpy\"");
  }
  const uint64_t version = U64At(b, 8);
  if (version != py_version) {
    return absl::InvalidArgumentError(
        absl::StrFormat("_Py_DebugOffsets' version %#x is not Py_Version %#x", version, py_version));
  }
  if (U64At(b, 16) != 0) {
    return absl::InvalidArgumentError("a free-threaded build (ehprof reads the frames of GIL builds only)");
  }
  const uint32_t minor = (py_version >> 16) & 0xff;
  if ((py_version >> 24) != 3 || (minor != 13 && minor != 14)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("_Py_DebugOffsets of version %#x, whose layout ehprof does not know", py_version));
  }
  Fields f{};
  if (absl::Status st = ReadFields(b, minor == 13 ? k313 : k314, &f); !st.ok()) return st;
  const uint64_t read = std::max({f.executable + 8, f.previous + 8, f.instr + 8, f.owner + 1});
  if (read > EHP_PY_FRAME_READ_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("_Py_DebugOffsets' frame fields end at ", read));
  }
  ehp_py_proc p{};
  p.interp_head = f.interp_head;
  p.interp_next = static_cast<uint16_t>(f.interp_next);
  p.interp_threads = static_cast<uint16_t>(f.threads);
  p.tstate_next = static_cast<uint16_t>(f.thread_next);
  p.tstate_thread_id = static_cast<uint16_t>(f.thread_id);
  p.tstate_frame = static_cast<uint16_t>(f.frame);
  p.cframe_frame = EHP_PY_NO_CFRAME;
  p.frame_code = static_cast<uint16_t>(f.executable);
  p.frame_previous = static_cast<uint16_t>(f.previous);
  p.frame_instr = static_cast<uint16_t>(f.instr);
  p.frame_entry = static_cast<uint16_t>(f.owner);
  p.frame_read = static_cast<uint16_t>((read + 7) & ~uint64_t{7});
  p.layout = EHP_PY_CSTACK_OWNER;
  p.owner_cstack = kEntryFrameOwner;
  p.tstate_datastack = static_cast<uint16_t>(f.datastack);
  p.code_tags = minor >= 14 ? kStackRefTags : 0;
  return p;
}

absl::StatusOr<ehp_py_proc> LayoutFromProcess(const ProcessMemory& mem, uint64_t runtime, uint32_t py_version) {
  uint8_t bytes[kDebugOffsetsSize];
  if (!mem.Read(runtime, bytes, sizeof(bytes))) {
    return absl::UnavailableError("_Py_DebugOffsets unreadable in the process");
  }
  return LayoutFromDebugOffsets(bytes, py_version);
}

}  // namespace ehprof
