// What the tests' real servers (Pyroscope, the OpenTelemetry Collector)
// share: a free port on 127.0.0.1, a process started with its output in a
// log file, and stopping it.
#ifndef EHPROF_TESTS_SERVER_PROCESS_H_
#define EHPROF_TESTS_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace ehprof::testing {

// A server built by an install script: $ENV_VAR when set, else the last
// line the script (under scripts/) prints, which builds it if it has to;
// empty if that is not an executable.
std::string InstalledBinary(const std::string& env_var, const std::string& script);
// A TCP port on 127.0.0.1 that was free a moment ago (0 if none).
int FreeLoopbackPort();
// Starts args[0] with stdout and stderr appended to `log`, in directory
// `cwd`; the pid, or -1.
pid_t SpawnLogged(std::vector<std::string> args, const std::string& log, const std::string& cwd);
// Starts a program (searched in PATH) with the test's own stdout and
// stderr; the pid, or -1.
pid_t SpawnProgram(std::vector<std::string> args);
// A server's start: true when it started; otherwise prints "SKIPPED: why"
// (the caller then skips: the server is not installed) or, under CI=true,
// records a failure: CI must run these tests.
bool RequireServer(bool started, const std::string& why);
// A CA and a certificate for 127.0.0.1 it signed, made with openssl in
// `dir`: ca.pem, server.pem, server.key. "" when made, else openssl's words.
std::string MakeTestCertificates(const std::string& dir);
// SIGTERM, then SIGKILL after 10 s; *pid becomes -1.
void StopProcess(pid_t* pid);

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_SERVER_PROCESS_H_
