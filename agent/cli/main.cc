// ehprof: a sampling CPU profiler that unwinds user stacks with CFI in BPF.
#include <cstdio>
#include <string>
#include <vector>

#include "agent/cli/cli.h"
#include "base/guarded.h"
#include "base/sigbus_guard.h"
#include "symbolizer/debuginfod_client.h"

namespace {

constexpr char kHelp[] = R"(usage: ehprof COMMAND [ARGS]

commands:
  record         sample CPU stacks (unwound in the kernel with CFI) and write a profile
  agent          profile continuously, one profile per interval (--output-dir)
  check          can ehprof run here; verifier headroom of its BPF programs
  compare        frame-pointer against CFI stacks of the same samples
  replay FILE    the BPF walk of a saved --verify capture, run again beside libdwfl
  tables FILE    print the unwind rows built from an ELF file's CFI

'ehprof COMMAND --help' describes each command; 'ehprof --version' says which build.
)";

int Dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kHelp, stderr);
    return ehprof::kExitUsage;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "--version" || cmd == "-V") {
    // The commit is the one CMake was configured at.
    std::printf("ehprof %s (%s)\n", EHPROF_VERSION, EHPROF_COMMIT);
    return ehprof::kExitOk;
  }
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kHelp, stdout);
    return ehprof::kExitOk;
  }
  if (cmd == "tables") return ehprof::RunTablesCommand(args);
  if (cmd == "record") return ehprof::RunRecordCommand(args);
  if (cmd == "compare") return ehprof::RunCompareCommand(args);
  if (cmd == "replay") return ehprof::RunReplayCommand(args);
  if (cmd == "check") return ehprof::RunCheckCommand(args);
  if (cmd == "agent") return ehprof::RunAgentCommand(args);
  std::fprintf(stderr, "ehprof: unknown command '%s' (see 'ehprof --help')\n", cmd.c_str());
  return ehprof::kExitUsage;
}

}  // namespace

// An exception nothing below caught ends the command with status 1 and a
// line saying what it was, not with std::terminate's abort.
int main(int argc, char** argv) {
  // Before any thread: symbolizers on worker threads read these.
  ehprof::BoundDebuginfodTimeout();
  // Before any thread: a file a user truncates while ehprof reads it
  // through a mapping reads as zeros instead of killing ehprof.
  ehprof::InstallSigbusGuard();
  int rc = 1;
  const absl::Status st = ehprof::Guarded("ehprof", "exiting with status 1", [&] {
    rc = Dispatch(argc, argv);
    return absl::OkStatus();
  });
  return st.ok() ? rc : 1;
}
