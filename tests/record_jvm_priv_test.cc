// Java stacks of a JVM started with no flag at all (no
// -XX:+PreserveFramePointer, no perf map), recorded with -p after it has
// warmed up: the walk names the Java frames from the JVM's own memory
// (bpf/hotspot.bpf.h, agent/jvm/) and goes on through libjvm's CFI to the
// thread's start. testdata/JvmWork.java: main -> work -> hotA / hotB.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;

class RecordJvm : public testing::RecordingTest {
 protected:
  // The JDKs to try: Debian's default and any other on this machine type.
  static std::vector<std::string> Jdks() {
    std::vector<std::string> out;
    for (const char* home : {"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"}) {
      if (access((std::string(home) + "/bin/java").c_str(), X_OK) == 0) out.push_back(home);
    }
    return out;
  }

  // Compiles JvmWork.java into dir_ with `jdk`'s javac and starts it for
  // `seconds`; its pid.
  pid_t StartJvmWork(const std::string& jdk, int seconds) {
    const std::string javac = jdk + "/bin/javac -d " + dir_ + " " + testing::SourcePath("testdata/JvmWork.java");
    EXPECT_EQ(std::system(javac.c_str()), 0) << javac;
    const std::string java = jdk + "/bin/java";
    const std::string secs = std::to_string(seconds);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(java.c_str(), java.c_str(), "-cp", dir_.c_str(), "JvmWork", secs.c_str(), nullptr);
      _exit(127);
    }
    return pid;
  }
};

struct JavaCounts {
  size_t main = 0;        // samples of the JVM's main thread ("java")
  size_t java = 0;        // ... with a JvmWork frame
  size_t chain = 0;       // ... whose JvmWork frames run main -> work
  size_t to_start = 0;    // ... that reach the thread's start
};

JavaCounts Judge(const std::string& folded) {
  JavaCounts c;
  std::ifstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    const size_t n = std::stoull(line.substr(sp + 1));
    const std::string stack = ";" + line.substr(0, sp) + ";";
    if (stack.rfind(";java;", 0) != 0) continue;
    c.main += n;
    if (stack.find(";JvmWork.") == std::string::npos) continue;
    c.java += n;
    const size_t main = stack.find(";JvmWork.main;"), work = stack.find(";JvmWork.work;");
    if (main != std::string::npos && work != std::string::npos && main < work) c.chain += n;
    if (stack.find(";start_thread;") != std::string::npos || stack.find(";clone3;") != std::string::npos ||
        stack.find(";_start;") != std::string::npos) {
      c.to_start += n;
    }
  }
  return c;
}

TEST_F(RecordJvm, JavaFramesOfAJvmWithoutFlagsAreNamedFromItsMemory) {
  const std::vector<std::string> jdks = Jdks();
  if (jdks.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm (scripts/packages.sh installs openjdk-17)";
  for (const std::string& jdk : jdks) {
    SCOPED_TRACE(jdk);
    const pid_t pid = StartJvmWork(jdk, 8);
    ASSERT_GT(pid, 0);
    // Past the JVM's start and the first compilations: attached to a
    // running JVM, as a user would.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const std::string out = dir_ + "/jvm.folded";
    auto r = RunEhprof({"record", "-F", "499", "-q", "-p", std::to_string(pid), "-d", "3", "-o", out});
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const JavaCounts c = Judge(out);
    ASSERT_GE(c.main, 300u) << "too few samples of the main thread to judge";
    EXPECT_GE(c.java * 100, c.main * 98) << c.java << " of " << c.main << " main-thread samples name JvmWork";
    EXPECT_GE(c.chain * 100, c.java * 95) << c.chain << " of " << c.java << " run main -> work";
    EXPECT_GE(c.to_start * 100, c.java * 95) << c.to_start << " of " << c.java << " reach the thread's start";
    std::printf("%s: %zu main-thread samples, %.1f %% with Java frames, %.1f %% main -> work, %.1f %% to start\n",
                jdk.c_str(), c.main, 100.0 * c.java / c.main, 100.0 * c.chain / std::max<size_t>(c.java, 1),
                100.0 * c.to_start / std::max<size_t>(c.java, 1));
  }
}

}  // namespace
}  // namespace ehprof
