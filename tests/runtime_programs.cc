#include "tests/runtime_programs.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof::testing {
namespace {

pid_t Started(pid_t pid) {
  EXPECT_GT(pid, 0);
  // Its runtime up and its loop running, as a service one attaches to.
  if (pid > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
  return pid;
}

}  // namespace

bool HaveTestJdk() { return access((std::string(kTestJdk) + "/bin/javac").c_str(), X_OK) == 0; }

pid_t StartJvmWaits(const std::string& dir, int seconds) {
  const std::string javac = std::string(kTestJdk) + "/bin/javac -d " + dir + " " + SourcePath("testdata/JvmWaits.java");
  if (std::system(javac.c_str()) != 0) {
    ADD_FAILURE() << javac;
    return -1;
  }
  return Started(SpawnProgram({std::string(kTestJdk) + "/bin/java", "-cp", dir, "JvmWaits", std::to_string(seconds)}));
}

pid_t StartNodeWaits(int seconds) {
  return Started(SpawnProgram({"/usr/bin/node", SourcePath("testdata/nodewaits.js"), std::to_string(seconds)}));
}

void KillProgram(pid_t* pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  *pid = -1;
}

}  // namespace ehprof::testing
