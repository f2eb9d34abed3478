// Shared command-line conventions of the ehprof subcommands: `--help` on
// each, and exit code 2 with a one-line reason for bad usage.
#ifndef EHPROF_AGENT_CLI_CLI_H_
#define EHPROF_AGENT_CLI_CLI_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/session/bpf_session.h"

namespace ehprof {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "ehprof SUBCOMMAND: REASON (see 'ehprof SUBCOMMAND --help')" and
// returns kExitUsage.
int UsageError(std::string_view subcommand, std::string_view reason);

bool IsHelpFlag(std::string_view arg);

// "1,2,3" -> ids (none zero); false on anything else.
bool ParseIdList(const std::string& s, std::vector<uint32_t>* out);
// BPF map sizes for about `mb` megabytes of unwind tables (--table-memory).
MapSizes SizesForMemory(uint64_t mb);

// Subcommand entry points; args exclude the program and subcommand names.
int RunTablesCommand(const std::vector<std::string>& args);
int RunRecordCommand(const std::vector<std::string>& args);
int RunCompareCommand(const std::vector<std::string>& args);
int RunCheckCommand(const std::vector<std::string>& args);
int RunAgentCommand(const std::vector<std::string>& args);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CLI_CLI_H_
