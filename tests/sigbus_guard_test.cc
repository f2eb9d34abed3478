// The SIGBUS guard: a file truncated while ehprof reads it through a
// read-only mapping reads as zeros past its new end, counted and named
// once, instead of killing the process; any other SIGBUS still kills.
#include "base/sigbus_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mapped_range.h"
#include "base/unique_fd.h"
#include "gtest/gtest.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

class SigbusGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    InstallSigbusGuard();
    TakeSigbusGuardWarnings();  // earlier tests' files
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // As /proc/self/maps names it: no doubled slash.
    path_ = (std::filesystem::path(::testing::TempDir()) /
             absl::StrCat("sigbus_guard.", getpid(), ".",
                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .lexically_normal();
    fd_.reset(open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd_.valid());
    std::vector<char> bytes(4 * page_, 'x');
    ASSERT_EQ(write(fd_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void TearDown() override { unlink(path_.c_str()); }

  size_t page_ = 0;
  std::string path_;
  UniqueFd fd_;
};

TEST_F(SigbusGuard, ATruncatedMappingReadsAsZerosCountedAndNamedOnce) {
  MappedRange m(fd_.get(), 0, 4 * page_);
  ASSERT_NE(m.data(), nullptr);
  EXPECT_EQ(m.data()[3 * page_], 'x');
  m.DropResident();  // so that the next reads fault
  ASSERT_EQ(ftruncate(fd_.get(), static_cast<off_t>(page_)), 0);
  const uint64_t before = SigbusGuardFaults();
  EXPECT_EQ(m.data()[10], 'x');  // inside the new size: the file's bytes
  const volatile char* p = m.data();
  EXPECT_EQ(p[2 * page_], 0);
  EXPECT_EQ(p[2 * page_ + 100], 0);  // the same page: no second fault
  EXPECT_EQ(p[3 * page_ + 5], 0);
  EXPECT_EQ(SigbusGuardFaults() - before, 2u);  // one per page
  std::vector<std::string> warnings = TakeSigbusGuardWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(path_ + ": shrank while ehprof read it", 0), 0u) << warnings[0];
  EXPECT_TRUE(TakeSigbusGuardWarnings().empty());  // said once
}

TEST_F(SigbusGuard, LibelfsMappingOfATruncatedElfFileIsSurvived) {
  // An ELF file read as ElfFile reads one: elf_begin(ELF_C_READ_MMAP).
  const std::string elf_path = path_ + ".elf";
  {
    UniqueFd src(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    UniqueFd dst(open(elf_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(src.valid() && dst.valid());
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(src.get(), buf, sizeof(buf))) > 0) {
      ASSERT_EQ(write(dst.get(), buf, static_cast<size_t>(n)), n);
    }
  }
  absl::StatusOr<ElfFile> elf = ElfFile::Open(elf_path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  elf->DropResidentPages();
  ASSERT_EQ(truncate(elf_path.c_str(), 4096), 0);
  const uint64_t before = SigbusGuardFaults();
  // Section data past the new end now reads as zeros: the CFI parser
  // sees an empty or malformed section, not a crash.
  absl::StatusOr<std::optional<ElfSection>> eh = elf->Section(".eh_frame");
  if (eh.ok() && *eh) {
    uint64_t sum = 0;
    for (uint8_t b : (*eh)->data) sum += b;
    EXPECT_EQ(sum, 0u);
  }
  EXPECT_GT(SigbusGuardFaults(), before);
  std::vector<std::string> warnings = TakeSigbusGuardWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(elf_path + ": shrank", 0), 0u) << warnings[0];
  unlink(elf_path.c_str());
}

TEST_F(SigbusGuard, AWritableMappingsSigbusStillKills) {
  // Not a file ehprof reads: zeros there would hide a real bug.
  char* p = static_cast<char*>(
      mmap(nullptr, 4 * page_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(ftruncate(fd_.get(), static_cast<off_t>(page_)), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const volatile char* q = p;
    _exit(q[3 * page_] == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
  munmap(p, 4 * page_);
}

}  // namespace
}  // namespace ehprof
