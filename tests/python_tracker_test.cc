// agent/python/ against a live interpreter it did not start the sampler
// for: finds the interpreter and its code fields, names a code object from
// the process's memory, and meets bad input (a non-code address, a process
// that exited, a code object that changed) with "unreadable", never a
// wrong name or a crash. No BPF: the tracker gets no map (fd -1). A code
// object freed and another allocated at its address is forced: named anew
// at the next check.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/python/python_tracker.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kPython[] = "/root/.pyenv/versions/3.12.1/bin/python3.12";

// A child python printing one code object's address, then sleeping.
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

void Start(Child* c) {
  std::string line;
  c->pid = testing::StartReadingLine({kPython, "-c",
                                      "import sys, time\n"
                                      "class Cls:\n"
                                      "    def method(self):\n"
                                      "        return 1\n"
                                      "print(id(Cls.method.__code__), flush=True)\n"
                                      "time.sleep(60)\n"},
                                     &line);
  ASSERT_GT(c->pid, 0);
  ASSERT_TRUE(absl::SimpleAtoi(line, &c->code)) << line;
}

class PythonTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  }
};

TEST_F(PythonTrackerTest, NamesACodeObjectOfALiveProcessAndSurvivesItsExit) {
  Child c;
  Start(&c);
  Warnings warnings;
  PythonTracker t(nullptr, &warnings);
  auto attached = t.Attach(c.pid);
  ASSERT_TRUE(attached.ok()) << attached.status();
  ASSERT_TRUE(*attached);
  std::vector<uint64_t> frames = {EHP_PY_FRAME(c.code, EHP_PY_OFFSET_UNKNOWN),
                                  EHP_PY_FRAME(uint64_t{0x1000}, 0),   // unmapped
                                  EHP_PY_FRAME(c.code + 64, 0),        // inside it, not an object
                                  EHP_PY_FRAME(uint64_t{0}, EHP_PY_STOP_READ_FAULT)};
  t.NameFrames(c.pid, 1, &frames);
  PythonFrameName n = t.codes().Name(frames[0]);
  EXPECT_EQ(n.qualname, "Cls.method");
  EXPECT_EQ(n.line, 3) << "a frame not started yet is on its def line";
  EXPECT_EQ(t.codes().Name(frames[1]).qualname, "[python: unreadable code object]");
  EXPECT_EQ(t.codes().Name(frames[2]).qualname, "[python: unreadable code object]");
  EXPECT_EQ(t.codes().Name(frames[3]).qualname, "[python: frame read fault]");

  // The process exits: a code object read before keeps its name, a new
  // address is unreadable.
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
  std::vector<uint64_t> later = {EHP_PY_FRAME(c.code, 0), EHP_PY_FRAME(c.code + 4096, 0)};
  t.NameFrames(c.pid, 1'000'000'000, &later);
  c.pid = -1;
  EXPECT_EQ(t.codes().Name(later[0]).qualname, "Cls.method");
  EXPECT_EQ(t.codes().Name(later[1]).qualname, "[python: unreadable code object]");
}

TEST_F(PythonTrackerTest, AnUnchangedCodeObjectKeepsItsEntryAfterTheRecheck) {
  Child c;
  Start(&c);
  ProcessMemory mem(c.pid);
  Warnings warnings;
  PythonTracker t(nullptr, &warnings);
  ASSERT_TRUE(t.Attach(c.pid).ok());
  std::vector<uint64_t> frames = {EHP_PY_FRAME(c.code, 0)};
  t.NameFrames(c.pid, 1, &frames);
  const uint32_t index = frames[0] & EHP_PY_CODE_MASK;
  ASSERT_GT(index, 1u);
  // No PyCode_Type at 0: an error, no crash.
  EXPECT_FALSE(ReadCodeFields(mem, 0, 12, 40).ok());
  std::vector<uint64_t> again = {EHP_PY_FRAME(c.code, 0)};
  t.NameFrames(c.pid, 1 + 200'000'000, &again);  // past the recheck interval
  EXPECT_EQ(again[0] & EHP_PY_CODE_MASK, index) << "unchanged: the same entry";
  EXPECT_EQ(t.codes().Name(again[0]).qualname, "Cls.method");
}

// Reads one line of the child's output.
std::string ReadLine(int fd) {
  std::string line;
  char ch;
  while (read(fd, &ch, 1) == 1 && ch != '\n') line.push_back(ch);
  return line;
}

TEST_F(PythonTrackerTest, ACodeObjectFreedAndItsAddressReusedIsNamedAnewAtTheCheck) {
  int out[2], in[2];
  ASSERT_EQ(pipe(out), 0);
  ASSERT_EQ(pipe(in), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(out[1], 1);
    dup2(in[0], 0);
    // Code objects of the same size: the allocator hands the freed one's
    // block to a later one (tried until it does; the misses are kept).
    execl(kPython, kPython, "-c",
          "import sys, time\n"
          "def make(name):\n"
          "    ns = {}\n"
          "    exec(f'def {name}(x):\\n    return x + 1\\n', ns)\n"
          "    return ns[name].__code__\n"
          "a = make('first')\n"
          "print(id(a), flush=True)\n"
          "sys.stdin.readline()\n"
          "addr = id(a)\n"
          "del a\n"
          "keep = []\n"
          "for i in range(100000):\n"
          "    b = make('again')\n"
          "    if id(b) == addr:\n"
          "        break\n"
          "    keep.append(b)\n"
          "print(id(b), flush=True)\n"
          "time.sleep(60)\n",
          nullptr);
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  uint64_t first = 0, second = 0;
  ASSERT_TRUE(absl::SimpleAtoi(ReadLine(out[0]), &first));
  Warnings warnings;
  PythonTracker t(nullptr, &warnings);
  ASSERT_TRUE(t.Attach(c.pid).ok());
  std::vector<uint64_t> before = {EHP_PY_FRAME(first, 0)};
  t.NameFrames(c.pid, 1, &before);
  EXPECT_EQ(t.codes().Name(before[0]).qualname, "first");

  ASSERT_EQ(write(in[1], "\n", 1), 1);
  ASSERT_TRUE(absl::SimpleAtoi(ReadLine(out[0]), &second));
  close(out[0]);
  close(in[1]);
  if (second != first) GTEST_SKIP() << "the allocator gave no code object the freed one's address";
  std::vector<uint64_t> after = {EHP_PY_FRAME(second, 0)};
  t.NameFrames(c.pid, 1 + 200'000'000, &after);  // past the recheck interval
  EXPECT_EQ(t.codes().Name(after[0]).qualname, "again") << "the freed object's name for its successor";
  EXPECT_NE(after[0] & EHP_PY_CODE_MASK, before[0] & EHP_PY_CODE_MASK) << "a new entry";
}

}  // namespace
}  // namespace ehprof
