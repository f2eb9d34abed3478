// A stripped program in a container, profiled from the host: its mount
// namespace and root (pivot_root, as container runtimes do) hold the
// program at a path the host does not have, its libraries as copies, and
// its debug file only inside, under /usr/lib/debug. `ehprof record -p` must
// name the functions from that debug file and the mapping as the process
// sees it, and so must `ehprof agent`. Root is needed for the namespace
// and for BPF.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::TestdataPath;

constexpr char kProgram[] = "/opt/ehprof-container-app/deep_recursion";

// Where the debug file goes inside the root.
enum class DebugLayout { kBuildId, kDebugLink };

class ContainerSymbols : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    ASSERT_FALSE(fs::exists(kProgram)) << "the host must not have the container's path";
    base_ = fs::weakly_canonical(::testing::TempDir() + "/container." + std::to_string(getpid()));
    fs::remove_all(base_);
    root_ = base_ + "/root";
    fs::create_directories(root_ + "/put_old");
    // The libraries it loads, copied to the same paths inside: other files
    // than the host's at those paths.
    const std::string ldd = testing::ShellOutput("ldd " + TestdataPath("deep_recursion.stripped"));
    const std::regex lib(R"((/\S+) \(0x)");
    for (auto it = std::sregex_iterator(ldd.begin(), ldd.end(), lib); it != std::sregex_iterator();
         ++it) {
      const std::string path = (*it)[1].str();
      fs::create_directories(fs::path(root_ + path).parent_path());
      fs::copy_file(path, root_ + path);
    }
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    if (!base_.empty()) fs::remove_all(base_);
  }

  // The stripped program at kProgram inside the root, and its debug file
  // (the unstripped build's debug sections) where `layout` puts it.
  void Install(DebugLayout layout) {
    const std::string inside = root_ + kProgram;
    fs::create_directories(fs::path(inside).parent_path());
    std::string debug;
    if (layout == DebugLayout::kBuildId) {
      auto elf = ElfFile::Open(TestdataPath("deep_recursion"));
      ASSERT_TRUE(elf.ok()) << elf.status();
      const std::string id = elf->BuildId();
      ASSERT_GT(id.size(), 2u);
      debug = absl::StrCat(root_, "/usr/lib/debug/.build-id/", id.substr(0, 2), "/", id.substr(2),
                           ".debug");
      fs::copy_file(TestdataPath("deep_recursion.stripped"), inside);
    } else {
      debug = fs::path(inside).parent_path().string() + "/.debug/deep_recursion.debug";
    }
    fs::create_directories(fs::path(debug).parent_path());
    const std::string out = testing::ShellOutput(absl::StrCat(
        "objcopy --only-keep-debug ", TestdataPath("deep_recursion"), " ", debug, " && ",
        layout == DebugLayout::kDebugLink
            ? absl::StrCat("cd ", fs::path(debug).parent_path().string(),
                           " && objcopy --add-gnu-debuglink=deep_recursion.debug ",
                           TestdataPath("deep_recursion.stripped"), " ", inside, " && ")
            : "",
        "echo done"));
    ASSERT_NE(out.find("done"), std::string::npos) << out;
    auto stripped = ElfFile::Open(inside);
    ASSERT_TRUE(stripped.ok()) << stripped.status();
    auto symtab = stripped->Section(".symtab");
    ASSERT_TRUE(symtab.ok() && !symtab->has_value()) << "the program must have no symbol table";
  }

  // Starts kProgram in its own mount namespace with root_ as its root.
  void StartInContainer() {
    const std::string root = root_;
    int ready[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    child_ = fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      // pivot_root rather than chroot: the old root unmounted, the
      // kernel names the process's files from its own root, as in a
      // container (/proc/PID/maps says kProgram, not the host's path).
      char* argv[] = {const_cast<char*>("deep_recursion"), const_cast<char*>("60"),
                      const_cast<char*>("10"), nullptr};
      if (unshare(CLONE_NEWNS) != 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          mount(root.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
          chdir(root.c_str()) != 0 || syscall(SYS_pivot_root, ".", "put_old") != 0 ||
          chdir("/") != 0 || umount2("/put_old", MNT_DETACH) != 0) {
        _exit(126);
      }
      execv(kProgram, argv);
      _exit(127);
    }
    close(ready[1]);
    char c;
    // Closed by the exec (O_CLOEXEC), or by the exit of a child that failed.
    ASSERT_EQ(read(ready[0], &c, 1), 0);
    close(ready[0]);
    const std::string maps = testing::ReadFile("/proc/" + std::to_string(child_) + "/maps");
    ASSERT_NE(maps.find(std::string(" ") + kProgram + "\n"), std::string::npos)
        << "the child did not start in its root:\n" << maps;
  }

  // A 2 s `ehprof record -p` of the child.
  void Record() {
    const std::string out = base_ + "/p.pb.gz";
    auto r = testing::RunEhprof(
        {"record", "-F", "499", "-q", "-d", "2", "-p", std::to_string(child_), "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    profiles_ = {out};
  }
  // `ehprof agent -p` on the child for about 3 s, 1 s intervals to files.
  void RunAgent() {
    const std::string dir = base_ + "/agent";
    auto r = testing::RunEhprof({"agent", "-p", std::to_string(child_), "--interval", "1",
                                 "--output-dir", dir, "--metrics-every", "0"},
                                SIGTERM, 3000);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& e : fs::directory_iterator(dir)) profiles_.push_back(e.path());
    ASSERT_FALSE(profiles_.empty()) << r.err;
  }

  // `go tool pprof ARGS` on the profiles.
  std::string Ask(const std::string& args) { return testing::GoToolPprof(args, profiles_, base_); }

  void ExpectSymbolizedAsTheProcessSeesIt() {
    const std::string top = Ask("-top -nodecount=20");
    EXPECT_TRUE(std::regex_search(top, std::regex(R"(\s[0-9.]+%\s+recurse_leaf\n)"))) << top;
    const std::string traces = Ask("-traces");
    EXPECT_TRUE(std::regex_search(traces, std::regex(R"(recurse_leaf\n(\s+recurse\n)+\s+main\n)")))
        << traces;
    // "1: 0xSTART/0xLIMIT/0xOFFSET PATH BUILDID [FN]...": the program as
    // its own root names it, never the fd ehprof read it through or the
    // host's path to the root.
    const std::string raw = Ask("-raw");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(raw, m, std::regex(R"(Mappings\n1: \S+ (\S+) (\S+) )"))) << raw;
    EXPECT_EQ(m[1].str(), kProgram) << raw;
    auto elf = ElfFile::Open(TestdataPath("deep_recursion"));
    ASSERT_TRUE(elf.ok());
    EXPECT_EQ(m[2].str(), elf->BuildId());
    EXPECT_EQ(raw.find("/proc/"), std::string::npos) << raw;
    EXPECT_EQ(raw.find(base_), std::string::npos) << raw;
  }

  std::string base_, root_;
  pid_t child_ = -1;
  std::vector<std::string> profiles_;
};

TEST_F(ContainerSymbols, NamesComeFromTheDebugFileByBuildIdInsideTheRoot) {
  ASSERT_NO_FATAL_FAILURE(Install(DebugLayout::kBuildId));
  ASSERT_NO_FATAL_FAILURE(StartInContainer());
  ASSERT_NO_FATAL_FAILURE(Record());
  ExpectSymbolizedAsTheProcessSeesIt();
}

TEST_F(ContainerSymbols, NamesComeFromTheDebugLinkedFileInsideTheRoot) {
  ASSERT_NO_FATAL_FAILURE(Install(DebugLayout::kDebugLink));
  ASSERT_NO_FATAL_FAILURE(StartInContainer());
  ASSERT_NO_FATAL_FAILURE(Record());
  ExpectSymbolizedAsTheProcessSeesIt();
}

// The agent symbolizes on its own (per interval, IntervalSymbolizer): the
// same names and mapping in its --output-dir profiles.
TEST_F(ContainerSymbols, TheAgentNamesThemToo) {
  ASSERT_NO_FATAL_FAILURE(Install(DebugLayout::kBuildId));
  ASSERT_NO_FATAL_FAILURE(StartInContainer());
  ASSERT_NO_FATAL_FAILURE(RunAgent());
  ExpectSymbolizedAsTheProcessSeesIt();
}

}  // namespace
}  // namespace ehprof
