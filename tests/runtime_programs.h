// The JVM and node the tests of Java and JavaScript frames outside CPU
// sampling run (testdata/JvmWaits.java, testdata/nodewaits.js): each spins
// (spinHere), sleeps (sleepHere) and writes a byte to /dev/null (writeHere)
// in a loop of its main thread, started with no flag at all.
#ifndef EHPROF_TESTS_RUNTIME_PROGRAMS_H_
#define EHPROF_TESTS_RUNTIME_PROGRAMS_H_

#include <sys/types.h>

#include <string>

namespace ehprof::testing {

// Debian 12's JDK 17, the one these tests run.
inline constexpr char kTestJdk[] = "/usr/lib/jvm/java-17-openjdk-amd64";
// Whether kTestJdk's javac is there.
bool HaveTestJdk();
// Compiles JvmWaits.java into `dir` and starts it for `seconds`, after
// giving it a second to start up; its pid (the caller kills and reaps it),
// or -1 (a test failure said why).
pid_t StartJvmWaits(const std::string& dir, int seconds);
// The same for nodewaits.js under /usr/bin/node.
pid_t StartNodeWaits(int seconds);
// SIGKILL and reap, when *pid > 0; *pid becomes -1.
void KillProgram(pid_t* pid);

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_RUNTIME_PROGRAMS_H_
