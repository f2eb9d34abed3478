// The --verify oracle: unwinds a captured copy of a user stack with libdwfl,
// as `perf record --call-graph dwarf` does, so the in-kernel CFI walk can be
// checked frame by frame against an unwinder that shares none of its code
// (neither our CFI parser nor the compact tables).
#ifndef EHPROF_AGENT_VERIFY_DWFL_UNWINDER_H_
#define EHPROF_AGENT_VERIFY_DWFL_UNWINDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/scoped_handle.h"
#include "symbolizer/safe_debuginfo.h"

// libdwfl.h typedefs these incomplete structs; declaring them here keeps
// elfutils' headers out of every includer.
struct Dwfl;
struct Dwfl_Thread;
struct Elf;

namespace ehprof {

// elf_end and dwfl_end, with elfutils' headers kept out of includers.
void EndElf(Elf* elf);
void EndDwfl(Dwfl* dwfl);

// One executable mapping of the process, as /proc/PID/maps had it.
struct DwflMapping {
  uint64_t start = 0, end = 0;  // runtime addresses, end exclusive
  uint64_t bias = 0;            // ELF virtual address = runtime address - bias
  std::string path;             // file to read (may be gone: then the mapping is skipped)
};

// The user registers and stack bytes the BPF program copied for one sample.
struct StackCapture {
  // x86-64 DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
  uint64_t regs[17] = {};
  std::vector<uint8_t> stack;  // bytes from regs[7] (rsp) upwards
  // False when the leaf's pc is a syscall's return (the instruction after
  // `syscall`), which can lie past its function's FDE, as rt_sigreturn's in
  // __restore_rt does: its CFI is looked up at pc - 1, as the BPF walk does.
  bool exact = true;
};

// Not thread-safe (a Dwfl is not): one per thread, reused across samples of
// the same process (opening the files again per sample is what made perf's
// libdw unwinding slow).
class DwflUnwinder {
 public:
  // Reports each (file, bias) once. Mappings whose file cannot be opened, or
  // whose range the file's PT_LOADs at that bias do not cover, are skipped:
  // pcs in them end the walk. Setup errors are kept and returned by Unwind.
  explicit DwflUnwinder(std::vector<DwflMapping> mappings);
  ~DwflUnwinder();
  // libdwfl holds `this` as its callback argument: neither copied nor moved.
  DwflUnwinder(const DwflUnwinder&) = delete;
  DwflUnwinder& operator=(const DwflUnwinder&) = delete;

  // The pcs of the frames, leaf first, at most `max_frames`: the leaf's pc
  // (regs[16]), then each caller's pc as dwfl_frame_pc gives it, which is the
  // return address (libdw's isactivation=false) except for a frame
  // interrupted by a signal, whose pc is where it was interrupted. Memory
  // outside [rsp, rsp + stack.size()) is unreadable: a read there ends the
  // walk, as it ends perf's. An error only for setup failures.
  //
  // libdw's ways (0.188), which this reproduces as perf would see them:
  // - Where no CFI covers a pc (no module, a skipped file, no FDE), it
  //   follows the rbp chain: those frames are frame-pointer guesses.
  // - Its x86-64 ABI defaults make rax, not rbx, same-value: in callers rbx
  //   is unknown unless an FDE saved it, so a rule computed from rbx there
  //   ends libdw's walk where ehprof's may go on.
  absl::StatusOr<std::vector<uint64_t>> Unwind(const StackCapture& capture, size_t max_frames);

  // Why the last Unwind ended: "" when libdw found the bottom of the stack
  // (return address undefined, as in _start and clone3), "max_frames",
  // "return address 0" (the end of an rbp chain), "memory read outside the
  // captured stack at 0x...", or libdwfl's message (e.g. a pc in no module
  // with no usable rbp).
  const std::string& last_stop() const { return last_stop_; }
  // The files reported to libdwfl (after the skips), for tests and logs.
  const std::vector<std::string>& reported_paths() const { return reported_paths_; }

 private:

  absl::Status Setup(const std::vector<DwflMapping>& mappings);
  bool ReadWord(uint64_t addr, uint64_t* out) const;

  // libdwfl's Dwfl_Thread_Callbacks.
  static int NextThread(Dwfl* dwfl, void* arg, void** thread_arg);
  static bool GetThread(Dwfl* dwfl, int tid, void* arg, void** thread_arg);
  static bool MemoryRead(Dwfl* dwfl, uint64_t addr, uint64_t* result, void* arg);
  static bool SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg);

  // Declared before dwfl_ so they are destroyed after it: the Dwfl's process
  // state uses the machine Elf until dwfl_end.
  std::vector<char> machine_image_;  // a bare x86-64 ELF header
  ScopedHandle<Elf, EndElf> machine_elf_;
  ScopedHandle<Dwfl, EndDwfl> dwfl_;
  absl::Status setup_status_;
  std::vector<std::string> reported_paths_;
  // Each module's userdata: its file's name, where FindDebuginfoSafely
  // looks for a .gnu_debuglink name (the module's file name is a
  // /proc/self/fd link that is closed by then). A deque: never moved.
  std::deque<DebugSearch> debug_searches_;
  const StackCapture* capture_ = nullptr;  // only during Unwind
  bool read_failed_ = false;  // since the last frame was collected
  uint64_t failed_read_addr_ = 0;
  std::string last_stop_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_VERIFY_DWFL_UNWINDER_H_
