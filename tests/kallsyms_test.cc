#include "symbolizer/kallsyms.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;

constexpr char kSample[] =
    "ffffffff81000000 T _text\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000100 t local_helper\n"
    "ffffffff81000200 T schedule\n"
    "ffffffff81000300 W weak_thing\n"
    "ffffffff81000400 D some_data\n"
    "ffffffff81000500 T after_data\n"
    "0000000000001000 A fixed_percpu_data\n"
    "ffffffffc0a01000 t mod_func\t[ext4]\n"
    "ffffffffc0a01080 T mod_export\t[ext4]\n"
    "ffffffffc0b00000 t bpf_prog_abc_handler\t[bpf]\n";

TEST(KallsymsTest, FindsTheFunctionAtOrBeforeAnAddress) {
  auto k = Kallsyms::Parse(kSample);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_FALSE(k->Find(0xffffffff80ffffff));

  auto s = k->Find(0xffffffff81000000);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "_stext");  // same address, same type: the longer name
  EXPECT_EQ(s->module, "");

  s = k->Find(0xffffffff81000250);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "schedule");
  EXPECT_EQ(s->start, 0xffffffff81000200u);

  EXPECT_EQ(k->Find(0xffffffff810001ff)->name, "local_helper");
  EXPECT_EQ(k->Find(0xffffffff81000300)->name, "weak_thing");
  // A data symbol ends the function before it.
  EXPECT_FALSE(k->Find(0xffffffff81000400));
  EXPECT_FALSE(k->Find(0xffffffff810004ff));
  EXPECT_EQ(k->Find(0xffffffff81000500)->name, "after_data");
  // Absolute symbols are not code.
  EXPECT_FALSE(k->Find(0x1000));
}

TEST(KallsymsTest, KeepsOneSixteenByteEntryPerAddressAndEachNameOnce) {
  auto k = Kallsyms::Parse(kSample);
  ASSERT_TRUE(k.ok()) << k.status();
  // 9 distinct addresses (the absolute symbol dropped; _text shares _stext's),
  // their chosen names exactly: no slack from growth.
  const std::string names = "_stext" "local_helper" "schedule" "weak_thing" "some_data" "after_data"
                            "mod_func" "mod_export" "bpf_prog_abc_handler";
  EXPECT_EQ(k->heap_bytes(), 9 * 16 + names.size());
}

TEST(KallsymsTest, ReportsModules) {
  auto k = Kallsyms::Parse(kSample);
  ASSERT_TRUE(k.ok()) << k.status();
  auto s = k->Find(0xffffffffc0a01010);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "mod_func");
  EXPECT_EQ(s->module, "ext4");
  EXPECT_EQ(s->start, 0xffffffffc0a01000u);
  s = k->Find(0xffffffffc0a010ff);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "mod_export");
  EXPECT_EQ(s->module, "ext4");
  s = k->Find(0xffffffffc0b00010);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "bpf_prog_abc_handler");
  EXPECT_EQ(s->module, "bpf");
  EXPECT_EQ(k->size(), 8u);
}

TEST(KallsymsTest, AllZeroAddressesAreAClearError) {
  auto k = Kallsyms::Parse(
      "0000000000000000 T _text\n"
      "0000000000000000 T schedule\n"
      "0000000000000000 t mod_func\t[ext4]\n",
      "/proc/kallsyms");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("/proc/kallsyms"));
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("kptr_restrict"));
}

TEST(KallsymsTest, MalformedTextIsAnError) {
  EXPECT_FALSE(Kallsyms::Parse("").ok());
  EXPECT_FALSE(Kallsyms::Parse("0000000000000000 D only_data\n").ok());
  auto k = Kallsyms::Parse("ffffffff81000000 T _text\nnot an address line\n", "sample");
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("sample:2"));
  EXPECT_FALSE(Kallsyms::Parse("ffffffff81000000 TT _text\n").ok());
  EXPECT_FALSE(Kallsyms::Parse("ffffffff8100zz00 T _text\n").ok());
}

TEST(KallsymsTest, RealKallsymsResolvesSchedule) {
  if (geteuid() != 0) GTEST_SKIP() << "kernel addresses need root";
  // The ground truth is the file itself.
  std::ifstream in("/proc/kallsyms");
  uint64_t schedule = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string addr, type, name;
    fields >> addr >> type >> name;
    if (name == "schedule" && (type == "T" || type == "t")) {
      std::from_chars(addr.data(), addr.data() + addr.size(), schedule, 16);
      break;
    }
  }
  if (schedule == 0) GTEST_SKIP() << "no visible schedule in /proc/kallsyms";
  auto k = Kallsyms::Load();
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_GT(k->size(), 1000u);
  for (uint64_t at : {schedule, schedule + 1}) {
    auto s = k->Find(at);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->name, "schedule");
    EXPECT_EQ(s->start, schedule);
    EXPECT_EQ(s->module, "");
  }
}

}  // namespace
}  // namespace ehprof
