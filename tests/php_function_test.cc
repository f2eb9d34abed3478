// agent/php/php_function: a zend_function read from memory (this test's
// own, laid out as Debian 12's php8.2 lays it out) named as PHP names it,
// and every lie refused with an error, never a wrong or unbounded read: a
// string that claims 2^40 bytes, a function type PHP has not, pointers to
// nowhere.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/php/php_function.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

PhpLayout Layout82() {
  PhpLayout l;
  l.fn_type = 0, l.fn_name = 8, l.fn_scope = 16, l.fn_filename = 152, l.fn_line_start = 160;
  l.ce_name = 8, l.str_len = 16, l.str_val = 24;
  return l;
}

// Structures in this process's memory, kept alive by the fixture (each
// block's bytes stay put as blocks_ grows; a reference to a block does not).
class PhpFunctionTest : public ::testing::Test {
 protected:
  uint64_t String(const std::string& text, uint64_t claimed = ~0ull) {
    auto& s = blocks_.emplace_back(24 + text.size() + 1, 0);
    const uint64_t len = claimed == ~0ull ? text.size() : claimed;
    std::memcpy(s.data() + 16, &len, 8);
    std::memcpy(s.data() + 24, text.data(), text.size());
    return reinterpret_cast<uint64_t>(s.data());
  }
  uint64_t Function(uint8_t type, uint64_t name, uint64_t scope, uint64_t file, uint32_t line = 7) {
    auto& f = blocks_.emplace_back(256, 0);
    f[0] = type;
    std::memcpy(f.data() + 8, &name, 8);
    std::memcpy(f.data() + 16, &scope, 8);
    std::memcpy(f.data() + 152, &file, 8);
    std::memcpy(f.data() + 160, &line, 4);
    return reinterpret_cast<uint64_t>(f.data());
  }
  uint64_t Class(const std::string& name) {
    const uint64_t s = String(name);
    auto& c = blocks_.emplace_back(64, 0);
    std::memcpy(c.data() + 8, &s, 8);
    return reinterpret_cast<uint64_t>(c.data());
  }
  absl::StatusOr<PhpFunction> Read(uint64_t func) { return ReadPhpFunction(mem_, Layout82(), func); }

  ProcessMemory mem_{getpid()};
  std::vector<std::vector<uint8_t>> blocks_;
};

TEST_F(PhpFunctionTest, NamesAsPhpDoes) {
  auto method = Read(Function(2, String("bar"), Class("Foo"), String("/a.php"), 12));
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ(method->name, "Foo::bar");
  EXPECT_EQ(method->file, "/a.php");
  EXPECT_EQ(method->line_start, 12);
  EXPECT_FALSE(method->internal);
  auto closure = Read(Function(2, String("{closure:/a.php:3}"), Class("Foo"), String("/a.php")));
  ASSERT_TRUE(closure.ok()) << closure.status();
  EXPECT_EQ(closure->name, "{closure}");
  auto script = Read(Function(2, 0, 0, String("/srv/index.php")));
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->name, "/srv/index.php");
  auto internal = Read(Function(1, String("array_map"), 0, String("ignored")));
  ASSERT_TRUE(internal.ok()) << internal.status();
  EXPECT_EQ(internal->name, "array_map");
  EXPECT_TRUE(internal->internal);
  EXPECT_EQ(internal->file, "");
  auto longest = Read(Function(2, String(std::string(kPhpMaxName, 'x')), 0, String("/a.php")));
  ASSERT_TRUE(longest.ok()) << longest.status();
  EXPECT_EQ(longest->name.size(), kPhpMaxName);
}

TEST_F(PhpFunctionTest, RefusesLies) {
  EXPECT_FALSE(Read(Function(2, String("big", 1ull << 40), 0, String("/a.php"))).ok());
  EXPECT_FALSE(Read(Function(2, String("f"), 0, String("/a.php", kPhpMaxFile + 1))).ok());
  EXPECT_FALSE(Read(Function(7, String("f"), 0, String("/a.php"))).ok());
  EXPECT_FALSE(Read(Function(2, 0x10, 0, String("/a.php"))).ok());
  EXPECT_FALSE(Read(Function(2, String("m"), 0x10, String("/a.php"))).ok());
  EXPECT_FALSE(Read(Function(1, 0, 0, 0)).ok());  // an internal function without a name
  EXPECT_FALSE(Read(0).ok());
  EXPECT_FALSE(Read(Function(2, String("f"), 0, String("/a.php")) + 4).ok());  // misaligned
}

}  // namespace
}  // namespace ehprof
