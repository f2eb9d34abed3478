// Secrets the agent sends to a server (a basic-auth password, a bearer
// token, OTLP headers), read from files rather than taken on the command
// line, where every local user sees them (ps, /proc/PID/cmdline). Files as
// systemd's LoadCredential= gives them ($CREDENTIALS_DIRECTORY/NAME) or any
// file only root or the running user can change: each is opened
// O_NOFOLLOW|O_NONBLOCK, read once at start, and refused unless it is a
// regular file owned by root or the running user and writable by no group
// or other (whoever can write it chooses what the agent sends). Errors name
// the file, never its content.
#ifndef EHPROF_AGENT_SINK_SECRET_FILE_H_
#define EHPROF_AGENT_SINK_SECRET_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

// The file's first line, without surrounding white space; an error when it
// is empty (an empty password or token is never sent). `flag` names the
// option in errors.
absl::StatusOr<std::string> ReadSecretLine(const std::string& path, const std::string& flag);

// "Name: value" lines (blank lines and lines starting with # skipped, a
// trailing \r dropped), each with a header name of token characters and a
// value without control characters; an error names the line by number.
absl::StatusOr<std::vector<std::string>> ReadHeaderFile(const std::string& path, const std::string& flag);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_SECRET_FILE_H_
