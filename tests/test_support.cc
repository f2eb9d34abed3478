#include "tests/test_support.h"

#include <fcntl.h>
#include <zlib.h>
#include <gelf.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

extern char** environ;

namespace ehprof::testing {

std::string TestdataPath(const std::string& name) {
  return std::string(EHPROF_TESTDATA_DIR) + "/" + name;
}
const char* DebianPython() { return EHPROF_DEBIAN_PYTHON; }
const char* DebianLibLlvm() { return EHPROF_DEBIAN_LIBLLVM; }
std::string SourcePath(const std::string& rel) {
  return std::string(EHPROF_SOURCE_DIR) + "/" + rel;
}
std::string EhprofBinary() { return EHPROF_BINARY; }
std::string InterpreterTestName(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  if (path.rfind("/usr/", 0) == 0) name = "debian_" + name;
  for (char& c : name) c = isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}
int SourceLineWith(const std::string& rel, const std::string& marker) {
  std::ifstream in(SourcePath(rel));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return -1;
}

std::optional<SymbolRange> FindSymbol(const std::string& path, const std::string& name) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  elf_version(EV_CURRENT);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<SymbolRange> found;
  for (Elf_Scn* scn = e ? elf_nextscn(e, nullptr) : nullptr; scn && !found;
       scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) {
      continue;
    }
    Elf_Data* d = elf_getdata(scn, nullptr);
    for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym)) continue;
      const char* n = elf_strptr(e, sh.sh_link, sym.st_name);
      if (n && name == n && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
        found = SymbolRange{sym.st_value, sym.st_size};
        break;
      }
    }
  }
  if (e) elf_end(e);
  ::close(fd);
  return found;
}

namespace {

// A machine feature a test needs is missing: under CI=true a failure
// (`in_ci`), else "SKIPPED: `skipped`" (the caller skips). False.
bool Missing(const std::string& in_ci, const std::string& skipped) {
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true") {
    ADD_FAILURE() << in_ci;
  } else {
    std::printf("SKIPPED: %s\n", skipped.c_str());
  }
  return false;
}

}  // namespace

bool RequireRootForBpf() {
  return geteuid() == 0 || Missing("CI=true but not root: the BPF tests must run", "needs root (CAP_BPF, CAP_PERFMON)");
}

bool RequireNode() {
  return access("/usr/bin/node", X_OK) == 0 ||
         Missing("CI=true and no /usr/bin/node (scripts/install_deps.sh installs nodejs)", "no /usr/bin/node (nodejs)");
}

bool RequireSetpriv() {
  return access(kSetpriv, X_OK) == 0 || Missing("CI=true and no /usr/bin/setpriv (util-linux)",
                                                "no /usr/bin/setpriv (util-linux)");
}

void RecordingTest::SetUp() {
  if (!RequireRootForBpf()) GTEST_SKIP();
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = ::testing::TempDir() + "/" + info->test_suite_name() + "." + std::to_string(getpid());
  std::filesystem::create_directories(dir_);
}

void RecordingTest::TearDown() {
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::optional<std::string> Gunzip(const std::string& gz) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[4096];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof(buf) - z.avail_out);
  }
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || trailing) return std::nullopt;
  return out;
}

void PrintFigure(const std::string& key, double value) {
  // A key is [A-Za-z0-9_] (what test_figures.py reads): "go1.26.8/named"
  // becomes go1_26_8_named. %.10g: integers print without a fraction.
  std::string k = key;
  for (char& c : k) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  std::printf("figure: %s = %.10g\n", k.c_str(), value);
  std::fflush(stdout);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


// Starts ehprof with `args`, sends `sig` after `delay_ms` (0: none), waits
// (killing it after 60 s: a hang fails the test, it does not hang it).
RunResult RunEhprof(std::vector<std::string> args, int sig, int delay_ms,
                    const std::function<void(pid_t)>& while_running) {
  // ctest -j runs these tests as concurrent processes: paths must differ.
  const std::string err_path = ::testing::TempDir() + "/ending_err." + std::to_string(getpid());
  args.insert(args.begin(), EhprofBinary());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  RunResult r;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&fa);
  if (sig) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (while_running) while_running(pid);
    kill(pid, sig);
  }
  int status = 0;
  for (int i = 0; i < 600; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      r.err = ReadFile(err_path);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  r.err = "ehprof did not end within 60 s";
  return r;
}

pid_t StartReadingLine(const std::vector<std::string>& argv, std::string* line) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  // Up to the newline: the line may come in several writes.
  line->clear();
  char ch;
  while (pid > 0 && read(fds[0], &ch, 1) == 1 && ch != '\n') line->push_back(ch);
  close(fds[0]);
  return pid;
}

std::string ShellOutput(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string GoToolPprof(const std::string& args, const std::vector<std::string>& files,
                        const std::string& home) {
  const std::string bin = EhprofBinary();
  const std::string cache = bin.substr(0, bin.rfind('/')) + "/gocache";
  std::string cmd = "env HOME='" + home + "' GOCACHE='" + cache + "' GOPROXY=off GOFLAGS= PPROF_TMPDIR='" +
                    home + "' timeout 300 go tool pprof " + args;
  for (const std::string& f : files) cmd += " '" + f + "'";
  return ShellOutput(cmd);
}

size_t FoldedSamples(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += std::stoull(line.substr(line.rfind(' ') + 1));
  return n;
}

namespace {

// "comm  tid [cpu] secs.usecs:     PERIOD event: " -> PERIOD (0 if none).
uint64_t HeaderPeriod(const std::string& header) {
  static const std::regex kPeriod(R"(: +(\d+) \S+: *$)");
  std::smatch m;
  return std::regex_search(header, m, kPeriod) ? std::stoull(m[1].str()) : 0;
}


}  // namespace

// Chains of perf-script `text` (see UserChains), each sample weighing
// weight(its header line).
std::map<std::string, uint64_t> WeighedChains(const std::string& text, const std::string& prog,
                                              const std::string& twin,
                                              const std::vector<std::string>& functions,
                                              const std::function<uint64_t(const std::string&)>& weight) {
  std::vector<std::pair<std::string, SymbolRange>> ranges;
  for (const std::string& fn : functions) {
    if (auto r = FindSymbol(twin, fn)) ranges.push_back({fn, *r});
  }
  std::map<std::string, uint64_t> chains;
  std::istringstream in(text);
  std::string line, chain;
  uint64_t w = 0;
  bool in_sample = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '\t') {  // a header or the blank line ending a sample
      if (in_sample && !chain.empty()) chains[chain] += w;
      in_sample = !line.empty();
      if (in_sample) w = weight(line);
      chain.clear();
      continue;
    }
    const size_t open = line.rfind(" (");
    if (open == std::string::npos || line.back() != ')') continue;
    const std::string dso = line.substr(open + 2, line.size() - open - 3);
    if (dso == "inlined" || dso.rfind("[kernel", 0) == 0) continue;
    std::string name = dso.substr(dso.rfind('/') + 1);
    if (dso == prog) {
      const uint64_t addr = std::stoull(line.substr(line.find_first_not_of(" \t")), nullptr, 16);
      name = "?";
      for (const auto& [fn, r] : ranges) {
        if (addr >= r.addr && addr < r.addr + r.size) name = fn;
      }
    }
    chain += (chain.empty() ? "" : ";") + name;
  }
  if (in_sample && !chain.empty()) chains[chain] += w;
  return chains;
}

std::map<std::string, size_t> UserChains(const std::string& text, const std::string& prog,
                                         const std::string& twin,
                                         const std::vector<std::string>& functions) {
  std::map<std::string, size_t> out;
  for (const auto& [chain, n] :
       WeighedChains(text, prog, twin, functions, [](const std::string&) { return 1; })) {
    out[chain] = n;
  }
  return out;
}

std::map<std::string, uint64_t> UserChainPeriods(const std::string& text, const std::string& prog,
                                                 const std::string& twin,
                                                 const std::vector<std::string>& functions) {
  return WeighedChains(text, prog, twin, functions, HeaderPeriod);
}

}  // namespace ehprof::testing
