#include "agent/perl/perl_binary.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "agent/perl/perl_probe.h"

namespace ehprof {

namespace {

struct Sym {
  uint64_t addr = 0, size = 0;
  uint32_t index = 0;  // in .dynsym (relocations name symbols by it)
};

struct Symbols {
  std::optional<Sym> runops, context, leavesub, ckwarn, caller_cx, revision, version, subversion;
};

void ReadSymbols(const ElfFile& elf, Symbols* out) {
  auto syms = elf.Section(".dynsym");
  auto strs = elf.Section(".dynstr");
  if (!syms.ok() || !*syms || !strs.ok() || !*strs) return;
  std::span<const uint8_t> s = (*syms)->data, str = (*strs)->data;
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, s.data() + at, sizeof(sym));
    if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str.size()) continue;
    const char* p = reinterpret_cast<const char*>(str.data()) + sym.st_name;
    std::string_view name(p, strnlen(p, str.size() - sym.st_name));
    Sym v{sym.st_value, sym.st_size, static_cast<uint32_t>(at / sizeof(Elf64_Sym))};
    if (name == "Perl_runops_standard") out->runops = v;
    else if (name == "PL_current_context" && ELF64_ST_TYPE(sym.st_info) == STT_TLS) out->context = v;
    else if (name == "Perl_pp_leavesub") out->leavesub = v;
    else if (name == "Perl_ckwarn") out->ckwarn = v;
    else if (name == "Perl_caller_cx") out->caller_cx = v;
    else if (name == "PL_revision") out->revision = v;
    else if (name == "PL_version") out->version = v;
    else if (name == "PL_subversion") out->subversion = v;
  }
}

// PL_current_context's GOT pair: the R_X86_64_DTPMOD64 slot and DTPOFF64.
bool FindTlsRelocs(const ElfFile& elf, const Sym& sym, uint64_t* modid_slot, int64_t* offset) {
  auto rela = elf.Section(".rela.dyn");
  if (!rela.ok() || !*rela) return false;
  std::span<const uint8_t> d = (*rela)->data;
  bool mod = false, off = false;
  for (size_t at = 0; at + sizeof(Elf64_Rela) <= d.size(); at += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    std::memcpy(&r, d.data() + at, sizeof(r));
    if (ELF64_R_SYM(r.r_info) != sym.index) continue;
    if (ELF64_R_TYPE(r.r_info) == R_X86_64_DTPMOD64) *modid_slot = r.r_offset, mod = true;
    if (ELF64_R_TYPE(r.r_info) == R_X86_64_DTPOFF64) *offset = static_cast<int64_t>(sym.addr) + r.r_addend, off = true;
  }
  return mod && off;
}

std::optional<std::span<const uint8_t>> Code(const ElfFile& elf, const std::optional<Sym>& s) {
  if (!s || s->size == 0 || s->size > 8192) return std::nullopt;
  return elf.BytesAtVaddr(s->addr, s->size);
}

// The walk's offsets from the code of Perl_ckwarn (PL_curcop),
// Perl_pp_leavesub (stackinfo, context) and Perl_caller_cx (si_prev).
absl::Status ProbeLayout(const ElfFile& elf, const Symbols& syms, ehp_perl_proc* p) {
  auto ckwarn = Code(elf, syms.ckwarn);
  auto leavesub = Code(elf, syms.leavesub);
  auto caller = Code(elf, syms.caller_cx);
  if (!ckwarn || !leavesub || !caller) return absl::NotFoundError("Perl_ckwarn, Perl_pp_leavesub or Perl_caller_cx missing");
  auto curcop = ProbeCurcop(*ckwarn);
  if (!curcop) return absl::NotFoundError("PL_curcop not found in Perl_ckwarn's code");
  auto o = ProbeLeavesub(*leavesub, *curcop);
  if (!o) return absl::NotFoundError("the context layout not found in Perl_pp_leavesub's code");
  auto prev = ProbeSiPrev(*caller, o->curstackinfo);
  if (!prev) return absl::NotFoundError("si_prev not found in Perl_caller_cx's code");
  // Every field the walk reads within the bytes it reads of its struct.
  if (o->si_cxstack + 8 > EHP_PERL_SI_READ || *prev + 8 > EHP_PERL_SI_READ || o->si_cxix + 4 > EHP_PERL_SI_READ ||
      o->cx_oldcop + 8 > EHP_PERL_CX_READ || o->cx_cv + 8 > EHP_PERL_CX_READ || o->cx_retop + 8 > EHP_PERL_CX_READ ||
      o->cx_size < EHP_PERL_CX_READ || o->cx_size > 256 || *curcop > 0xffff || o->curstackinfo > 0xffff) {
    return absl::FailedPreconditionError(absl::StrCat("offsets out of the walk's reach (context size ", o->cx_size,
                                                      ", cv at ", o->cx_cv, ")"));
  }
  p->i_curstackinfo = static_cast<uint16_t>(o->curstackinfo);
  p->i_curcop = static_cast<uint16_t>(*curcop);
  p->si_cxstack = static_cast<uint16_t>(o->si_cxstack);
  p->si_prev = static_cast<uint16_t>(*prev);
  p->si_cxix = static_cast<uint16_t>(o->si_cxix);
  p->cx_size = static_cast<uint16_t>(o->cx_size);
  p->cx_oldcop = static_cast<uint16_t>(o->cx_oldcop);
  p->cx_retop = static_cast<uint16_t>(o->cx_retop);
  p->cx_cv = static_cast<uint16_t>(o->cx_cv);
  // COP: BASEOP (4 words, then op_type's 16 bits, op_flags, op_private),
  // then cop_line: its layout since 5.22; the tracker checks the lines it
  // reads against the files they name.
  p->cop_line = 0x24;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<PerlBinary>> InspectPerlBinary(const ElfFile& elf, const std::string& path) {
  Symbols syms;
  ReadSymbols(elf, &syms);
  if (!syms.runops) return std::nullopt;
  auto fail = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": a Perl ehprof cannot read: ", why));
  };
  if (elf.machine() != EM_X86_64) return fail("not x86-64 (the Perl walk reads x86-64's fsbase)");
  if (!syms.context) return fail("no PL_current_context TLS variable (a Perl without ithreads, or older than 5.36)");
  PerlBinary out;
  out.path = path;
  if (syms.revision && syms.version && syms.subversion) {
    auto r = elf.BytesAtVaddr(syms.revision->addr, 1), v = elf.BytesAtVaddr(syms.version->addr, 1),
         s = elf.BytesAtVaddr(syms.subversion->addr, 1);
    if (r && v && s) out.version = absl::StrCat((*r)[0], ".", (*v)[0], ".", (*s)[0]);
  }
  if (syms.runops->size == 0 || syms.runops->size > 4096) return fail("Perl_runops_standard has no sane size");
  out.runops_begin = syms.runops->addr;
  out.runops_end = syms.runops->addr + syms.runops->size;
  // A perl executable with the interpreter linked in (Debian's /usr/bin/perl)
  // keeps PL_current_context in its own TLS block, module 1 to glibc.
  bool executable = false;
  for (const ElfSegment& seg : elf.segments()) executable |= seg.type == PT_INTERP;
  if (executable) {
    out.tls_offset = static_cast<int64_t>(syms.context->addr);
  } else if (!FindTlsRelocs(elf, *syms.context, &out.tls_modid_slot, &out.tls_offset)) {
    return fail("PL_current_context's TLS slot not found (no DTPMOD64 relocation for it)");
  }
  if (absl::Status st = ProbeLayout(elf, syms, &out.layout); !st.ok()) return fail(st.message());
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) out.loads.push_back(seg);
  }
  return out;
}

}  // namespace ehprof
