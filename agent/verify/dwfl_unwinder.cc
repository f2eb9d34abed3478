#include "agent/verify/dwfl_unwinder.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>

#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/untrusted_file.h"
#include "symbolizer/safe_debuginfo.h"

namespace ehprof {
namespace {

// The one thread the Dwfl knows; libdwfl only passes it back to us.
constexpr pid_t kTid = 1;
constexpr int kRegisterCount = 17;  // DWARF 0..16: rax..r15, then rip
constexpr int kPcRegister = 16;
constexpr uint64_t kPageSize = 4096;

// The files are reported directly (dwfl_report_elf preinstalls their Elf),
// so find_elf is not called; find_debuginfo supplies .debug_frame for pcs
// .eh_frame lacks (build-id, then a plain .gnu_debuglink name, each opened
// so that a FIFO or device a user put there is refused; debuginfod too,
// but only when DEBUGINFOD_URLS is set: symbolizer/safe_debuginfo.h).
char* debuginfo_path = nullptr;
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = FindDebuginfoSafely,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

std::string DwflError() { return dwfl_errmsg(-1); }

// A bare ELF header saying "x86-64": dwfl_attach_state takes the machine
// from it, so attaching works even when no mapping's file could be opened.
std::vector<char> MachineImage() {
  Elf64_Ehdr ehdr = {};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_EXEC;
  ehdr.e_machine = EM_X86_64;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  std::vector<char> image(sizeof(ehdr));
  std::memcpy(image.data(), &ehdr, sizeof(ehdr));
  return image;
}

// Whether libdwfl placed `mod` where the mappings say the file is: the same
// bias (libdwfl forces 0 for ET_EXEC whatever base it is given) and a range
// covering every mapping (the module ends at the last PT_LOAD's p_memsz,
// the mapping at the page after it).
bool ModuleMatches(Dwfl_Module* mod, uint64_t bias,
                   const std::vector<const DwflMapping*>& mappings) {
  Dwarf_Addr start = 0, end = 0, mod_bias = 0;
  dwfl_module_info(mod, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr);
  if (dwfl_module_getelf(mod, &mod_bias) == nullptr || mod_bias != bias) return false;
  const uint64_t page_end = (end + kPageSize - 1) & ~(kPageSize - 1);
  for (const DwflMapping* m : mappings) {
    if (m->start < start || m->end > page_end) return false;
  }
  return true;
}

struct WalkState {
  std::vector<uint64_t>* pcs;
  size_t max_frames;
  bool* read_failed;
  const char* stop = nullptr;  // set when CollectFrame ends the walk
};

int CollectFrame(Dwfl_Frame* frame, void* arg) {
  auto* walk = static_cast<WalkState*>(arg);
  // A failed read only matters if it is the one that ended the walk, i.e.
  // happened while unwinding the last frame (which starts after this).
  *walk->read_failed = false;
  Dwarf_Addr pc = 0;
  // isactivation is not asked for: it is only true for the leaf and after a
  // signal trampoline, and asking makes libdw unwind the next frame from
  // inside this callback, which would muddle which frame a failed read ends.
  if (!dwfl_frame_pc(frame, &pc, nullptr)) return DWARF_CB_ABORT;
  // Where no CFI covers a pc, libdw 0.188 follows the rbp chain instead
  // (its x86-64 backend's frame-pointer fallback) and reports the 0 that
  // ends such a chain as a frame: it is the end of the stack, not a frame.
  if (pc == 0 && !walk->pcs->empty()) {
    walk->stop = "return address 0";
    return DWARF_CB_ABORT;
  }
  walk->pcs->push_back(pc);
  if (walk->pcs->size() < walk->max_frames) return DWARF_CB_OK;
  walk->stop = "max_frames";
  return DWARF_CB_ABORT;
}

}  // namespace

void EndDwfl(Dwfl* dwfl) { dwfl_end(dwfl); }
void EndElf(Elf* elf) { elf_end(elf); }

DwflUnwinder::DwflUnwinder(std::vector<DwflMapping> mappings) {
  setup_status_ = Setup(mappings);
}

DwflUnwinder::~DwflUnwinder() = default;

absl::Status DwflUnwinder::Setup(const std::vector<DwflMapping>& mappings) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return absl::InternalError(absl::StrCat("libelf: ", std::string(elf_errmsg(-1))));
  }
  // One module per file and bias: a file is mapped in several pieces (and
  // exceptionally twice, at two biases).
  std::map<std::pair<std::string, uint64_t>, std::vector<const DwflMapping*>> files;
  for (const DwflMapping& m : mappings) files[{m.path, m.bias}].push_back(&m);

  // A module cannot be withdrawn once reported, so when one turns out to be
  // misplaced the Dwfl is rebuilt without it (at most once: the others
  // report the same way again).
  for (int attempt = 0; attempt < 2; ++attempt) {
    dwfl_.reset(dwfl_begin(&kOfflineCallbacks));
    if (!dwfl_) return absl::InternalError(absl::StrCat("dwfl_begin: ", DwflError()));
    reported_paths_.clear();
    debug_searches_.clear();
    bool misplaced = false;
    dwfl_report_begin(dwfl_.get());
    for (auto it = files.begin(); it != files.end();) {
      const auto& [path, bias] = it->first;
      // Opened by us (never blocking, a regular file); libdwfl opens it
      // through our fd's /proc/self/fd link, this very inode.
      absl::StatusOr<UniqueFd> file = OpenUntrustedFile(path, LinkPolicy::kFollow);
      if (!file.ok()) {
        it = files.erase(it);
        continue;
      }
      const std::string fd_path = absl::StrCat("/proc/self/fd/", file->get());
      // add_p_vaddr=true makes the module's bias equal `base` for ET_DYN;
      // with false, base would be where the first PT_LOAD starts instead.
      Dwfl_Module* mod =
          dwfl_report_elf(dwfl_.get(), path.c_str(), fd_path.c_str(), -1, bias, true);
      if (mod == nullptr) {  // gone, unreadable or not ELF: skipped
        it = files.erase(it);
        continue;
      }
      void** userdata = nullptr;
      dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
      if (userdata != nullptr) *userdata = &debug_searches_.emplace_back(DebugSearch{path, -1, 0, {}});
      if (!ModuleMatches(mod, bias, it->second)) {
        misplaced = true;
        it = files.erase(it);
        continue;
      }
      reported_paths_.push_back(path);
      ++it;
    }
    if (dwfl_report_end(dwfl_.get(), nullptr, nullptr) != 0) {
      return absl::InternalError(absl::StrCat("dwfl_report_end: ", DwflError()));
    }
    if (!misplaced) break;
  }

  machine_image_ = MachineImage();
  machine_elf_.reset(elf_memory(machine_image_.data(), machine_image_.size()));
  if (!machine_elf_) {
    return absl::InternalError(absl::StrCat("elf_memory: ", std::string(elf_errmsg(-1))));
  }
  static const Dwfl_Thread_Callbacks kThreadCallbacks = {
      .next_thread = NextThread,
      .get_thread = GetThread,
      .memory_read = MemoryRead,
      .set_initial_registers = SetInitialRegisters,
      .detach = nullptr,
      .thread_detach = nullptr,
  };
  // Attached once: the process state stays for the Dwfl's lifetime and each
  // Unwind only swaps the capture the callbacks read (via `this`).
  if (!dwfl_attach_state(dwfl_.get(), machine_elf_.get(), kTid, &kThreadCallbacks, this)) {
    return absl::InternalError(absl::StrCat("dwfl_attach_state: ", DwflError()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> DwflUnwinder::Unwind(const StackCapture& capture,
                                                           size_t max_frames) {
  if (!setup_status_.ok()) return setup_status_;
  std::vector<uint64_t> pcs;
  last_stop_.clear();
  if (max_frames == 0) {
    last_stop_ = "max_frames";
    return pcs;
  }
  read_failed_ = false;
  capture_ = &capture;
  WalkState walk{&pcs, max_frames, &read_failed_};
  const int rc = dwfl_getthread_frames(dwfl_.get(), kTid, CollectFrame, &walk);
  const std::string error = rc == -1 ? DwflError() : "";
  capture_ = nullptr;
  // An inexact leaf was handed to libdw at pc - 1 (SetInitialRegisters): the
  // frame is still the one at pc.
  if (!capture.exact && !pcs.empty()) pcs[0] = capture.regs[kPcRegister];

  // The leaf needs only the registers: no frame at all is a setup failure.
  if (pcs.empty()) return absl::InternalError(absl::StrCat("dwfl_getthread_frames: ", error));
  if (rc == DWARF_CB_ABORT && walk.stop != nullptr) {
    last_stop_ = walk.stop;
  } else if (read_failed_) {
    // libdw treats a return address it could not read as undefined, the
    // same as the bottom of the stack (rc 0): only we know the difference.
    last_stop_ = absl::StrCat("memory read outside the captured stack at 0x",
                              absl::Hex(failed_read_addr_));
  } else if (rc != 0) {
    last_stop_ = error;
  }
  return pcs;
}

bool DwflUnwinder::ReadWord(uint64_t addr, uint64_t* out) const {
  const uint64_t rsp = capture_->regs[7];
  const uint64_t size = capture_->stack.size();
  // Written so that no sum can wrap.
  if (addr < rsp || size < sizeof(*out) || addr - rsp > size - sizeof(*out)) return false;
  std::memcpy(out, capture_->stack.data() + (addr - rsp), sizeof(*out));
  return true;
}

pid_t DwflUnwinder::NextThread(Dwfl* dwfl, void* arg, void** thread_arg) {
  // *thread_arg starts null for each enumeration: one thread, then none.
  if (*thread_arg != nullptr) return 0;
  *thread_arg = arg;
  return kTid;
}

bool DwflUnwinder::GetThread(Dwfl* dwfl, pid_t tid, void* arg, void** thread_arg) {
  *thread_arg = arg;
  return tid == kTid;
}

bool DwflUnwinder::MemoryRead(Dwfl* dwfl, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* self = static_cast<DwflUnwinder*>(arg);
  uint64_t word = 0;
  if (!self->capture_ || !self->ReadWord(addr, &word)) {
    self->read_failed_ = true;
    self->failed_read_addr_ = addr;
    return false;
  }
  *result = word;
  return true;
}

bool DwflUnwinder::SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg) {
  auto* self = static_cast<DwflUnwinder*>(thread_arg);
  // libdw's x86-64 frame registers are DWARF 0..16 in order, rip (16) being
  // the return-address column it takes the leaf's pc from.
  Dwarf_Word regs[kRegisterCount];
  std::memcpy(regs, self->capture_->regs, sizeof(regs));
  // libdw looks the leaf up at its pc as it stands (an activation): a
  // syscall's return pc is given as pc - 1 so that it finds the FDE of the
  // code that made the call, as it would for a return address.
  if (!self->capture_->exact && regs[kPcRegister] != 0) --regs[kPcRegister];
  return dwfl_thread_state_registers(thread, 0, kRegisterCount, regs);
}

}  // namespace ehprof
