#include "agent/record/run_control.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/monotonic_clock.h"
#include "base/scoped_handle.h"

namespace ehprof {

std::atomic<int> g_stop_signal{0};

uint64_t CpuTimeNs() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t(ru.ru_utime.tv_sec) + ru.ru_stime.tv_sec) * 1000000000 +
         (uint64_t(ru.ru_utime.tv_usec) + ru.ru_stime.tv_usec) * 1000;
}

namespace {

void OnStopSignal(int sig) { g_stop_signal.store(sig); }

}  // namespace

uint64_t NowNs() { return MonotonicNs(); }

bool ProcessExists(uint32_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The thread group of a thread id, from /proc/TID/status.
std::optional<uint32_t> TgidOf(uint32_t tid) {
  std::ifstream f(absl::StrCat("/proc/", tid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    uint32_t tgid;
    if (line.rfind("Tgid:", 0) == 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(5)), &tgid)) {
      return tgid;
    }
  }
  return std::nullopt;
}

std::vector<uint32_t> AllPids() {
  std::vector<uint32_t> pids;
  ScopedHandle<DIR, closedir> dir(opendir("/proc"));
  if (!dir) return pids;
  while (dirent* d = readdir(dir.get())) {
    uint32_t pid;
    if (absl::SimpleAtoi(d->d_name, &pid)) pids.push_back(pid);
  }
  return pids;
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

void RaiseFileLimit() {
  rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
}

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a blocking poll returns EINTR and the loop sees the flag.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace ehprof
