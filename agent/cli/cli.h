// Shared command-line conventions of the ehprof subcommands, on CLI11:
// generated `--help` on each, exit code 2 with a one-line reason for bad
// usage, and the options `record` and `agent` have in common.
#ifndef EHPROF_AGENT_CLI_CLI_H_
#define EHPROF_AGENT_CLI_CLI_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "agent/output/stack_view.h"
#include "agent/record/recorder.h"
#include "agent/session/bpf_session.h"

namespace ehprof {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "ehprof SUBCOMMAND: REASON (see 'ehprof SUBCOMMAND --help')" and
// returns kExitUsage.
int UsageError(std::string_view subcommand, std::string_view reason);

// An app for `ehprof SUBCOMMAND`: its description heads the generated help.
std::unique_ptr<CLI::App> NewCommandApp(std::string_view subcommand, std::string description);

// Parses args (the program and subcommand names excluded) into app. Returns
// an exit code when the command ends here: kExitOk after printing the help
// for -h/--help, kExitUsage after a one-line error; nullopt to go on.
std::optional<int> ParseCommandLine(CLI::App& app, const std::vector<std::string>& args);

// A range check whose bounds go into the error, not into the help (CLI11
// would print "-F INT:INT in [1 - 100000]"); in the type of the bounds, so
// the error says "1 to 100000", not "1.000000 to 100000.000000".
template <typename T>
CLI::Range InRange(T lo, T hi) {
  CLI::Range r(lo, hi);
  r.description("");
  return r;
}
// Numbers above zero; the error names the value.
const CLI::Validator& Positive();

// BPF map sizes for about `mb` megabytes of unwind tables (--table-memory).
MapSizes SizesForMemory(uint64_t mb);

// What `record` and `agent` both take: frequency, event, -p, unwind-table
// memory and cache. Parsed into flags, then applied to RecordOptions.
struct SamplingFlags {
  std::string event = "cpu-clock";
  uint64_t table_mb = 64;
  uint32_t max_procs = MapSizes{}.procs;
  bool no_table_cache = false;
  bool no_kernel_maps = false;
  bool no_python = false;
  bool no_java = false;
  bool no_js = false;
  bool no_ruby = false;
  bool no_php = false;
  bool no_perl = false;
};
void AddSamplingOptions(CLI::App& app, RecordOptions* record, SamplingFlags* flags);
// Sets the event, map sizes and table cache of record from flags.
void ApplySamplingFlags(const SamplingFlags& flags, const CLI::App& app, RecordOptions* record);
// --off-cpu, --off-cpu-min-us, --off-cpu-state (record and agent).
struct OffCpuFlags {
  bool off_cpu = false;
  double min_us = 10;
  std::vector<std::string> states;
};
void AddOffCpuOptions(CLI::App& app, OffCpuFlags* flags);
// Sets record's off_cpu, threshold and state mask (not sample_cpu).
void ApplyOffCpuFlags(const OffCpuFlags& flags, RecordOptions* record);
// --view full|runtime (record and agent), parsed into `view`.
void AddViewOption(CLI::App& app, std::string* view);
// The view --view named ("full" when it was not given).
StackView ViewOf(const std::string& view);
// Whether the event counts time (a clock), so a sample's period is known.
bool IsClockEvent(const std::string& event);

// Subcommand entry points; args exclude the program and subcommand names.
int RunTablesCommand(const std::vector<std::string>& args);
int RunRecordCommand(const std::vector<std::string>& args);
int RunCompareCommand(const std::vector<std::string>& args);
int RunReplayCommand(const std::vector<std::string>& args);
int RunCheckCommand(const std::vector<std::string>& args);
int RunAgentCommand(const std::vector<std::string>& args);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CLI_CLI_H_
