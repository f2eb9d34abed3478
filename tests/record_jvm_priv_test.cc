// Java stacks of a JVM started with no flag at all (no
// -XX:+PreserveFramePointer, no perf map), recorded with -p after it has
// warmed up: the walk names the Java frames from the JVM's own memory
// (bpf/hotspot.bpf.h, agent/jvm/) and goes on through libjvm's CFI to the
// thread's start. testdata/JvmWork.java: main -> work -> hotA / hotB;
// testdata/JvmInline.java: a method C2 inlines is a frame of its own;
// testdata/JvmRecursion.java: a frame interrupted in its prologue or
// epilogue unwinds to its callers.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
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

  // Compiles testdata/CLASS.java into dir_ with `jdk`'s javac and starts
  // it for `seconds`; its pid.
  pid_t StartJava(const std::string& jdk, const std::string& cls, int seconds) {
    const std::string javac = jdk + "/bin/javac -d " + dir_ + " " + testing::SourcePath("testdata/" + cls + ".java");
    EXPECT_EQ(std::system(javac.c_str()), 0) << javac;
    const std::string java = jdk + "/bin/java";
    const std::string secs = std::to_string(seconds);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(java.c_str(), java.c_str(), "-cp", dir_.c_str(), cls.c_str(), secs.c_str(), nullptr);
      _exit(127);
    }
    return pid;
  }

  // Records testdata/CLASS.java's JVM for 3 s into `out`, attached 1.5 s
  // after its start: past the JVM's start and the first compilations, as
  // a user would attach to a running JVM. `flags`: more record flags.
  void RecordWarm(const std::string& jdk, const std::string& cls, const std::string& out,
                  const std::vector<std::string>& flags) {
    const pid_t pid = StartJava(jdk, cls, 8);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::vector<std::string> args = {"record", "-F", "499", "-q", "-p", std::to_string(pid), "-d", "3", "-o", out};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = RunEhprof(args);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

// Calls fn(";frame;...;frame;", count) for each stack of the JVM's main
// thread ("java") in a folded file.
void ForEachMainStack(const std::string& folded, const std::function<void(const std::string&, size_t)>& fn) {
  std::ifstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos || line.rfind("java;", 0) != 0) continue;
    fn(";" + line.substr(0, sp) + ";", std::stoull(line.substr(sp + 1)));
  }
}

struct JavaCounts {
  size_t main = 0;        // samples of the JVM's main thread ("java")
  size_t java = 0;        // ... with a JvmWork frame
  size_t chain = 0;       // ... whose JvmWork frames run main -> work
  size_t to_start = 0;    // ... that reach the thread's start
};

JavaCounts Judge(const std::string& folded) {
  JavaCounts c;
  ForEachMainStack(folded, [&c](const std::string& stack, size_t n) {
    c.main += n;
    if (stack.find(";JvmWork.") == std::string::npos) return;
    c.java += n;
    const size_t main = stack.find(";JvmWork.main;"), work = stack.find(";JvmWork.work;");
    if (main != std::string::npos && work != std::string::npos && main < work) c.chain += n;
    if (stack.find(";start_thread;") != std::string::npos || stack.find(";clone3;") != std::string::npos ||
        stack.find(";_start;") != std::string::npos) {
      c.to_start += n;
    }
  });
  return c;
}

TEST_F(RecordJvm, JavaFramesOfAJvmWithoutFlagsAreNamedFromItsMemory) {
  const std::vector<std::string> jdks = Jdks();
  if (jdks.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm (scripts/packages.sh installs openjdk-17)";
  for (const std::string& jdk : jdks) {
    SCOPED_TRACE(jdk);
    const std::string out = dir_ + "/jvm.folded";
    ASSERT_NO_FATAL_FAILURE(RecordWarm(jdk, "JvmWork", out, {}));
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

// Of the main thread's samples in a frame `in`, those that also hold one
// of `chains` (each as ";frame;frame;", the leaf-most frame last).
struct ChainCounts {
  size_t in = 0;
  size_t chain = 0;
};

ChainCounts CountChains(const std::string& folded, const std::string& in, const std::vector<std::string>& chains) {
  ChainCounts c;
  ForEachMainStack(folded, [&](const std::string& stack, size_t n) {
    if (stack.find(in) == std::string::npos) return;
    c.in += n;
    for (const std::string& chain : chains) {
      if (stack.find(chain) != std::string::npos) {
        c.chain += n;
        break;
      }
    }
  });
  return c;
}

// Samples of JvmInline's main thread in mix, the method step calls:
// all of them are step's too. C2 inlines step into round, so step is a
// scope of round's code at the call's return address; it must show as an
// inlined frame between round and mix (--folded-annotate marks it _[i]).
TEST_F(RecordJvm, MethodsInlinedByTheJitHaveTheirOwnFrames) {
  const std::vector<std::string> jdks = Jdks();
  if (jdks.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm (scripts/packages.sh installs openjdk-17)";
  for (const std::string& jdk : jdks) {
    SCOPED_TRACE(jdk);
    // C2 has compiled round with step inlined well before the recording
    // (-XX:+PrintInlining says so 0.2 s after the start on JDK 17 and 25).
    const std::string out = dir_ + "/inline.folded";
    ASSERT_NO_FATAL_FAILURE(RecordWarm(jdk, "JvmInline", out, {"--folded-annotate"}));
    const ChainCounts c = CountChains(out, ";JvmInline.mix;",
                                      {";JvmInline.round;JvmInline.step_[i];JvmInline.mix;",
                                       ";JvmInline.round_[i];JvmInline.step_[i];JvmInline.mix;"});
    ASSERT_GE(c.in, 300u) << "too few samples in JvmInline.mix to judge";
    EXPECT_GE(c.chain * 100, c.in * 90) << c.chain << " of " << c.in << " samples in mix show round;step (inlined);mix";
    std::printf("%s: %zu samples in mix, %.1f %% under round;step (inlined)\n", jdk.c_str(), c.in,
                100.0 * c.chain / c.in);
  }
}

// Samples of JvmRecursion's main thread in fib: each must go on through
// spin to main, whether fib's frame was whole or, in its prologue or
// epilogue, half built.
TEST_F(RecordJvm, FramesInterruptedInTheirPrologueOrEpilogueUnwind) {
  const std::vector<std::string> jdks = Jdks();
  if (jdks.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm (scripts/packages.sh installs openjdk-17)";
  for (const std::string& jdk : jdks) {
    SCOPED_TRACE(jdk);
    const std::string out = dir_ + "/recursion.folded";
    ASSERT_NO_FATAL_FAILURE(RecordWarm(jdk, "JvmRecursion", out, {}));
    const ChainCounts c =
        CountChains(out, ";JvmRecursion.fib;", {";JvmRecursion.main;JvmRecursion.spin;JvmRecursion.fib;"});
    ASSERT_GE(c.in, 300u) << "too few samples in JvmRecursion.fib to judge";
    EXPECT_GE(c.chain * 1000, c.in * 995) << c.chain << " of " << c.in << " samples in fib reach main";
    std::printf("%s: %zu samples in fib, %.2f %% reach main -> spin\n", jdk.c_str(), c.in, 100.0 * c.chain / c.in);
  }
}

}  // namespace
}  // namespace ehprof
