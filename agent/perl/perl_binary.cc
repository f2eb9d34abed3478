#include "agent/perl/perl_binary.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "agent/perl/perl_probe.h"
#include "elf/elf_symbols.h"

namespace ehprof {

namespace {

using Sym = ElfSymbol;

struct Symbols {
  std::optional<Sym> runops, context, leavesub, ckwarn, caller_cx, revision, version, subversion;
};

void ReadSymbols(const ElfFile& elf, Symbols* out) {
  ForEachDefinedSymbol(elf, ".dynsym", ".dynstr", [&](const ElfSymbol& sym) {
    const std::string_view name = sym.name;
    if (name == "Perl_runops_standard") out->runops = sym;
    else if (name == "PL_current_context" && sym.type == STT_TLS) out->context = sym;
    else if (name == "Perl_pp_leavesub") out->leavesub = sym;
    else if (name == "Perl_ckwarn") out->ckwarn = sym;
    else if (name == "Perl_caller_cx") out->caller_cx = sym;
    else if (name == "PL_revision") out->revision = sym;
    else if (name == "PL_version") out->version = sym;
    else if (name == "PL_subversion") out->subversion = sym;
  });
}

std::optional<std::span<const uint8_t>> Code(const ElfFile& elf, const std::optional<Sym>& s) {
  if (!s || s->size == 0 || s->size > 8192) return std::nullopt;
  return elf.BytesAtVaddr(s->value, s->size);
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
    auto r = elf.BytesAtVaddr(syms.revision->value, 1), v = elf.BytesAtVaddr(syms.version->value, 1),
         s = elf.BytesAtVaddr(syms.subversion->value, 1);
    if (r && v && s) out.version = absl::StrCat((*r)[0], ".", (*v)[0], ".", (*s)[0]);
  }
  if (syms.runops->size == 0 || syms.runops->size > 4096) return fail("Perl_runops_standard has no sane size");
  out.runops_begin = syms.runops->value;
  out.runops_end = syms.runops->value + syms.runops->size;
  // A perl executable with the interpreter linked in (Debian's /usr/bin/perl)
  // keeps PL_current_context in its own TLS block, module 1 to glibc.
  bool executable = false;
  for (const ElfSegment& seg : elf.segments()) executable |= seg.type == PT_INTERP;
  if (executable) {
    out.tls_offset = static_cast<int64_t>(syms.context->value);
  } else if (auto pair = FindTlsGotPair(elf, *syms.context)) {
    out.tls_modid_slot = pair->modid_slot;
    out.tls_offset = pair->offset;
  } else {
    return fail("PL_current_context's TLS slot not found (no DTPMOD64 relocation for it)");
  }
  if (absl::Status st = ProbeLayout(elf, syms, &out.layout); !st.ok()) return fail(st.message());
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) out.loads.push_back(seg);
  }
  return out;
}

}  // namespace ehprof
