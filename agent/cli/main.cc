// ehprof: a sampling CPU profiler that unwinds user stacks with CFI in BPF.
#include <cstdio>
#include <string>
#include <vector>

#include "agent/cli/cli.h"
#include "base/guarded.h"
#include "base/sigbus_guard.h"
#include "symbolizer/debuginfod_client.h"

namespace {

// The commands, in the order --help lists them: the dispatch and the list
// (and so the man page and bash completion, generated from --help) come
// from this one table.
struct Command {
  const char* name;
  const char* operand;  // shown after the name in the list
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};
constexpr Command kCommands[] = {
    {"record", "", "sample CPU stacks (unwound in the kernel with CFI) and write a profile",
     ehprof::RunRecordCommand},
    {"agent", "", "profile continuously, one profile per interval (--output-dir)", ehprof::RunAgentCommand},
    {"check", "", "can ehprof run here; verifier headroom of its BPF programs", ehprof::RunCheckCommand},
    {"compare", "", "frame-pointer against CFI stacks of the same samples", ehprof::RunCompareCommand},
    {"replay", "FILE", "the BPF walk of a saved --verify capture, run again beside libdwfl",
     ehprof::RunReplayCommand},
    {"tables", "FILE", "print the unwind rows built from an ELF file's CFI", ehprof::RunTablesCommand},
};

void PrintHelp(std::FILE* out) {
  std::fputs("usage: ehprof COMMAND [ARGS]\n\ncommands:\n", out);
  for (const Command& c : kCommands) {
    const std::string head = *c.operand ? std::string(c.name) + " " + c.operand : c.name;
    std::fprintf(out, "  %-14s %s\n", head.c_str(), c.summary);
  }
  std::fputs("\n'ehprof COMMAND --help' describes each command; 'ehprof --version' says which build.\n", out);
}

int Dispatch(int argc, char** argv) {
  if (argc < 2) {
    PrintHelp(stderr);
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
    PrintHelp(stdout);
    return ehprof::kExitOk;
  }
  for (const Command& c : kCommands) {
    if (cmd == c.name) return c.run(args);
  }
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
