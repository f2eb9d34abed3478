#include "base/sigbus_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

// Everything the handler touches is static and lock-free: it runs on any
// thread, at any point, and may use only async-signal-safe calls (open,
// read, close, mmap) and atomics.
std::atomic<uint64_t> g_faults{0};

// The files to name, each written by the handler that met it first.
constexpr int kSlots = 8;
constexpr size_t kNameMax = 256;
enum SlotState : int { kEmpty, kWriting, kReady, kTaken };
std::atomic<int> g_slot_state[kSlots];
char g_slot_name[kSlots][kNameMax];
std::atomic<uint64_t> g_unnamed{0};  // faults in files past the slots

struct sigaction g_previous;
std::once_flag g_installed;

bool SameName(int slot, const char* name, size_t n) {
  return n < kNameMax && std::strncmp(g_slot_name[slot], name, n) == 0 &&
         g_slot_name[slot][n] == '\0';
}

void RememberFile(const char* name, size_t n) {
  if (n >= kNameMax) n = kNameMax - 1;
  for (int i = 0; i < kSlots; ++i) {
    const int state = g_slot_state[i].load(std::memory_order_acquire);
    if ((state == kReady || state == kTaken) && SameName(i, name, n)) return;
  }
  for (int i = 0; i < kSlots; ++i) {
    int expected = kEmpty;
    if (g_slot_state[i].compare_exchange_strong(expected, kWriting)) {
      std::memcpy(g_slot_name[i], name, n);
      g_slot_name[i][n] = '\0';
      g_slot_state[i].store(kReady, std::memory_order_release);
      return;
    }
  }
  g_unnamed.fetch_add(1);
}

uint64_t ParseHex(const char*& p, const char* end) {
  uint64_t v = 0;
  for (; p < end; ++p) {
    const char c = *p;
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      break;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// One /proc/self/maps line: "start-end perms offset dev inode   path".
// Whether it covers `addr` as a read-only, non-executable mapping of a
// file; its path (may be empty) then goes to *name / *name_len.
bool CoversAsReadOnlyFile(const char* line, const char* end, uintptr_t addr, const char** name,
                          size_t* name_len) {
  const char* p = line;
  const uint64_t start = ParseHex(p, end);
  if (p >= end || *p++ != '-') return false;
  const uint64_t stop = ParseHex(p, end);
  if (addr < start || addr >= stop) return false;
  if (p + 5 > end || p[0] != ' ') return false;
  // Readable, not writable, not executable: no page there can hold a
  // change of ours or code to run.
  if (p[1] != 'r' || p[2] != '-' || p[3] != '-') return false;
  p += 5;
  for (int field = 0; field < 3; ++field) {  // offset, dev, inode
    while (p < end && *p == ' ') ++p;
    const char* f = p;
    while (p < end && *p != ' ') ++p;
    if (field == 2 && (p - f == 1 && *f == '0')) return false;  // anonymous
    if (p == f) return false;
  }
  while (p < end && *p == ' ') ++p;
  *name = p;
  *name_len = static_cast<size_t>(end - p);
  return true;
}

// Finds the mapping holding `addr` in /proc/self/maps and, when it is a
// read-only file mapping, maps a zero page over `addr`'s page.
bool ZeroFill(uintptr_t addr) {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  char line[1024];
  // A line longer than `line` (a long path: the user chose it) keeps its
  // first 1 KiB: the fields that decide come first, the path is cut.
  size_t len = 0;
  bool found = false, ok = false;
  const char* name = nullptr;
  size_t name_len = 0;
  ssize_t n;
  while (!found && (n = ::read(fd, buf, sizeof(buf))) > 0) {
    for (ssize_t i = 0; i < n && !found; ++i) {
      if (buf[i] != '\n') {
        if (len < sizeof(line)) line[len++] = buf[i];
        continue;
      }
      const char* end = line + len;
      if (CoversAsReadOnlyFile(line, end, addr, &name, &name_len)) {
        found = ok = true;
      } else {
        const char* p = line;
        const uint64_t start = ParseHex(p, end);
        ++p;
        const uint64_t stop = ParseHex(p, end);
        found = addr >= start && addr < stop;  // covered, but not ours to fix
      }
      len = 0;
    }
  }
  ::close(fd);
  if (!ok) return false;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  void* at = reinterpret_cast<void*>(addr / page * page);
  void* p = ::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return false;
  g_faults.fetch_add(1);
  // The name was copied from `line`, on this stack; " (deleted)" and the
  // like stay in it.
  RememberFile(name, name_len);
  return true;
}

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (info != nullptr && info->si_code == BUS_ADRERR &&
      ZeroFill(reinterpret_cast<uintptr_t>(info->si_addr))) {
    errno = saved_errno;
    return;  // the read is retried, now from the zero page
  }
  errno = saved_errno;
  // Not a truncated file's page: what would have happened without us.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default: returning re-runs the faulting access, which now kills.
  signal(SIGBUS, SIG_DFL);
}

}  // namespace

void InstallSigbusGuard() {
  std::call_once(g_installed, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnSigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

uint64_t SigbusGuardFaults() { return g_faults.load(); }

std::vector<std::string> TakeSigbusGuardWarnings() {
  std::vector<std::string> out;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kReady;
    if (!g_slot_state[i].compare_exchange_strong(expected, kTaken)) continue;
    const char* name = g_slot_name[i][0] != '\0' ? g_slot_name[i] : "a mapped file";
    out.push_back(absl::StrCat(name,
                               ": shrank while ehprof read it through a mapping; the pages past "
                               "its new end read as zeros (",
                               g_faults.load(), " such faults so far)"));
  }
  return out;
}

}  // namespace ehprof
