// agent/php/'s reading of a php binary: the offsets probed from its own
// code on Debian 12's php8.2 agree with what php-src 8.2's headers say
// (executor_globals.current_execute_data at 488, zend_execute_data func 24
// and prev 48, op_array.filename 152, zend_op.lineno 24, zend_string.val
// 24: RUNTIMES.md §4) and with its symbols (execute_ex's range); the
// probes refuse code that does not chain; a file with no VM is no PHP.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "agent/php/php_binary.h"
#include "agent/php/php_probe.h"
#include "agent/php/php_vm_parts.h"
#include "unwind_tables/cfi_functions.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

constexpr char kPhp[] = "/usr/bin/php8.2";

TEST(PhpBinary, ProbesDebianPhp82) {
  if (access(kPhp, R_OK) != 0) GTEST_SKIP() << kPhp << " is not installed (php8.2-cli)";
  auto elf = ElfFile::Open(kPhp);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto bin = InspectPhpBinary(*elf, kPhp);
  ASSERT_TRUE(bin.ok()) << bin.status();
  ASSERT_TRUE(bin->has_value());
  const PhpBinary& b = **bin;
  EXPECT_EQ(b.version.substr(0, 4), "8.2.");
  EXPECT_EQ(b.vm_kind, 4);  // ZEND_VM_KIND_HYBRID
  EXPECT_GT(b.vm_end - b.vm_begin, 4096u);
  EXPECT_NE(b.executor_globals, 0u);
  const PhpLayout& l = b.layout;
  EXPECT_EQ(l.current_execute_data, 488u);
  EXPECT_EQ(l.ex_opline, 0u);
  EXPECT_EQ(l.ex_func, 24u);
  EXPECT_EQ(l.ex_call_info, 40u);
  EXPECT_EQ(l.ex_prev, 48u);
  EXPECT_EQ(l.fn_filename, 152u);
  EXPECT_EQ(l.fn_line_start, 160u);
  EXPECT_EQ(l.op_lineno, 24u);
  EXPECT_EQ(l.fn_opcodes, 88u);  // op_array.opcodes
  EXPECT_EQ(l.str_len, 16u);
  EXPECT_EQ(l.str_val, 24u);
  EXPECT_EQ(l.reg_ex, 14);
  EXPECT_EQ(l.reg_opline, 15);
  EXPECT_EQ(l.jit_resume, b.vm_begin + 0x45);  // execute_ex's `jmp *(%r15)`
  const ehp_php_proc p = PhpProcFor(b, 0x1000);
  EXPECT_EQ(p.vm_begin[0], b.vm_begin + 0x1000);
  EXPECT_EQ(p.current_execute_data, b.executor_globals + 0x1000 + 488);
  EXPECT_EQ(p.vm_begin[1], 0u);
}

// execute_ex.cold (a range of its own, no symbol in Debian's stripped
// php8.2): found from execute_ex's jumps and the file's FDEs, and judged
// by objdump's disassembly of execute_ex: every jump it decodes out of
// execute_ex lands in the part found (GCC's code leaves the VM only for
// its cold part).
TEST(PhpBinary, FindsExecuteExColdPart) {
  if (access(kPhp, R_OK) != 0) GTEST_SKIP() << kPhp << " is not installed (php8.2-cli)";
  if (std::system("command -v objdump >/dev/null") != 0) GTEST_SKIP() << "objdump is not installed";
  auto elf = ElfFile::Open(kPhp);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto bin = InspectPhpBinary(*elf, kPhp);
  ASSERT_TRUE(bin.ok() && bin->has_value());
  const PhpBinary& b = **bin;
  ASSERT_EQ(b.vm_parts.size(), 1u);
  const auto [lo, hi] = b.vm_parts[0];
  EXPECT_TRUE(hi <= b.vm_begin || lo >= b.vm_end);
  auto cfi = CfiFunctions::FromElf(*elf);
  ASSERT_TRUE(cfi.ok());
  auto fde = cfi->Find(lo);
  ASSERT_TRUE(fde.has_value());
  EXPECT_EQ(fde->begin, lo);  // a whole FDE
  EXPECT_EQ(fde->end, hi);
  const std::string cmd = absl::StrFormat("objdump -d --no-show-raw-insn --start-address=0x%x --stop-address=0x%x %s",
                                          b.vm_begin, b.vm_end, kPhp);
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[512];
  size_t out = 0, in_part = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long long at = 0, target = 0;
    char op[16];
    if (sscanf(line, " %llx: %15s %llx", &at, op, &target) != 3 || op[0] != 'j') continue;
    if (target >= b.vm_begin && target < b.vm_end) continue;
    ++out;
    in_part += target >= lo && target < hi;
  }
  pclose(f);
  EXPECT_GE(out, 2u);
  EXPECT_EQ(in_part, out);
  const ehp_php_proc p = PhpProcFor(b, 0x1000);
  EXPECT_EQ(p.vm_begin[2], lo + 0x1000);
  EXPECT_EQ(p.vm_end[2], hi + 0x1000);
  EXPECT_EQ(p.vm_begin[3], 0u);
}

TEST(PhpProbe, VmPartsNeedTwoJumpsInside) {
  // jne to 0x1120 and jmp to 0x1180: two jumps into [0x1100, 0x1200).
  std::vector<uint8_t> code = {0x0f, 0x85, 0x1a, 0x01, 0x00, 0x00, 0xe9, 0x75, 0x01, 0x00, 0x00};
  const CfiFunctions cfi = CfiFunctions::FromRanges({{0x1000, 0x100b}, {0x1100, 0x1200}, {0x1300, 0x1400}});
  auto parts = FindVmParts(code, 0x1000, cfi, 2);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].first, 0x1100u);
  EXPECT_EQ(parts[0].second, 0x1200u);
  // One jump only: none.
  code[6] = 0x90;
  EXPECT_TRUE(FindVmParts(code, 0x1000, cfi, 2).empty());
}

TEST(PhpBinary, NoVmIsNoPhp) {
  auto elf = ElfFile::Open("/bin/true");
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto bin = InspectPhpBinary(*elf, "/bin/true");
  ASSERT_TRUE(bin.ok()) << bin.status();
  EXPECT_FALSE(bin->has_value());
}

TEST(PhpProbe, CurrentExecuteDataNeedsTheGlobals) {
  // lea 0x100(%rip),%rax; cmpq $0,0x1e8(%rax); setne %al; ret
  std::vector<uint8_t> code = {0x48, 0x8d, 0x05, 0x00, 0x01, 0x00, 0x00, 0x48, 0x83, 0xb8,
                               0xe8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x95, 0xc0, 0xc3};
  EXPECT_EQ(ProbeCurrentExecuteData(code, 0x1000, 0x1107), 488u);
  EXPECT_FALSE(ProbeCurrentExecuteData(code, 0x1000, 0x2000).has_value());  // another global
}

TEST(PhpProbe, FilenameLoopMustChain) {
  // mov 0x1e8(%rdx),%rax; mov 0x18(%rax),%rdx; mov 0x30(%rax),%rax; mov 0x98(%rdx),%rax
  std::vector<uint8_t> code = {0x48, 0x8b, 0x82, 0xe8, 0x01, 0x00, 0x00, 0x48, 0x8b, 0x50, 0x18,
                               0x48, 0x8b, 0x40, 0x30, 0x48, 0x8b, 0x82, 0x98, 0x00, 0x00, 0x00};
  auto loop = ProbeFilenameLoop(code, 488);
  ASSERT_TRUE(loop.has_value());
  EXPECT_EQ(loop->func, 24u);
  EXPECT_EQ(loop->prev, 48u);
  EXPECT_EQ(loop->filename, 152u);
  // The filename load from a register no func load wrote: no answer.
  code[17] = 0x81;  // mov 0x98(%rcx),%rax
  EXPECT_FALSE(ProbeFilenameLoop(code, 488).has_value());
  EXPECT_FALSE(ProbeFilenameLoop(code, 512).has_value());
}

TEST(PhpProbe, TruncatedCodeFindsNothing) {
  std::vector<uint8_t> code = {0x48, 0x8b};
  EXPECT_TRUE(FindLoads(code).empty());
  EXPECT_FALSE(ProbeLineno(code, 24).has_value());
  EXPECT_FALSE(ProbeStringVal(code).has_value());
  EXPECT_FALSE(ProbeVmRegisters(code));
}

}  // namespace
}  // namespace ehprof
