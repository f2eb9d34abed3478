// The recorder's command: launched stopped before exec, so the profiler is
// attached before its first instruction, and its tables prepared ahead.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include <sys/sysmacros.h>

#include <optional>
#include <set>

#include "agent/process/exec_closure.h"
#include "agent/record/exec_hints.h"
#include "agent/record/recorder.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

absl::Status Recorder::LaunchCommand() {
  // Owned from creation: a failing second pipe2 or fork closes the first.
  auto make_pipe = [](UniqueFd* read_end, UniqueFd* write_end) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end->reset(fds[0]);
    write_end->reset(fds[1]);
    return true;
  };
  UniqueFd go_read, go_write, err_read, err_write;
  if (!make_pipe(&go_read, &go_write) || !make_pipe(&err_read, &err_write)) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> argv;
  for (std::string& a : options_.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    char c;
    // Blocks until the profiler is attached and closes its end (the
    // child's copy of that end is closed on exec, never read here).
    go_write.reset();
    while (::read(go_read.get(), &c, 1) < 0 && errno == EINTR) {
    }
    execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(err_write.get(), &e, sizeof(e));
    _exit(127);
  }
  child_pid_ = pid;
  char comm[17] = {};
  ::prctl(PR_GET_NAME, comm);  // the child's name until it execs
  own_comm_ = comm;
  child_go_fd_ = std::move(go_write);
  child_error_fd_ = std::move(err_read);
  return absl::OkStatus();
}

// Builds the tables of the command's executable and libraries before it
// runs, so its first samples unwind instead of stopping at "table not
// loaded yet". Bounded: a slow build only delays the start a little.
void Recorder::PrefetchCommandTables() {
  const std::string exe = FindExecutable(options_.command[0]);
  if (exe.empty()) return;
  command_exe_ = exe;
  // The command first, then what it exec'd last time (its closure too).
  std::vector<std::string> executables = {exe};
  if (!options_.table_cache_dir.empty()) {
    for (std::string& e : ReadExecHints(options_.table_cache_dir, exe)) executables.push_back(std::move(e));
  }
  // The vDSO first (the builds run in order): every exec maps it before
  // its first instruction, and a clock_gettime-heavy command (fio) spends
  // its first moments there, in the one image that takes no time to build.
  std::optional<FileKey> vdso;
  if (auto key = tracker_->RegisterVdso(); key.ok()) {
    files_->AddRef(*key);
    prefetched_.push_back(*key);
    vdso = *key;
  }
  std::set<std::string> seen;
  // Built in the closure's order (ExecClosure: the most needed libraries
  // first), not as each is queued: a builder would take every file the
  // moment it is queued, and tables from the cache load in an instant, so
  // which file the maps refuse when full would be a race.
  files_->HoldBuilds(true);
  for (const std::string& executable : executables) {
    for (const std::string& path : ExecClosure(executable)) {
      if (!seen.insert(path).second) continue;
      // Through the tracker, which keeps the fd: symbols of a mapping the
      // kernel reports come from this file, whatever the path holds later.
      auto key = tracker_->OpenFileByPath(path);
      if (!key.ok()) continue;
      files_->AddRef(*key);
      prefetched_.push_back(*key);
    }
  }
  files_->HoldBuilds(false);
  // Loaded as one batch, in the order the builds were taken: collected
  // while they ran, a large table finishing after small ones queued behind
  // it would find the maps full (seen in CI: fio's closure in 1 MB, 10 of
  // 2,080 samples unwound).
  const uint64_t give_up = NowNs() + 3000000000ull;
  while (files_->building() > 0 && NowNs() < give_up && !g_stop_signal.load()) usleep(1000);
  files_->CollectFinished();
  // Known to the kernel before any process maps them, so an exec of one
  // is mapped at once. The key from stat(): the maps' major:minor on every
  // file system but btrfs subvolumes (there a process's maps publish it).
  if (!kernel_index_) return;
  for (const FileKey& key : prefetched_) {
    const FileInfo* f = files_->Find(key);
    if (!f) continue;
    const KernelFileKey kkey = vdso && key == *vdso
                                   ? KernelFileKey{EHP_VDSO_KEY_DEV, EHP_VDSO_KEY_INO}
                                   : KernelFileKey{EHP_KDEV(major(key.dev), minor(key.dev)), key.inode};
    kernel_index_->Publish(kkey, key, *f);
  }
}

void Recorder::NoteExec(uint32_t pid) {
  if (command_exe_.empty() || execs_seen_.size() >= kMaxExecHints) return;
  char buf[4096];
  const ssize_t n = ::readlink(absl::StrCat("/proc/", pid, "/exe").c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return;  // gone already: nothing to learn
  std::string path(buf, static_cast<size_t>(n));
  if (path != command_exe_ && path.find(" (deleted)") == std::string::npos) execs_seen_.insert(path);
}

void Recorder::SaveExecHints() {
  if (command_exe_.empty() || options_.table_cache_dir.empty() || execs_seen_.empty()) return;
  // A cache that could not be opened was said already; hints are optional.
  WriteExecHints(options_.table_cache_dir, command_exe_, execs_seen_).IgnoreError();
}

}  // namespace ehprof
