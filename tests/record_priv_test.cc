// End-to-end `ehprof record` on the testdata programs: runs the real binary
// (BPF, perf events), parses its perf-script output and checks the user call
// chains leaf first against testdata/README.md. Needs root; see
// RecordPriv::SetUp for how it skips (or fails under CI=true) without it.
//
// Every check is a share of the samples that matter (e.g. ">= 90% of the
// samples whose leaf is plt_compare have exactly the expected chain") plus a
// minimum sample count: robust to timing and to the few samples ehprof takes
// before it knows a new process or mapping, but strict about each frame.
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "elf/elf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof {
namespace {

using ::ehprof::testing::EhprofBinary;
using ::ehprof::testing::FindSymbol;
using ::ehprof::testing::TestdataPath;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Running ehprof.

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed
  bool timed_out = false;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The inherited environment minus the variables the test programs read (so
// the caller's shell cannot change what a test records), plus `extra`.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("EHPROF_DLWORK_PATH=", 0) == 0 || kv.rfind("EHPROF_EXEC_TARGET=", 0) == 0) continue;
    env.push_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// A started ehprof; Wait() enforces the deadline so a hung ehprof fails the
// test instead of hanging it (SIGTERM first: ehprof then still writes what it
// has, which helps to see why it hung; SIGKILL 5 s later).
class EhprofProcess {
 public:
  EhprofProcess(const std::vector<std::string>& args, const std::vector<std::string>& env,
                const std::string& log_base, double timeout_s)
      : out_path_(log_base + ".stdout"),
        err_path_(log_base + ".stderr"),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000))) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const std::string binary = EhprofBinary();
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
  }
  EhprofProcess(const EhprofProcess&) = delete;
  EhprofProcess& operator=(const EhprofProcess&) = delete;
  ~EhprofProcess() {
    if (pid_ > 0) Wait();
  }

  bool started() const { return pid_ > 0; }

  RunResult Wait() {
    RunResult r;
    if (pid_ <= 0) {
      r.err = "cannot start " + EhprofBinary();
      return r;
    }
    int status = 0;
    bool termed = false;
    auto kill_at = deadline_ + std::chrono::seconds(5);
    for (;;) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (w < 0 && errno != EINTR) break;
      const auto now = std::chrono::steady_clock::now();
      if (!termed && now >= deadline_) {
        kill(pid_, SIGTERM);
        termed = true;
        r.timed_out = true;
      } else if (termed && now >= kill_at) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFile(out_path_);
    r.err = ReadFile(err_path_);
    return r;
  }

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  std::chrono::steady_clock::time_point deadline_;
};

// Each program runs about 1 s; 30 s means ehprof hangs.
constexpr double kTimeoutS = 30;

RunResult RunEhprof(const std::vector<std::string>& args, const std::string& log_base,
                    const std::vector<std::string>& extra_env = {}) {
  EhprofProcess p(args, ChildEnvironment(extra_env), log_base, kTimeoutS);
  return p.Wait();
}

bool CiRequiresPrivilege() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// Empty when privileged recording works here, else why not. Probed once per
// process with a short system-wide recording: root alone is not enough (a
// container may deny bpf() or perf_event_open()).
std::string PrivilegeProblem() {
  static const std::string problem = []() -> std::string {
    if (geteuid() != 0) return "not root (ehprof record needs root, or CAP_BPF + CAP_PERFMON)";
    char dir_template[] = "/tmp/ehprof_priv_probe.XXXXXX";
    if (!mkdtemp(dir_template)) return std::string("mkdtemp: ") + std::strerror(errno);
    const std::string dir = dir_template;
    // Not -o /dev/null: ehprof writes FILE.tmp.PID and renames it over FILE.
    RunResult r = RunEhprof({"record", "-d", "0.2", "-a", "-q", "-o", dir + "/probe.txt"}, dir + "/probe");
    std::filesystem::remove_all(dir);
    if (r.exit_code == 0) return "";
    // The last matching line is ehprof's own message (libbpf's come first).
    std::string reason;
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);) {
      for (const char* denied :
           {"Operation not permitted", "Permission denied", "needs root", "missing CAP_", "Function not implemented"}) {
        if (line.find(denied) != std::string::npos) reason = line;
      }
    }
    if (!reason.empty()) return "BPF unavailable: " + reason;
    // Anything else is ehprof failing where it should work: not a reason to skip.
    return "";
  }();
  return problem;
}

// ---------------------------------------------------------------------------
// perf-script output.

struct Frame {
  uint64_t addr = 0;
  std::string symbol;
  std::string dso;
};

struct Sample {
  std::string comm;
  int tid = 0;
  std::vector<Frame> kernel;  // leaf first
  std::vector<Frame> user;    // leaf first
};

bool IsKernelAddress(uint64_t addr) { return addr >= 0xffff800000000000ull; }

// Parses ehprof's perf-script output. Returns false with `error` on anything
// that does not follow the format (header `COMM TID [CPU] TIME: PERIOD EVENT:`, then `\t<hex> SYM (DSO)`
// lines, kernel frames before user frames, a blank line after each sample).
bool ParsePerfScript(const std::string& text, std::vector<Sample>* samples, std::string* error) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  Sample* cur = nullptr;
  auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(line_no) + ": " + why + ": '" + line + "'";
    return false;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) {
      if (!cur) return fail("blank line outside a sample");
      cur = nullptr;
      continue;
    }
    if (line[0] != '\t') {
      if (cur) return fail("header inside a sample");
      std::string h = line;
      // perf's default header: "COMM TID [CPU] SECS.MICROS: PERIOD EVENT: ";
      // the comm and tid come before " [".
      if (const size_t cpu = h.find(" ["); cpu != std::string::npos && h.back() == ' ' &&
          h.find(": ", cpu) != std::string::npos) {
        h = h.substr(0, cpu);
      }
      while (!h.empty() && h.back() == ' ') h.pop_back();
      const size_t sp = h.rfind(' ');
      if (sp == std::string::npos) return fail("header without tid");
      Sample s;
      try {
        s.tid = std::stoi(h.substr(sp + 1));
      } catch (...) {
        return fail("bad tid");
      }
      std::string comm = h.substr(0, sp);
      while (!comm.empty() && comm.back() == ' ') comm.pop_back();
      s.comm = comm;
      samples->push_back(std::move(s));
      cur = &samples->back();
      continue;
    }
    if (!cur) return fail("frame outside a sample");
    size_t p = line.find_first_not_of(" \t");
    if (p == std::string::npos) return fail("empty frame");
    const size_t sp = line.find(' ', p);
    if (sp == std::string::npos) return fail("frame without symbol");
    Frame f;
    try {
      size_t used = 0;
      f.addr = std::stoull(line.substr(p, sp - p), &used, 16);
      if (used != sp - p) return fail("bad address");
    } catch (...) {
      return fail("bad address");
    }
    // The dso is the parenthesized group at the end; it may itself contain
    // parentheses (e.g. "path (deleted)"), the symbol may too.
    if (line.back() != ')') return fail("frame without (dso)");
    int depth = 0;
    size_t open = std::string::npos;
    for (size_t i = line.size(); i-- > sp;) {
      if (line[i] == ')') ++depth;
      if (line[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    if (open == std::string::npos || open < sp + 2 || line[open - 1] != ' ') return fail("unbalanced (dso)");
    f.symbol = line.substr(sp + 1, open - 1 - (sp + 1));
    f.dso = line.substr(open + 1, line.size() - open - 2);
    if (f.symbol.empty() || f.dso.empty()) return fail("empty symbol or dso");
    // An inline expansion of the frame on the next line (perf's and
    // stackcheck's convention): the chains compare real frames.
    if (f.dso == "inlined") continue;
    if (IsKernelAddress(f.addr)) {
      if (!cur->user.empty()) return fail("kernel frame after user frames");
      cur->kernel.push_back(std::move(f));
    } else {
      cur->user.push_back(std::move(f));
    }
  }
  if (cur) {
    *error = "last sample not terminated by a blank line";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Naming frames. Unstripped files: the symbol ehprof printed (its
// symbolizer's answer from .symtab/.dynsym). Stripped programs: by address,
// with the function ranges of the unstripped twin (same layout).

std::string Basename(const std::string& path) {
  const size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string WithoutDeleted(const std::string& dso) {
  static const std::string kDeleted = " (deleted)";
  if (dso.size() > kDeleted.size() &&
      dso.compare(dso.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    return dso.substr(0, dso.size() - kDeleted.size());
  }
  return dso;
}

class Namer {
 public:
  // Frames whose dso is `dso` are named by address, with the ranges of
  // `functions` in `twin`'s symbol table.
  void AddTwin(const std::string& dso, const std::string& twin, const std::vector<std::string>& functions) {
    auto& ranges = twins_[dso];
    for (const std::string& fn : functions) {
      auto r = FindSymbol(twin, fn);
      if (!r || r->size == 0) {
        ADD_FAILURE() << "no sized symbol " << fn << " in " << twin;
        continue;
      }
      ranges.push_back({fn, *r});
    }
  }

  std::string Name(const Frame& f) const {
    auto it = twins_.find(WithoutDeleted(f.dso));
    // A symbol version ("__libc_start_main@@GLIBC_2.34", from a .symtab with
    // versioned aliases) is not part of the function's name.
    if (it == twins_.end()) return f.symbol.substr(0, f.symbol.find('@'));
    for (const auto& [name, r] : it->second) {
      if (f.addr >= r.addr && f.addr < r.addr + r.size) return name;
    }
    return "[unknown]";
  }

 private:
  std::map<std::string, std::vector<std::pair<std::string, ::ehprof::testing::SymbolRange>>> twins_;
};

// ---------------------------------------------------------------------------
// Chain patterns, leaf first.

struct Want {
  std::vector<std::string> names;  // any of these; empty: any name
  // Any of these; empty: any dso. "/abs/path": that file (also "... (deleted)");
  // "[vdso]": exactly; otherwise a basename such as "libc.so.6".
  std::vector<std::string> dsos;
  int min = 1, max = 1;                     // how many consecutive frames
  std::function<bool(const Frame&)> check;  // extra condition, if set
};
using Pattern = std::vector<Want>;

// `min`..`max` consecutive frames, each named one of `names` in one of `dsos`.
Want Frames(std::vector<std::string> names, std::vector<std::string> dsos, int min, int max) {
  return Want{std::move(names), std::move(dsos), min, max, nullptr};
}
Want Fn(const std::string& name, const std::string& dso) { return Frames({name}, {dso}, 1, 1); }
Want Lib(const std::string& dso, std::vector<std::string> names = {}, int min = 1, int max = 1) {
  return Frames(std::move(names), {dso}, min, max);
}

bool DsoMatches(const std::string& want, const std::string& dso) {
  if (want.empty()) return true;
  if (want[0] == '/') return WithoutDeleted(dso) == want;
  if (want[0] == '[') return dso == want;
  return Basename(dso) == want;
}

bool FrameMatches(const Want& w, const Frame& f, const Namer& namer) {
  if (!w.names.empty() && std::find(w.names.begin(), w.names.end(), namer.Name(f)) == w.names.end()) {
    return false;
  }
  if (!w.dsos.empty() && std::none_of(w.dsos.begin(), w.dsos.end(),
                                      [&](const std::string& d) { return DsoMatches(d, f.dso); })) {
    return false;
  }
  return !w.check || w.check(f);
}

// With `truncated_ok`, the chain may also end early (a walk that stopped
// with a reason), anywhere inside the pattern.
bool MatchFrom(const std::vector<Frame>& chain, size_t i, const Pattern& p, size_t j, const Namer& namer,
               bool truncated_ok) {
  if (truncated_ok && i == chain.size()) return true;
  if (j == p.size()) return i == chain.size();
  const Want& w = p[j];
  // k frames taken by p[j]: try each count in [min, max].
  for (int k = 0; k <= w.max; ++k) {
    if (k >= w.min && MatchFrom(chain, i + k, p, j + 1, namer, truncated_ok)) return true;
    if (i + k >= chain.size()) return truncated_ok;
    if (!FrameMatches(w, chain[i + k], namer)) return false;
  }
  return false;
}

bool Matches(const std::vector<Frame>& chain, const Pattern& p, const Namer& namer) {
  return MatchFrom(chain, 0, p, 0, namer, false);
}

// The chain is a leaf-side part of `p`: the walk stopped early but every
// frame it has is right. Its last frame may be an address ehprof could not
// map yet (dso [unknown]): the pc where the walk stopped.
bool MatchesTruncated(std::vector<Frame> chain, const Pattern& p, const Namer& namer) {
  if (chain.size() > 1 && chain.back().dso == "[unknown]") chain.pop_back();
  return MatchFrom(chain, 0, p, 0, namer, true);
}

// "a <- recurse x601 <- libc.so.6:[unknown]@0x27249 <- ..." for failure messages.
std::string Render(const std::vector<Frame>& chain, const Namer& namer) {
  std::vector<std::string> names;
  for (const Frame& f : chain) {
    std::string n = namer.Name(f);
    if (n == "[unknown]") {
      char buf[32];
      std::snprintf(buf, sizeof buf, "@0x%llx", static_cast<unsigned long long>(f.addr));
      n += buf;
    }
    names.push_back(Basename(f.dso) + ":" + n);
  }
  std::string out;
  for (size_t i = 0; i < names.size();) {
    size_t j = i;
    while (j < names.size() && names[j] == names[i]) ++j;
    if (!out.empty()) out += " <- ";
    out += names[i];
    if (j - i > 1) out += " x" + std::to_string(j - i);
    i = j;
  }
  return out.empty() ? "(no user frames)" : out;
}

// How many of the selected samples match one of the patterns.
struct ChainCheck {
  std::string what;
  int considered = 0;
  int matched = 0;
  int truncated = 0;                  // not matched, but a leaf-side part of a pattern
  std::map<std::string, int> misses;  // rendered chain -> samples

  double share() const { return considered ? static_cast<double>(matched) / considered : 0; }
  // Share of samples without a wrong frame (complete or stopped early).
  double correct_share() const {
    return considered ? static_cast<double>(matched + truncated) / considered : 0;
  }
  std::string Describe() const {
    std::ostringstream s;
    s << what << ": " << matched << " of " << considered << " samples match (" << truncated
      << " more stopped early but right so far)";
    std::vector<std::pair<int, std::string>> top;
    for (const auto& [chain, n] : misses) top.push_back({n, chain});
    std::sort(top.rbegin(), top.rend());
    for (size_t i = 0; i < top.size() && i < 6; ++i) {
      s << "\n  " << top[i].first << "x mismatch: " << top[i].second;
    }
    return s.str();
  }
};

// Samples of `comm` (with at least one user frame) whose leaf is named
// `leaf` (any leaf when empty).
ChainCheck CheckChains(const std::string& what, const std::vector<Sample>& samples, const Namer& namer,
                       const std::string& comm, const std::string& leaf,
                       const std::vector<Pattern>& patterns) {
  ChainCheck c;
  c.what = what;
  for (const Sample& s : samples) {
    if (s.comm != comm || s.user.empty()) continue;
    if (!leaf.empty() && namer.Name(s.user.front()) != leaf) continue;
    ++c.considered;
    const bool ok = std::any_of(patterns.begin(), patterns.end(),
                                [&](const Pattern& p) { return Matches(s.user, p, namer); });
    if (ok) {
      ++c.matched;
    } else {
      if (std::any_of(patterns.begin(), patterns.end(),
                      [&](const Pattern& p) { return MatchesTruncated(s.user, p, namer); })) {
        ++c.truncated;
      }
      ++c.misses[Render(s.user, namer)];
    }
  }
  return c;
}

// Sample floors. A program's 1 s at -F 999 gives ~1000 samples on an idle
// machine but only ~200 when ctest runs tests in parallel on a small one
// (cpu-clock counts only the CPU time the program gets); the floors guard
// against passing on nothing, the shares are what must be right.
constexpr int kMinSamples = 50;      // a chain most samples are in
constexpr int kMinMinorSamples = 5;  // e.g. the ~20% (~5% when starved) inside the signal handler

// Both a floor on the evidence and on the share: a test cannot pass on
// nothing, and a handful of early samples (taken before ehprof knew the
// process or a new mapping) cannot fail it.
void ExpectChains(const ChainCheck& c, int min_samples, double min_share, const std::string& ehprof_stderr) {
  std::printf("%s: %d of %d (%.1f%%; need >= %d samples, >= %.0f%%)\n", c.what.c_str(), c.matched,
              c.considered, 100 * c.share(), min_samples, 100 * min_share);
  EXPECT_GE(c.considered, min_samples) << c.Describe() << "\nehprof stderr:\n" << ehprof_stderr;
  EXPECT_GE(c.share(), min_share) << c.Describe() << "\nehprof stderr:\n" << ehprof_stderr;
}

// Reads `n` bytes at ELF virtual address `vaddr` of `path`, through the
// program headers (works for stripped files).
std::optional<std::vector<uint8_t>> ReadElfBytes(const std::string& path, uint64_t vaddr, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  elf_version(EV_CURRENT);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<std::vector<uint8_t>> out;
  size_t phnum = 0;
  if (e && elf_getphdrnum(e, &phnum) == 0) {
    for (size_t i = 0; i < phnum && !out; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(e, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (vaddr < ph.p_vaddr || vaddr + n > ph.p_vaddr + ph.p_filesz) continue;
      std::vector<uint8_t> buf(n);
      if (pread(fd, buf.data(), n, static_cast<off_t>(ph.p_offset + (vaddr - ph.p_vaddr))) ==
          static_cast<ssize_t>(n)) {
        out = std::move(buf);
      }
    }
  }
  if (e) elf_end(e);
  ::close(fd);
  return out;
}

bool BytesAt(const Frame& f, uint64_t vaddr, const std::vector<uint8_t>& want) {
  auto got = ReadElfBytes(f.dso, vaddr, want.size());
  return got && *got == want;
}

// glibc's __restore_rt is `mov $15,%rax; syscall` (rt_sigreturn). The frame
// shows the return address (its first byte) minus 1, like any caller frame;
// glibc puts a nop before it so that address is still inside its FDE.
bool IsRestoreRt(const Frame& f) {
  const std::vector<uint8_t> kRtSigreturn = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  return BytesAt(f, f.addr + 1, kRtSigreturn) || BytesAt(f, f.addr, kRtSigreturn);
}

// glibc's clone3 child path: `call *%rdx` (the thread start routine), then
// `mov %rax,%rdi` before the exit syscall. The frame shows return address - 1,
// i.e. the last byte of the call.
bool IsClone3ChildCall(const Frame& f) {
  return f.addr > 0 && BytesAt(f, f.addr - 1, {0xff, 0xd2, 0x48, 0x89, 0xc7});
}

// libc frames are named whether or not libc's symbols are available:
// [unknown] without them (Debian's libc.so.6 has only .dynsym), its .symtab
// names with libc6-dbg. Where a name is uncertain, the instruction bytes at
// the frame identify it instead (IsRestoreRt, IsClone3ChildCall).
const std::vector<std::string> kLibcStartMain = {"__libc_start_main", "__libc_start_main_impl"};
const std::vector<std::string> kLibcStartCallMain = {"[unknown]", "__libc_start_call_main"};

// main <- __libc_start_call_main (libc) <- __libc_start_main (libc) <- _start.
Pattern Bottom(const std::string& prog) {
  return {Fn("main", prog), Lib("libc.so.6", kLibcStartCallMain), Lib("libc.so.6", kLibcStartMain),
          Fn("_start", prog)};
}

Pattern Concat(Pattern a, const Pattern& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The kernel truncates comm to 15 bytes.
std::string Comm(const std::string& program) { return Basename(program).substr(0, 15); }

// The twin of "x.stripped" is "x"; an unstripped program needs no twin.
void AddTwinIfStripped(Namer* namer, const std::string& path, const std::vector<std::string>& functions) {
  static const std::string kStripped = ".stripped";
  if (path.size() > kStripped.size() &&
      path.compare(path.size() - kStripped.size(), kStripped.size(), kStripped) == 0) {
    namer->AddTwin(path, path.substr(0, path.size() - kStripped.size()), functions);
  }
}

// Samples from the first milliseconds of a launched program, which ehprof
// cannot walk by design: it learns about the process (and later about libc's
// mapping) asynchronously after exec, so such samples carry a single unwalked
// frame ("process not yet known" in its summary) or an address outside every
// mapping it knew ("pc outside known mappings"); and before _start runs only
// the dynamic loader is on the stack. Under CPU contention this window grows
// from ~0.5% to a few percent of a 1 s run.
bool InStartupWindow(const Sample& s) {
  if (s.user.size() == 1) return true;
  if (std::all_of(s.user.begin(), s.user.end(),
                  [](const Frame& f) { return Basename(f.dso).rfind("ld-linux", 0) == 0; })) {
    return true;
  }
  return std::any_of(s.user.begin(), s.user.end(), [](const Frame& f) { return f.dso == "[unknown]"; });
}

// ---------------------------------------------------------------------------
// Fixture: privilege check, a scratch directory, recording helpers.

class RecordPriv : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = PrivilegeProblem();
    if (!why.empty()) {
      if (CiRequiresPrivilege()) FAIL() << "CI=true and privileged tests cannot run: " << why;
      std::printf("SKIPPED: %s\n", why.c_str());
      GTEST_SKIP() << why;
    }
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base += '/';
    std::string tmpl = base + "ehprof_record_priv.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }

  void TearDown() override {
    if (dir_.empty()) return;
    // Kept when the test failed: the outputs show what ehprof recorded.
    if (HasFailure()) {
      std::printf("outputs kept in %s\n", dir_.c_str());
    } else {
      std::filesystem::remove_all(dir_);
    }
  }

  struct Recording {
    RunResult run;
    std::vector<Sample> samples;
  };

  // `ehprof record -F 999 -q --format perf-script -o OUT <options> -- <command>`.
  Recording Record(const std::string& tag, const std::vector<std::string>& options,
                   const std::vector<std::string>& command, const std::vector<std::string>& env = {}) {
    const std::string out = dir_ + "/" + tag + ".txt";
    std::vector<std::string> args = {"record", "-F", "999", "-q", "--format", "perf-script", "-o", out};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    Recording r;
    r.run = RunEhprof(args, dir_ + "/" + tag, env);
    ExpectCleanRun(r.run, tag);
    std::string error;
    EXPECT_TRUE(ParsePerfScript(ReadFile(out), &r.samples, &error)) << tag << ": " << error;
    return r;
  }

  static void ExpectCleanRun(const RunResult& r, const std::string& tag) {
    EXPECT_FALSE(r.timed_out) << tag << ": ehprof did not finish within " << kTimeoutS << " s\n" << r.err;
    EXPECT_EQ(r.exit_code, 0) << tag << ": " << r.err;
  }

  std::string dir_;
};

class RecordUnwind : public RecordPriv {};
class RecordUnwinderModes : public RecordPriv {};
class RecordBadInput : public RecordPriv {};

// plt_compare is called back from libc's merge sort (msort_with_tmp,
// recursive; no symbols in a stripped libc) under __qsort_r (.dynsym name
// qsort_r), which returns straight into plt_inner (qsort tail-calls it).
std::vector<Pattern> PltPatterns(const std::string& prog) {
  const Pattern outer = Concat({Fn("plt_inner", prog), Fn("plt_outer", prog)}, Bottom(prog));
  return {
      Concat(
          {Fn("plt_compare", prog), Lib("libc.so.6", {}, 1, 12), Lib("libc.so.6", {"qsort_r", "__qsort_r"})},
          outer),
  };
}

// Any sample under plt_inner: its own frames, or libc (qsort internals,
// memmove, memset/strlen variants) above it, or the callback above libc.
std::vector<Pattern> UnderPltInnerPatterns(const std::string& prog) {
  const Pattern outer = Concat({Fn("plt_inner", prog), Fn("plt_outer", prog)}, Bottom(prog));
  std::vector<Pattern> p = PltPatterns(prog);
  p.push_back(Concat({Lib("libc.so.6", {}, 0, 12)}, outer));
  return p;
}

const std::vector<std::string> kPltFunctions = {"plt_compare", "plt_inner", "plt_outer", "main", "_start"};

// Samples of `comm` whose chain has a frame named `fn`.
std::vector<Sample> WithFrame(const std::vector<Sample>& samples, const Namer& namer, const std::string& comm,
                              const std::string& fn) {
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    if (s.comm != comm) continue;
    if (std::any_of(s.user.begin(), s.user.end(), [&](const Frame& f) { return namer.Name(f) == fn; })) {
      out.push_back(s);
    }
  }
  return out;
}

// The checks for a plt_calls recording (shared by the dwarf, both, exec and
// deleted-file cases).
void CheckPltCalls(const std::vector<Sample>& samples, const Namer& namer, const std::string& prog,
                   const std::string& comm, int min_leaf_samples, const std::string& err) {
  ExpectChains(
      CheckChains(prog + ": leaf plt_compare", samples, namer, comm, "plt_compare", PltPatterns(prog)),
      min_leaf_samples, 0.90, err);
  const std::vector<Sample> under = WithFrame(samples, namer, comm, "plt_inner");
  ExpectChains(CheckChains(prog + ": under plt_inner", under, namer, comm, "", UnderPltInnerPatterns(prog)),
               min_leaf_samples, 0.95, err);
}

// ---------------------------------------------------------------------------
// 1. PLT calls into libc and a callback from libc back into the program.

TEST_F(RecordUnwind, PltCallsUnwindThroughLibcQsortDownToStart) {
  for (const std::string name : {"plt_calls", "plt_calls.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, kPltFunctions);
    Recording r = Record(name, {}, {prog, "1"});
    CheckPltCalls(r.samples, namer, prog, Comm(name), kMinSamples, r.run.err);

    // Every walk ends at the bottom of the stack, whatever the leaf. The
    // startup window is left out, but it must stay small.
    std::vector<Sample> walked;
    int all = 0;
    for (const Sample& s : r.samples) {
      if (s.comm != Comm(name) || s.user.empty()) continue;
      ++all;
      if (!InStartupWindow(s)) walked.push_back(s);
    }
    const int window = all - static_cast<int>(walked.size());
    std::printf("%s: %d of %d samples in the startup window\n", name.c_str(), window, all);
    EXPECT_LE(window, 0.05 * all) << r.run.err;
    ExpectChains(CheckChains(name + ": outermost frame", walked, namer, Comm(name), "",
                             {{Lib("", {}, 0, 1000), Fn("_start", prog)}}),
                 kMinSamples, 0.99, r.run.err);
  }
}

// ---------------------------------------------------------------------------
// 2. A signal handler: the walk continues through the kernel's signal frame.

TEST_F(RecordUnwind, SignalHandlerChainsContinuePastRestoreRt) {
  for (const std::string name : {"sig_handler", "sig_handler.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog,
                      {"sig_handler_work", "sig_handler_outer", "sig_prof_handler", "sig_main_work",
                       "sig_main_loop", "main", "_start"});
    Recording r = Record(name, {}, {prog, "1"});

    const Pattern loop = Concat({Fn("sig_main_loop", prog)}, Bottom(prog));
    ExpectChains(CheckChains(name + ": leaf sig_main_work", r.samples, namer, Comm(name), "sig_main_work",
                             {Concat({Fn("sig_main_work", prog)}, loop)}),
                 kMinSamples, 0.90, r.run.err);

    Want restore_rt = Lib("libc.so.6");
    restore_rt.check = IsRestoreRt;
    const Pattern handler = {Fn("sig_handler_work", prog), Fn("sig_handler_outer", prog),
                             Fn("sig_prof_handler", prog), restore_rt};
    // The interrupted frame is an exact pc: usually in sig_main_work, else in
    // sig_main_loop itself or in clock_gettime (libc, vDSO) called from it.
    ExpectChains(
        CheckChains(name + ": leaf sig_handler_work", r.samples, namer, Comm(name), "sig_handler_work",
                    {Concat(Concat(handler, {Fn("sig_main_work", prog)}), loop), Concat(handler, loop),
                     Concat(Concat(handler, {Frames({}, {"libc.so.6", "[vdso]"}, 1, 3)}), loop)}),
        kMinMinorSamples, 0.90, r.run.err);
  }
}

// ---------------------------------------------------------------------------
// 3. Hand-written assembly with explicit CFI (push/sub, .cfi_offset, epilogue).

TEST_F(RecordUnwind, HandWrittenAsmCfiUnwindsToMain) {
  for (const std::string name : {"asm_cfi", "asm_cfi.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, {"asm_callback", "asm_spin", "asm_caller", "main", "_start"});
    Recording r = Record(name, {}, {prog, "1"});
    const Pattern spin = Concat({Fn("asm_spin", prog), Fn("asm_caller", prog)}, Bottom(prog));
    ExpectChains(CheckChains(name + ": leaf asm_callback", r.samples, namer, Comm(name), "asm_callback",
                             {Concat({Fn("asm_callback", prog)}, spin)}),
                 kMinSamples, 0.90, r.run.err);
    // Samples inside asm_spin's own loop use its body CFI (CFA rsp+48).
    ExpectChains(CheckChains(name + ": leaf asm_spin", r.samples, namer, Comm(name), "asm_spin", {spin}),
                 kMinMinorSamples, 0.90, r.run.err);
  }
}

// A frameless syscall wrapper without CFI, the leaf while its syscall runs
// (glibc's clone3 in the parent): no row, no frame pointer; the return
// address is still at rsp.
// The two syscall wrappers of testdata/syscall_nocfi: `raw_getrandom`
// has no CFI (as glibc's clone3 in the parent); `rareg_getrandom`'s CFI
// keeps the return address in a register around the syscall
// (DW_CFA_register, as glibc's __vfork pops it into rdi), which the walk
// reads from the leaf's registers.
template <typename RecordFn>  // (tag, command) -> the fixture's Recording
void ExpectSyscallWrapperUnwinds(const std::string& leaf, const std::string& mode, RecordFn record) {
  for (const std::string name : {"syscall_nocfi", "syscall_nocfi.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, {leaf, "nocfi_spin", "main", "_start"});
    std::vector<std::string> argv = {prog, "1"};
    if (!mode.empty()) argv.push_back(mode);
    const auto r = record(name, argv);
    ExpectChains(CheckChains(name + ": leaf " + leaf, r.samples, namer, Comm(name), leaf,
                             {Concat({Fn(leaf, prog), Fn("nocfi_spin", prog)}, Bottom(prog))}),
                 kMinSamples, 0.90, r.run.err);
  }
}

TEST_F(RecordUnwind, FramelessSyscallWrapperWithoutCfiUnwindsToMain) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 assembly (testdata/syscall_nocfi_impl.S)";
#endif
  ExpectSyscallWrapperUnwinds("raw_getrandom", "",
                              [&](const std::string& tag, const std::vector<std::string>& argv) {
                                return Record(tag, {}, argv);
                              });
}

TEST_F(RecordUnwind, ReturnAddressInARegisterUnwindsToMain) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 assembly (testdata/syscall_nocfi_impl.S)";
#endif
  ExpectSyscallWrapperUnwinds("rareg_getrandom", "rareg",
                              [&](const std::string& tag, const std::vector<std::string>& argv) {
                                return Record(tag, {}, argv);
                              });
}

// ---------------------------------------------------------------------------
// 4. Stack realignment through DRAP: CFA = *(rbp - 8), a CFA expression.

TEST_F(RecordUnwind, RealignedFrameWithCfaExpressionUnwindsToMain) {
  for (const std::string name : {"realign", "realign.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, {"realign_leaf", "realign_frame", "main", "_start"});
    Recording r = Record(name, {}, {prog, "1"});
    ExpectChains(CheckChains(name + ": leaf realign_leaf", r.samples, namer, Comm(name), "realign_leaf",
                             {Concat({Fn("realign_leaf", prog), Fn("realign_frame", prog)}, Bottom(prog))}),
                 kMinSamples, 0.90, r.run.err);
  }
}

// A CFA based on rbx (ld.so's _dl_runtime_resolve while _dl_fixup runs)
// whose rbx a callee saved and changed: the walk takes it from the
// callee's save slot (EHP_RULE_FLAG_RBX_SAVED).
TEST_F(RecordUnwind, CfaBasedOnASavedRbxUnwindsToMain) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 assembly (testdata/rbx_cfa_impl.S)";
#endif
  for (const std::string name : {"rbx_cfa", "rbx_cfa.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, {"rbx_leaf", "rbx_saver", "rbx_frame", "rbx_loop", "main", "_start"});
    Recording r = Record(name, {}, {prog, "1"});
    ExpectChains(CheckChains(name + ": leaf rbx_leaf", r.samples, namer, Comm(name), "rbx_leaf",
                             {Concat({Fn("rbx_leaf", prog), Fn("rbx_saver", prog), Fn("rbx_frame", prog),
                                      Fn("rbx_loop", prog)},
                                     Bottom(prog))}),
                 kMinSamples, 0.90, r.run.err);
  }
}

// A function called from .init, which has no CFI (libcrypto's .init calls
// OPENSSL_cpuid_setup so): rows made from crti/crtn's code
// (unwind_tables/init_fini_rows.cc) unwind through _init to the bottom.
TEST_F(RecordUnwind, CallFromInitSectionUnwindsToTheBottom) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows (unwind_tables/init_fini_rows.cc)";
#endif
  for (const std::string name : {"init_call", "init_call.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(&namer, prog, {"init_spin", "_start"});
    // crti's _init has no size: the frame is judged by the section.
    auto elf = ElfFile::Open(prog);
    ASSERT_TRUE(elf.ok()) << elf.status();
    auto init = elf->Section(".init");
    ASSERT_TRUE(init.ok() && init->has_value());
    Want in_init = Frames({}, {prog}, 1, 1);
    in_init.check = [at = (*init)->addr, size = (*init)->size](const Frame& f) {
      return f.addr >= at && f.addr < at + size;
    };
    Recording r = Record(name, {}, {prog});
    ExpectChains(CheckChains(name + ": leaf init_spin", r.samples, namer, Comm(name), "init_spin",
                             {{Fn("init_spin", prog), in_init, Lib("libc.so.6", kLibcStartMain), Fn("_start", prog)}}),
                 kMinSamples, 0.90, r.run.err);
  }
}

// ---------------------------------------------------------------------------
// 5. Deep recursion: 601 recurse frames, 606 user frames in all.

TEST_F(RecordUnwind, DeepRecursionKeepsAllSixHundredFrames) {
  const std::string prog = TestdataPath("deep_recursion");
  Namer namer;
  Recording r = Record("deep_recursion", {}, {prog, "1", "600"});
  const Pattern full =
      Concat({Fn("recurse_leaf", prog), Frames({"recurse"}, {prog}, 601, 601)}, Bottom(prog));
  ExpectChains(CheckChains("leaf recurse_leaf", r.samples, namer, "deep_recursion", "recurse_leaf", {full}),
               kMinSamples, 0.90, r.run.err);

  // Beyond any small fixed limit (512 is where a naive bound would stop).
  bool deep_and_right = false;
  size_t deepest = 0;
  for (const Sample& s : r.samples) {
    deepest = std::max(deepest, s.user.size());
    if (s.user.size() >= 512 && Matches(s.user, full, namer)) deep_and_right = true;
  }
  std::printf("deepest user chain: %zu frames\n", deepest);
  EXPECT_TRUE(deep_and_right) << "deepest user chain: " << deepest << " frames\n" << r.run.err;
}

// ---------------------------------------------------------------------------
// 6. Threads: each ends at libc's start_thread <- clone3 (ra = undefined).

TEST_F(RecordUnwind, ThreadChainsEndAtClone3) {
  for (const std::string name : {"threads", "threads.stripped"}) {
    SCOPED_TRACE(name);
    const std::string prog = TestdataPath(name);
    Namer namer;
    AddTwinIfStripped(
        &namer, prog,
        {"thread_a_work", "thread_a_outer", "thread_b_work", "thread_b_outer", "main", "_start"});
    Recording r = Record(name, {}, {prog, "1"});
    Want clone3 = Lib("libc.so.6");  // clone3, __clone3 or __GI___clone3 with symbols
    clone3.check = IsClone3ChildCall;
    for (const std::string t : {"a", "b"}) {
      const std::string work = "thread_" + t + "_work";
      ExpectChains(CheckChains(name + ": leaf " + work, r.samples, namer, Comm(name), work,
                               {{Fn(work, prog), Fn("thread_" + t + "_outer", prog),
                                 Lib("libc.so.6", {"[unknown]", "start_thread"}), clone3}}),
                   kMinSamples, 0.90, r.run.err);
    }
  }
}

// ---------------------------------------------------------------------------
// 7. A library loaded with dlopen() after the process started.

TEST_F(RecordUnwind, DlopenedLibraryFramesAreAttributedToTheLibrary) {
  struct Case {
    std::string program, library;
  };
  for (const Case& c :
       {Case{"dlopen_main", "libdlwork.so"}, Case{"dlopen_main.stripped", "libdlwork.so.stripped"}}) {
    SCOPED_TRACE(c.program + " + " + c.library);
    const std::string prog = TestdataPath(c.program);
    const std::string lib = TestdataPath(c.library);
    Namer namer;
    // The library's names come from ehprof's symbolizer in both cases: the
    // stripped copy keeps them in .dynsym.
    AddTwinIfStripped(&namer, prog, {"main", "_start"});
    Recording r = Record(c.program, {}, {prog, "1"}, {"EHPROF_DLWORK_PATH=" + lib});
    ExpectChains(
        CheckChains(c.program + ": leaf dlwork_inner", r.samples, namer, Comm(c.program), "dlwork_inner",
                    {Concat({Fn("dlwork_inner", lib), Fn("dlwork_entry", lib)}, Bottom(prog))}),
        kMinSamples, 0.90, r.run.err);
  }
}

// ---------------------------------------------------------------------------
// 8. exec: the same pid changes image; each sample uses the mappings of its
// time.

// ehprof prefetches the tables of the command it launches, but those of an
// image exec'd later are built after the EXEC event: until they are loaded,
// walks stop early ("table not loaded yet"), which on a busy machine lasts a
// few hundred ms. So here completeness has a lower bar, while wrong frames
// (e.g. the old image's mappings used after exec) still fail the test.
void ExpectCorrectAndMostlyComplete(const ChainCheck& c, int min_samples, const std::string& err) {
  std::printf(
      "%s: %d complete, %d stopped early, of %d (need >= %d samples, >= 50%% complete, >= 95%% "
      "without a wrong frame)\n",
      c.what.c_str(), c.matched, c.truncated, c.considered, min_samples);
  EXPECT_GE(c.considered, min_samples) << c.Describe() << "\nehprof stderr:\n" << err;
  EXPECT_GE(c.share(), 0.5) << c.Describe() << "\nehprof stderr:\n" << err;
  EXPECT_GE(c.correct_share(), 0.95) << c.Describe() << "\nehprof stderr:\n" << err;
}

TEST_F(RecordUnwind, ExecChildIsUnwoundBeforeAndAfterExec) {
  const std::string prog = TestdataPath("exec_child");
  const std::string target = TestdataPath("plt_calls");
  Namer namer;
  Recording r = Record("exec_child", {}, {prog, "1"}, {"EHPROF_EXEC_TARGET=" + target});
  ExpectCorrectAndMostlyComplete(
      CheckChains("exec_child: leaf before_exec_work", r.samples, namer, "exec_child", "before_exec_work",
                  {Concat({Fn("before_exec_work", prog)}, Bottom(prog))}),
      kMinMinorSamples, r.run.err);
  ExpectCorrectAndMostlyComplete(CheckChains("plt_calls after exec: leaf plt_compare", r.samples, namer,
                                             "plt_calls", "plt_compare", PltPatterns(target)),
                                 kMinSamples, r.run.err);
  const std::vector<Sample> under = WithFrame(r.samples, namer, "plt_calls", "plt_inner");
  ExpectCorrectAndMostlyComplete(CheckChains("plt_calls after exec: under plt_inner", under, namer,
                                             "plt_calls", "", UnderPltInnerPatterns(target)),
                                 kMinSamples, r.run.err);
}

// ---------------------------------------------------------------------------
// 9. Frame pointers alone cannot unwind these programs; --unwinder both keeps
// both walks.

// Share of the samples of `comm` (with user frames) that have a `main` frame.
ChainCheck ReachMain(const std::string& what, const std::vector<Sample>& samples, const Namer& namer,
                     const std::string& comm, const std::string& prog) {
  return CheckChains(what, samples, namer, comm, "",
                     {{Lib("", {}, 0, 1000), Fn("main", prog), Lib("", {}, 0, 1000)}});
}

TEST_F(RecordUnwinderModes, FramePointerWalkFailsWhereCfiSucceeds) {
  const std::string name = "plt_calls.stripped";
  const std::string prog = TestdataPath(name);
  Namer namer;
  AddTwinIfStripped(&namer, prog, kPltFunctions);

  Recording fp = Record("fp", {"--unwinder", "fp"}, {prog, "1"});
  const ChainCheck fp_main = ReachMain("--unwinder fp: reaching main", fp.samples, namer, Comm(name), prog);
  std::printf("%s: %d of %d (%.1f%%; need < 50%%)\n", fp_main.what.c_str(), fp_main.matched,
              fp_main.considered, 100 * fp_main.share());
  EXPECT_GE(fp_main.considered, kMinSamples) << fp_main.Describe() << "\n" << fp.run.err;
  // The point of ehprof: -fomit-frame-pointer code defeats the fp walk.
  EXPECT_LT(fp_main.share(), 0.5) << fp_main.Describe() << "\n" << fp.run.err;

  // --unwinder both: the default output is the CFI walk...
  Recording both = Record("both", {"--unwinder", "both"}, {prog, "1"});
  CheckPltCalls(both.samples, namer, prog, Comm(name), kMinSamples, both.run.err);
  // ...and --fp-walk writes the frame-pointer walk of the same kind of run.
  Recording both_fp = Record("both_fp", {"--unwinder", "both", "--fp-walk"}, {prog, "1"});
  const ChainCheck both_fp_main =
      ReachMain("--unwinder both --fp-walk: reaching main", both_fp.samples, namer, Comm(name), prog);
  std::printf("%s: %d of %d (%.1f%%; need < 50%%)\n", both_fp_main.what.c_str(), both_fp_main.matched,
              both_fp_main.considered, 100 * both_fp_main.share());
  EXPECT_GE(both_fp_main.considered, kMinSamples) << both_fp_main.Describe() << "\n" << both_fp.run.err;
  EXPECT_LT(both_fp_main.share(), 0.5) << both_fp_main.Describe() << "\n" << both_fp.run.err;
}

// ---------------------------------------------------------------------------
// 10. Bad input through the command line.

TEST_F(RecordBadInput, MissingPidFailsNamingIt) {
  if (kill(999999, 0) == 0 || errno != ESRCH) GTEST_SKIP() << "a process 999999 exists here";
  const RunResult r = RunEhprof({"record", "-q", "-o", dir_ + "/pid.txt", "-p", "999999"}, dir_ + "/pid");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("999999"));
}

TEST_F(RecordBadInput, MissingProgramFailsNamingIt) {
  const RunResult r =
      RunEhprof({"record", "-q", "-o", dir_ + "/prog.txt", "--", "/nonexistent/prog"}, dir_ + "/prog");
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/prog"));
}

TEST_F(RecordBadInput, CommandExitingAtOnceStillWritesValidOutput) {
  const std::string out = dir_ + "/exit3.txt";
  const RunResult r = RunEhprof(
      {"record", "-F", "999", "-q", "--format", "perf-script", "-o", out, "--", "sh", "-c", "exit 3"},
      dir_ + "/exit3");
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "exit code " << r.exit_code << "\n" << r.err;
  ASSERT_TRUE(std::filesystem::exists(out)) << r.err;
  std::vector<Sample> samples;
  std::string error;
  EXPECT_TRUE(ParsePerfScript(ReadFile(out), &samples, &error)) << error;
}

// True once some process runs the executable `path`.
bool WaitUntilRunning(const std::string& path, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string pid = entry.path().filename();
      if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
      std::error_code link_ec;
      const auto exe = std::filesystem::read_symlink(entry.path() / "exe", link_ec);
      if (!link_ec && exe == path) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST_F(RecordBadInput, ProgramDeletedWhileRecordedStillUnwinds) {
  // Same basename as the original, so the comm is the usual one.
  const std::string prog = dir_ + "/plt_calls.stripped";
  std::filesystem::copy_file(TestdataPath("plt_calls.stripped"), prog);
  std::filesystem::permissions(prog, std::filesystem::perms::owner_all);
  Namer namer;
  namer.AddTwin(prog, TestdataPath("plt_calls"), kPltFunctions);

  const std::string out = dir_ + "/deleted.txt";
  EhprofProcess p({"record", "-F", "999", "-q", "--format", "perf-script", "-o", out, "--", prog, "1"},
                  ChildEnvironment({}), dir_ + "/deleted", kTimeoutS);
  ASSERT_TRUE(p.started());
  // ehprof loads its BPF programs before it execs the command (longer on a
  // busy machine): delete the file ~0.3 s into the program's own run.
  ASSERT_TRUE(WaitUntilRunning(prog, std::chrono::seconds(10))) << prog << " never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::unlink(prog.c_str()), 0) << std::strerror(errno);
  const RunResult r = p.Wait();
  ExpectCleanRun(r, "deleted");
  std::vector<Sample> samples;
  std::string error;
  ASSERT_TRUE(ParsePerfScript(ReadFile(out), &samples, &error)) << error;
  CheckPltCalls(samples, namer, prog, Comm(prog), kMinSamples, r.err);
}

}  // namespace
}  // namespace ehprof
