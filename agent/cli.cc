#include "agent/cli.h"

#include <cstdio>
#include <string>

namespace ehprof {

int UsageError(std::string_view subcommand, std::string_view reason) {
  std::fprintf(stderr, "ehprof %.*s: %.*s (see 'ehprof %.*s --help')\n",
               static_cast<int>(subcommand.size()), subcommand.data(),
               static_cast<int>(reason.size()), reason.data(),
               static_cast<int>(subcommand.size()), subcommand.data());
  return kExitUsage;
}

bool IsHelpFlag(std::string_view arg) { return arg == "--help" || arg == "-h"; }

}  // namespace ehprof
