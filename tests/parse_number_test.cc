// Numbers from text a user controls never throw (base/parse_number.h), and
// an exception that does escape a thread's work is caught and said
// (base/guarded.h).
#include "base/parse_number.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "agent/python/python_binary.h"
#include "base/guarded.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(ParseUnsigned, TheWholeTextAsOneNumberThatFits) {
  EXPECT_EQ(ParseUnsigned<int>("12"), 12);
  EXPECT_EQ(ParseUnsigned<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseUnsigned<uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseUnsigned<int>("2147483648"), std::nullopt);
  EXPECT_EQ(ParseUnsigned<int>("99999999999"), std::nullopt);
  EXPECT_EQ(ParseUnsigned<uint8_t>("256"), std::nullopt);
  EXPECT_EQ(ParseUnsigned<unsigned>("0755", 8), 0755u);
  EXPECT_EQ(ParseUnsigned<unsigned>("0758", 8), std::nullopt);
  EXPECT_EQ(ParseUnsigned<uint64_t>("7f38b0ec7600", 16), 0x7f38b0ec7600u);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "x"}) {
    EXPECT_EQ(ParseUnsigned<int>(bad), std::nullopt) << bad;
  }
}

TEST(ConsumeDecimal, TheDigitsAtTheStart) {
  std::string_view s = "6.1.0-rc1";
  EXPECT_EQ(ConsumeDecimal<int>(&s), 6);
  EXPECT_EQ(s, ".1.0-rc1");
  EXPECT_EQ(ConsumeDecimal<int>(&s), std::nullopt);  // no digit
  s = "99999999999999999999.1";
  EXPECT_EQ(ConsumeDecimal<int>(&s), std::nullopt);  // too many
  EXPECT_EQ(s, ".1");
}

// The file name is the user's: a program named python3.99999999999 that
// has the interpreter's symbols once aborted the agent (std::stoi threw).
TEST(MinorFromFileName, AnyNameGivesAVersionOrZero) {
  EXPECT_EQ(MinorFromFileName("/usr/bin/python3.10"), 10);
  EXPECT_EQ(MinorFromFileName("/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0"), 10);
  EXPECT_EQ(MinorFromFileName("/opt/python3.x/bin/python3.9d"), 9);
  EXPECT_EQ(MinorFromFileName("/tmp/python3.99999999999"), 0);
  EXPECT_EQ(MinorFromFileName("/tmp/python3.2147483648"), 0);
  EXPECT_EQ(MinorFromFileName("/tmp/python3.256"), 0);
  EXPECT_EQ(MinorFromFileName("/tmp/python3."), 0);
  EXPECT_EQ(MinorFromFileName("/tmp/python3.x"), 0);
  EXPECT_EQ(MinorFromFileName("/usr/bin/python3.10/../python"), 0);
  EXPECT_EQ(MinorFromFileName(""), 0);
}

TEST(Guarded, TheBodysStatusOrTheExceptionAsAnError) {
  EXPECT_TRUE(Guarded("test", "nothing", [] { return absl::OkStatus(); }).ok());
  EXPECT_EQ(Guarded("test", "nothing", [] { return absl::NotFoundError("x"); }).code(),
            absl::StatusCode::kNotFound);
  const uint64_t before = GuardedExceptions();
  const absl::Status st = Guarded("the test's worker", "that item is dropped", []() -> absl::Status {
    throw std::out_of_range("stoi");
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(st.message(), "the test's worker: stoi");
  const absl::Status odd = Guarded("the test's worker", "again", []() -> absl::Status { throw 7; });
  EXPECT_EQ(odd.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(GuardedExceptions(), before + 2);
}

// Said once per place on stderr, printable.
TEST(Guarded, SaysEachPlaceOnce) {
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    (void)Guarded("place \x1b[2J", "going on", []() -> absl::Status { throw std::runtime_error("bad\n"); });
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "ehprof: internal error in place \\x1b[2J: bad\\x0a (going on)\n");
}

}  // namespace
}  // namespace ehprof
