// Debian forky's python3.14, run in a root of that release
// (tests/debian_python_root.h), read by agent/python/ without BPF: its
// offsets from the process's own _Py_DebugOffsets, a code object named
// from its memory; and the same interpreter after it patched its own
// _Py_DebugOffsets (through ctypes, before it says it is ready) refused in
// one line that says what was wrong, no frame of it named. Root: chroot.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/python/python_tracker.h"
#include "gtest/gtest.h"
#include "tests/debian_python_root.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// Prints a code object's address once its patch (if any) is in place.
constexpr char kScript[] =
    "import ctypes, sys, time\n"
    "class Cls:\n"
    "    def method(self):\n"
    "        return 1\n"
    "at, data = int(sys.argv[1]), bytes.fromhex(sys.argv[2])\n"
    "if data:\n"
    "    rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))\n"
    "    ctypes.memmove(rt + at, data, len(data))\n"
    "print(id(Cls.method.__code__), flush=True)\n"
    "time.sleep(60)\n";

struct Child {
  pid_t pid = -1;
  uint64_t code = 0;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

class Python314 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (getuid() != 0) GTEST_SKIP() << "chroot needs root";
    root_ = &testing::ForkyPython314();
    if (!root_->skip.empty()) GTEST_SKIP() << root_->skip;
    ASSERT_FALSE(root_->python.empty());
  }
  // python3.14 in the root, with `hex` written at _PyRuntime + at first.
  void Start(Child* c, size_t at = 0, const std::string& hex = "") {
    std::string line;
    c->pid = testing::StartReadingLine(
        {"/usr/sbin/chroot", root_->dir, root_->python, "-c", kScript, std::to_string(at), hex}, &line);
    ASSERT_GT(c->pid, 0);
    ASSERT_TRUE(absl::SimpleAtoi(line, &c->code)) << line;
  }
  const testing::DebianPythonRoot* root_ = nullptr;
};

TEST_F(Python314, OffsetsFromItsOwnDebugOffsetsNameACodeObject) {
  Child c;
  Start(&c);
  Warnings warnings;
  PythonTracker t(nullptr, &warnings);
  auto attached = t.Attach(c.pid);
  ASSERT_TRUE(attached.ok()) << attached.status();
  ASSERT_TRUE(*attached);
  auto check = t.CheckProcess(c.pid);
  ASSERT_TRUE(check.has_value());
  EXPECT_EQ(check->version, "3.14");
  // A 3.14 frame's code word is a tagged _PyStackRef: the walk clears the
  // tag; EHP_PY_FRAME drops the low bits either way.
  std::vector<uint64_t> frames = {EHP_PY_FRAME(c.code, EHP_PY_OFFSET_UNKNOWN),
                                  EHP_PY_FRAME(c.code + 64, 0)};
  t.NameFrames(c.pid, 1, &frames);
  const PythonFrameName n = t.codes().Name(frames[0]);
  EXPECT_EQ(n.qualname, "Cls.method");
  EXPECT_EQ(n.file, "<string>");
  EXPECT_EQ(n.line, 3) << "a frame not started yet is on its def line";
  EXPECT_EQ(t.codes().Name(frames[1]).qualname, "[python: unreadable code object]");
  EXPECT_TRUE(warnings.Take().empty());
}

struct Patch {
  const char* name;
  size_t at;
  std::string hex;  // little-endian bytes written at _PyRuntime + at
  const char* why;  // in the refusal
};

class Python314Patched : public Python314, public ::testing::WithParamInterface<Patch> {};

TEST_P(Python314Patched, RefusedInOneLineAndNoFrameNamed) {
  Child c;
  Start(&c, GetParam().at, GetParam().hex);
  Warnings warnings;
  PythonTracker t(nullptr, &warnings);
  auto attached = t.Attach(c.pid);
  ASSERT_FALSE(attached.ok());
  const std::string why(attached.status().message());
  EXPECT_TRUE(absl::StrContains(why, GetParam().why)) << why;
  EXPECT_TRUE(absl::StrContains(why, "python3.14")) << why;
  const std::vector<std::string> said = warnings.Take();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_FALSE(absl::StrContains(said[0], "\n")) << said[0];
  std::vector<uint64_t> frames = {EHP_PY_FRAME(c.code, 0)};
  t.NameFrames(c.pid, 1, &frames);
  EXPECT_EQ(t.codes().Name(frames[0]).qualname, "[python: unreadable code object]");
}

INSTANTIATE_TEST_SUITE_P(
    Patches, Python314Patched,
    ::testing::Values(Patch{"cookie", 0, "79", "cookie"},                   // "ydebugpy"
                      Patch{"free_threaded", 16, "01", "free-threaded"},
                      Patch{"thread_state_size", 176, "0000000000000000", "PyThreadState a size of 0"},
                      Patch{"thread_id_past_size", 176 + 40, "0040000000000000", "PyThreadState field at 16384"},
                      Patch{"owner_past_frame", 248 + 40, "0002000000000000", "_PyInterpreterFrame field at 512"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ehprof
