#include "unwind_tables/init_fini_rows.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "base/status_macros.h"

namespace ehprof {
namespace {

using Bytes = std::span<const uint8_t>;

constexpr std::array<uint8_t, 4> kEndbr64 = {0xf3, 0x0f, 0x1e, 0xfa};
// glibc's crti.o / crtn.o.
constexpr std::array<uint8_t, 4> kSubRsp8 = {0x48, 0x83, 0xec, 0x08};
constexpr std::array<uint8_t, 5> kAddRsp8Ret = {0x48, 0x83, 0xc4, 0x08, 0xc3};
// musl's.
constexpr std::array<uint8_t, 1> kPushRax = {0x50};
constexpr std::array<uint8_t, 2> kPopRaxRet = {0x58, 0xc3};

bool StartsWith(Bytes b, Bytes prefix) {
  return b.size() >= prefix.size() && std::memcmp(b.data(), prefix.data(), prefix.size()) == 0;
}

bool EndsWith(Bytes b, Bytes suffix) {
  return b.size() >= suffix.size() &&
         std::memcmp(b.data() + b.size() - suffix.size(), suffix.data(), suffix.size()) == 0;
}

// The length of the instruction at the start of b when it is one that
// leaves rsp as it was and that crti.o's PREINIT check or a call placed in
// .init is made of; 0 for anything else.
size_t KnownInstruction(Bytes b) {
  if (b.empty()) return 0;
  const auto is = [&](std::initializer_list<uint8_t> head, size_t len) {
    return b.size() >= len && std::equal(head.begin(), head.end(), b.begin()) ? len : 0;
  };
  if (size_t n = is({0x48, 0x8b, 0x05}, 7)) return n;  // mov disp32(%rip),%rax
  if (size_t n = is({0x48, 0x85, 0xc0}, 3)) return n;  // test %rax,%rax
  if (size_t n = is({0x74}, 2)) return n;              // je rel8
  if (size_t n = is({0xff, 0xd0}, 2)) return n;        // call *%rax
  if (size_t n = is({0xff, 0x15}, 6)) return n;        // call *disp32(%rip)
  if (size_t n = is({0xe8}, 5)) return n;              // call rel32
  if (size_t n = is({0x90}, 1)) return n;              // nop
  if (size_t n = is({0x66, 0x90}, 2)) return n;        // xchg %ax,%ax
  if (size_t n = is({0x0f, 0x1f, 0x00}, 3)) return n;  // nopl (%rax)
  if (size_t n = is({0x0f, 0x1f, 0x40}, 4)) return n;  // nopl 0(%rax)
  return 0;
}

UnwindRule RspRule(int32_t cfa_offset) {
  return RegisterCfaRule(EHP_REG_RSP, cfa_offset, EHP_RULE_CFA_OFFSET, -8);
}

// The section's rows, or none when its code is not of that shape.
void AddRows(const ElfSection& s, std::vector<UnwindRow>* out) {
  Bytes code = s.data;
  if (s.addr == 0 || code.size() != s.size) return;
  size_t pro = StartsWith(code, kEndbr64) ? kEndbr64.size() : 0;
  Bytes rest = code.subspan(pro);
  size_t pro_len = 0, epi_len = 0;
  if (StartsWith(rest, kSubRsp8) && EndsWith(rest, kAddRsp8Ret)) {
    pro_len = kSubRsp8.size();
    epi_len = kAddRsp8Ret.size();
  } else if (StartsWith(rest, kPushRax) && EndsWith(rest, kPopRaxRet)) {
    pro_len = kPushRax.size();
    epi_len = kPopRaxRet.size();
  } else {
    return;
  }
  if (rest.size() < pro_len + epi_len) return;
  Bytes middle = rest.subspan(pro_len, rest.size() - pro_len - epi_len);
  while (!middle.empty()) {
    const size_t n = KnownInstruction(middle);
    if (n == 0) return;
    middle = middle.subspan(n);
  }
  // rsp+8 until the prologue has run, rsp+16 through the body and the
  // epilogue's first instruction, rsp+8 at the `ret`.
  const uint64_t body = s.addr + pro + pro_len, ret = s.addr + s.size - 1;
  out->push_back({s.addr, RspRule(8)});
  out->push_back({body, RspRule(16)});
  out->push_back({ret, RspRule(8)});
  out->push_back({s.addr + s.size, UnwindRule::None()});
}

}  // namespace

absl::StatusOr<std::vector<UnwindRow>> InitFiniRows(const ElfFile& elf) {
  std::vector<UnwindRow> rows;
  if (elf.arch() != Arch::kX86_64) return rows;
  std::vector<ElfSection> sections;
  for (const char* name : {".init", ".fini"}) {
    EHP_ASSIGN_OR_RETURN(auto s, elf.Section(name));
    if (s && s->type == SHT_PROGBITS && s->size > 0 && s->size <= 4096) sections.push_back(*s);
  }
  std::sort(sections.begin(), sections.end(), [](const ElfSection& a, const ElfSection& b) { return a.addr < b.addr; });
  for (const ElfSection& s : sections) {
    // Sorted and apart: a section overlapping the last rows is none of ours.
    if (!rows.empty() && s.addr < rows.back().addr) continue;
    std::vector<UnwindRow> mine;
    AddRows(s, &mine);
    if (mine.empty()) continue;
    if (!rows.empty() && rows.back().addr == s.addr) rows.pop_back();  // the last none row, where this one begins
    rows.insert(rows.end(), mine.begin(), mine.end());
  }
  return rows;
}

}  // namespace ehprof
