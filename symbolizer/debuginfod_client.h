// Bounds how long a symbolizer waits for debuginfod servers.
//
// We do not talk to debuginfod ourselves: libdwfl's
// dwfl_standard_find_debuginfo asks the servers in DEBUGINFOD_URLS (through
// a dlopen'ed libdebuginfod) after the local build-id and .gnu_debuglink
// lookups fail. libdebuginfod waits DEBUGINFOD_TIMEOUT seconds (default 90)
// for a connection and again for the first 100 KiB, and after a failure
// tries DEBUGINFOD_RETRY_LIMIT (default 2) more times: a server that accepts
// connections and never answers would stall a profile's output for 4.5
// minutes per file. Its only knobs are environment variables.
#ifndef EHPROF_SYMBOLIZER_DEBUGINFOD_CLIENT_H_
#define EHPROF_SYMBOLIZER_DEBUGINFOD_CLIENT_H_

namespace ehprof {

// What DEBUGINFOD_TIMEOUT and DEBUGINFOD_RETRY_LIMIT become when unset.
inline constexpr int kDebuginfodTimeoutSeconds = 5;
inline constexpr int kDebuginfodRetryLimit = 0;

// Sets DEBUGINFOD_TIMEOUT and DEBUGINFOD_RETRY_LIMIT to the values above
// when they are unset; a user's values win. A dead server then costs one
// wait of at most about kDebuginfodTimeoutSeconds per file without local
// debug info. Calls setenv, which races with getenv on other threads: the
// program's main() calls it before any thread starts (libdebuginfod reads
// these only from the environment), and nothing else does.
void BoundDebuginfodTimeout();

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_DEBUGINFOD_CLIENT_H_
