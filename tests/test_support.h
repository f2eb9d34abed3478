// Where tests find the built programs and data (set by tests/CMakeLists.txt),
// and small helpers several tests share.
#ifndef EHPROF_TESTS_TEST_SUPPORT_H_
#define EHPROF_TESTS_TEST_SUPPORT_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/process/proc_maps.h"
#include "gtest/gtest.h"

namespace ehprof::testing {

// A program built from testdata/ (e.g. "realign", "realign.stripped").
std::string TestdataPath(const std::string& name);
// A file in the source tree (e.g. "testdata/seeds/...").
std::string SourcePath(const std::string& rel);
// The number of the first line of source file `rel` holding `marker` (-1: none).
int SourceLineWith(const std::string& rel, const std::string& marker);
// A test name for an interpreter's path: "python3_12", "debian_python3_11"
// for one under /usr/.
std::string InterpreterTestName(const std::string& path);
// build/ehprof.
std::string EhprofBinary();
// The release's own python3 (Debian 12: /usr/bin/python3.11) and its newest
// libLLVM (Debian 12: libLLVM-15.so.1), found when the build was configured.
const char* DebianPython();
const char* DebianLibLlvm();

struct SymbolRange {
  uint64_t addr = 0;
  uint64_t size = 0;
};
// A function symbol's address and size from .symtab (or .dynsym).
std::optional<SymbolRange> FindSymbol(const std::string& path, const std::string& name);

// For tests that load BPF: true as root; otherwise prints "SKIPPED: ..."
// (the caller then skips) or, under CI=true, records a failure: CI must run
// them.
bool RequireRootForBpf();
// For the JIT tests: true when /usr/bin/node is there; otherwise as above
// (CI must run them: scripts/install_deps.sh installs nodejs).
bool RequireNode();
// util-linux's setpriv, through which tests act as another uid (65534).
inline constexpr char kSetpriv[] = "/usr/bin/setpriv";
// For those tests: true when kSetpriv is there; otherwise as above.
bool RequireSetpriv();

// Prints `figure: KEY = VALUE`, a figure the docs may quote:
// scripts/test_figures.py collects these lines into a result file.
void PrintFigure(const std::string& key, double value);

std::string ReadFile(const std::string& path);
// A gzip file's contents; nullopt when it is not one whole gzip member.
std::optional<std::string> Gunzip(const std::string& gz);

// A fixture for tests that record: RequireRootForBpf() first (skipping
// without root), then dir_, a fresh directory removed afterwards.
class RecordingTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string dir_;
};

struct RunResult {
  int exit_code = -1;
  std::string err;  // ehprof's stderr
};
// Runs build/ehprof with `args`. With sig != 0: after delay_ms calls
// while_running(pid) (if set) and sends sig. A run past 60 s is killed and
// reported in err, so a hang fails a test instead of hanging it.
RunResult RunEhprof(std::vector<std::string> args, int sig = 0, int delay_ms = 0,
                    const std::function<void(pid_t)>& while_running = nullptr);

// A shell command's stdout and stderr.
std::string ShellOutput(const std::string& cmd);
// Starts argv (argv[0] a path) with its stdout a pipe; returns its pid (the
// caller kills and reaps it) and sets *line to the first line it writes,
// without the newline (what came before its stdout closed, if none).
pid_t StartReadingLine(const std::vector<std::string>& argv, std::string* line);
// `go tool pprof ARGS FILES` with HOME and its temporary files in `home`, one
// Go build cache beside build/ehprof (the toolchain builds pprof on first
// use), no network, at most 300 s.
std::string GoToolPprof(const std::string& args, const std::vector<std::string>& files,
                        const std::string& home);

// The sum of the counts of a folded file.
size_t FoldedSamples(const std::string& path);

// Counts of the user stacks in perf-script output `text`, each leaf first
// as "huge_leaf;huge_inner;...;libc.so.6;_start": frames in `prog` are
// named after whichever of `functions` holds them in `twin`'s symbol table
// ("?" if none; `twin` is `prog` itself or its unstripped copy), frames in
// other files by the file's basename. Kernel frames and inline expansion
// lines are left out.
std::map<std::string, size_t> UserChains(const std::string& text, const std::string& prog,
                                         const std::string& twin,
                                         const std::vector<std::string>& functions);
// The same chains, each with the sum of its samples' periods (the number
// before the event name in the header: for off-CPU events, nanoseconds).
std::map<std::string, uint64_t> UserChainPeriods(const std::string& text, const std::string& prog,
                                                 const std::string& twin,
                                                 const std::vector<std::string>& functions);
// The same chains, each sample weighing weight(its header line): 0 leaves
// a sample out (another command name, say).
std::map<std::string, uint64_t> WeighedChains(const std::string& text, const std::string& prog,
                                              const std::string& twin,
                                              const std::vector<std::string>& functions,
                                              const std::function<uint64_t(const std::string&)>& weight);

// An executable private mapping of `path` (a maps line, as read).
inline MapsEntry TextMapping(uint64_t start, uint64_t end, const std::string& path, uint64_t offset = 0) {
  MapsEntry e;
  e.start = start;
  e.end = end;
  e.offset = offset;
  e.read = e.exec = e.priv = true;
  e.path = path;
  return e;
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_TEST_SUPPORT_H_
