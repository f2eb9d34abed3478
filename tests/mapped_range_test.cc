// MappedRange: a read-only file mapping whose resident pages can be dropped
// (the agent drops its string tables' pages after each interval).
#include "base/mapped_range.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

// The resident kB of the mapping that holds `p`, from /proc/self/smaps.
int64_t ResidentKb(const void* p) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  while (std::getline(f, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream s(line);
    if (line.find('-') != std::string::npos && (s >> std::hex >> lo >> dash >> hi) && dash == '-' &&
        line.find(' ') > line.find('-')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4));
  }
  return -1;
}

TEST(MappedRange, DropResidentLeavesRssAndKeepsTheBytes) {
  char path[] = "/tmp/mapped_range_testXXXXXX";
  UniqueFd fd(mkstemp(path));
  ASSERT_TRUE(fd.valid());
  unlink(path);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<char> bytes(64 * page + 100);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / page);
  ASSERT_EQ(write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  // An offset inside a page, as a section's is.
  const uint64_t offset = page + 10;
  MappedRange m(fd.get(), offset, bytes.size() - offset);
  ASSERT_NE(m.data(), nullptr);
  uint64_t sum = 0;
  for (size_t i = 0; i < m.size(); i += page / 2) sum += static_cast<unsigned char>(m.data()[i]);
  EXPECT_GE(ResidentKb(m.data()), static_cast<int64_t>(60 * page / 1024));

  m.DropResident();
  EXPECT_EQ(ResidentKb(m.data()), 0);
  uint64_t again = 0;
  for (size_t i = 0; i < m.size(); i += page / 2) again += static_cast<unsigned char>(m.data()[i]);
  EXPECT_EQ(again, sum);
  EXPECT_EQ(std::string(m.data(), m.size()), std::string(bytes.data() + offset, bytes.size() - offset));
}

TEST(MappedRange, DropResidentOfAnEmptyRangeIsHarmless) {
  MappedRange m;
  m.DropResident();
  EXPECT_EQ(m.data(), nullptr);
}

}  // namespace
}  // namespace ehprof
