// agent/perl/perl_binary.h on Debian 12's perl 5.36, both builds of it:
// libperl.so.5.36 (libperl's TLS through a DTPMOD64 GOT pair) and
// /usr/bin/perl (the interpreter linked in, its TLS the executable's own):
// two builds of one source, compiled apart, whose code the probes read
// to the same context layout.
#include "agent/perl/perl_binary.h"

#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

constexpr char kLib[] = "/usr/lib/x86_64-linux-gnu/libperl.so.5.36";
constexpr char kExe[] = "/usr/bin/perl";

std::optional<PerlBinary> Inspect(const char* path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.status();
  if (!elf.ok()) return std::nullopt;
  auto b = InspectPerlBinary(*elf, path);
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok() || !*b) return std::nullopt;
  return **b;
}

TEST(PerlBinary, BothBuildsOfDebian12Perl) {
  if (access(kLib, R_OK) != 0 || access(kExe, R_OK) != 0) GTEST_SKIP() << "Debian 12's perl 5.36 is not installed";
  auto lib = Inspect(kLib), exe = Inspect(kExe);
  ASSERT_TRUE(lib && exe);
  EXPECT_EQ(lib->version, "5.36.0");
  EXPECT_NE(lib->tls_modid_slot, 0u);
  EXPECT_EQ(exe->tls_modid_slot, 0u);
  const ehp_perl_proc &a = lib->layout, &b = exe->layout;
  EXPECT_GE(a.cx_size, EHP_PERL_CX_READ);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0) << "the two builds' layouts differ";
}

}  // namespace
}  // namespace ehprof
