#include "agent/ruby/ruby_binary.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "agent/ruby/ruby_code_probe.h"
#include "elf/elf_symbols.h"
#include "unwind_tables/cfi_functions.h"

namespace ehprof {

namespace {

using Sym = ElfSymbol;

struct Symbols {
  std::optional<Sym> vm_exec, current_ec, next_cfp, id2str, global_symbols, api_version;
  // 3.3 as Debian 13 builds it exports none of the first three: these lead to them.
  std::optional<Sym> iseq_eval_main, profile_frames, thread_current;
  std::optional<Sym> class_vars[3];  // rb_cObject, rb_cModule, rb_cString
};

void ReadSymbols(const ElfFile& elf, std::string_view table, std::string_view strings, Symbols* out) {
  ForEachDefinedSymbol(elf, table, strings, [&](const ElfSymbol& sym) {
    const std::string_view name = sym.name;
    const Sym& v = sym;
    if (name == "rb_vm_exec") out->vm_exec = v;
    else if (name == "ruby_current_ec" && sym.type == STT_TLS) out->current_ec = v;
    else if (name == "rb_vm_get_ruby_level_next_cfp") out->next_cfp = v;
    else if (name == "rb_id2str") out->id2str = v;
    else if (name == "ruby_global_symbols") out->global_symbols = v;
    else if (name == "ruby_api_version") out->api_version = v;
    else if (name == "rb_iseq_eval_main") out->iseq_eval_main = v;
    else if (name == "rb_profile_frames") out->profile_frames = v;
    else if (name == "rb_thread_current") out->thread_current = v;
    else if (name == "rb_cObject") out->class_vars[0] = v;
    else if (name == "rb_cModule") out->class_vars[1] = v;
    else if (name == "rb_cString") out->class_vars[2] = v;
  });
}

// The largest function that code at [addr, addr + size) calls directly,
// looking depth calls deep (the callers on the way under 4 KiB).
std::optional<FunctionRange> LargestCallee(const ElfFile& elf, const CfiFunctions& fdes, uint64_t addr, uint64_t size,
                                           int depth) {
  auto code = elf.BytesAtVaddr(addr, size);
  if (!code) return std::nullopt;
  std::optional<FunctionRange> best;
  for (uint64_t target : BranchTargets(*code, addr, /*calls_only=*/depth == 1)) {
    auto f = fdes.Find(target);
    if (!f || f->begin != target || target == addr) continue;
    std::optional<FunctionRange> c = f;
    if (depth > 1 && f->end - f->begin < 4096) c = LargestCallee(elf, fdes, f->begin, f->end - f->begin, depth - 1);
    if (c && (!best || c->end - c->begin > best->end - best->begin)) best = c;
  }
  return best;
}

// vm_exec_core, the VM loop: the largest function rb_vm_exec calls, or
// (3.3, whose vm_exec is static) the largest that rb_iseq_eval_main's
// callees call; far larger than the rest of the VM's functions.
std::optional<FunctionRange> FindVmLoop(const ElfFile& elf, const CfiFunctions& fdes, const Symbols& syms) {
  std::optional<FunctionRange> best;
  if (syms.vm_exec) best = LargestCallee(elf, fdes, syms.vm_exec->value, syms.vm_exec->size, 1);
  else if (syms.iseq_eval_main) best = LargestCallee(elf, fdes, syms.iseq_eval_main->value, syms.iseq_eval_main->size, 2);
  if (!best || best->end - best->begin < 4096) return std::nullopt;
  return best;
}

// global_symbols from the function rb_id2str ends in (lookup_id_str): its
// first 32-bit compare of a global is `id > last_id`, and the global it
// then loads just after last_id is the ids Array.
absl::Status FindGlobalSymbols(const ElfFile& elf, const CfiFunctions& fdes, const Symbols& syms, RubyBinary* out) {
  if (syms.global_symbols) {  // rb_symbols_t: last_id, str_sym, ids
    out->symbols_last_id = syms.global_symbols->value;
    out->symbols_ids = syms.global_symbols->value + 16;
    return absl::OkStatus();
  }
  if (!syms.id2str) return absl::NotFoundError("no rb_id2str symbol");
  auto code = elf.BytesAtVaddr(syms.id2str->value, syms.id2str->size);
  if (!code) return absl::NotFoundError("rb_id2str lies outside the file");
  std::vector<uint64_t> funcs = {syms.id2str->value};
  for (uint64_t t : BranchTargets(*code, syms.id2str->value, false)) funcs.push_back(t);
  for (uint64_t f : funcs) {
    auto range = fdes.Find(f);
    if (!range || range->begin != f) continue;
    auto body = elf.BytesAtVaddr(f, std::min<uint64_t>(range->end - f, 256));
    if (!body) continue;
    std::optional<uint64_t> last_id;
    for (const RipRef& r : RipRefs(*body, f)) {
      if (!last_id && r.use == 'c') last_id = r.addr;
      else if (last_id && r.use == 'm' && r.addr > *last_id && r.addr <= *last_id + 24) {
        out->symbols_last_id = *last_id;
        out->symbols_ids = r.addr;
        return absl::OkStatus();
      }
    }
  }
  return absl::NotFoundError("global_symbols not found in the code rb_id2str runs");
}

// The control frame's size from the loop that steps through them:
// rb_vm_get_ruby_level_next_cfp's, else rb_profile_frames' (or the function
// it jumps to).
absl::Status ProbeLayout(const ElfFile& elf, const CfiFunctions& fdes, const Symbols& syms, ehp_ruby_proc* p) {
  std::vector<FunctionRange> funcs;
  for (const std::optional<Sym>& s : {syms.next_cfp, syms.profile_frames}) {
    if (!s) continue;
    funcs.push_back({s->value, s->value + s->size});
    auto code = elf.BytesAtVaddr(s->value, s->size);
    if (!code) continue;
    for (uint64_t t : BranchTargets(*code, s->value, false)) {
      if (auto f = fdes.Find(t); f && f->begin == t) funcs.push_back(*f);
    }
  }
  uint32_t size = 0;
  for (const FunctionRange& f : funcs) {
    auto code = elf.BytesAtVaddr(f.begin, std::min<uint64_t>(f.end - f.begin, 4096));
    if (code && (size = CfpSizeFromCode(*code))) break;
  }
  if (size == 0) return absl::NotFoundError("no control frame size in the code that walks control frames");
  // rb_execution_context_t starts {vm_stack, vm_stack_size, cfp} and
  // rb_control_frame_t {pc, sp, iseq, self, ep} since Ruby 2.5; the BPF
  // walk checks each cfp against vm_stack and the end its size gives.
  p->ec_vm_stack = 0;
  p->ec_vm_stack_size = 8;
  p->ec_cfp = 16;
  p->cfp_size = static_cast<uint16_t>(size);
  p->cfp_pc = 0;
  p->cfp_iseq = 16;
  p->cfp_ep = 32;
  p->iseq_body = 16;    // rb_iseq_t {flags, wrapper, body}
  p->body_encoded = 8;  // rb_iseq_constant_body {type, iseq_size, iseq_encoded}
  return absl::OkStatus();
}

// ruby_current_ec's TLS slot when it is not exported: the GOT pair
// rb_thread_current (GET_EC()) hands __tls_get_addr, whose first word the
// dynamic linker sets to libruby's module id (a DTPMOD64 relocation) and
// whose second holds the offset.
bool TlsFromCode(const ElfFile& elf, const Symbols& syms, RubyBinary* out) {
  if (!syms.thread_current) return false;
  auto code = elf.BytesAtVaddr(syms.thread_current->value, syms.thread_current->size);
  auto t = code ? TlsAccessFromCode(*code, syms.thread_current->value) : std::nullopt;
  auto rela = elf.Section(".rela.dyn");
  auto pair = t ? elf.BytesAtVaddr(t->got, 16) : std::nullopt;
  if (!t || !pair || !rela.ok() || !*rela) return false;
  std::span<const uint8_t> d = (*rela)->data;
  for (size_t at = 0; at + sizeof(Elf64_Rela) <= d.size(); at += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    std::memcpy(&r, d.data() + at, sizeof(r));
    if (r.r_offset != t->got || ELF64_R_TYPE(r.r_info) != R_X86_64_DTPMOD64 || ELF64_R_SYM(r.r_info) != 0) continue;
    int64_t off;
    std::memcpy(&off, pair->data() + 8, 8);
    out->tls_modid_slot = t->got;
    out->tls_offset = off + t->disp;
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::optional<RubyBinary>> InspectRubyBinary(const ElfFile& elf, const std::string& path) {
  Symbols syms;
  ReadSymbols(elf, ".dynsym", ".dynstr", &syms);
  const std::optional<Sym> dyn_ec = syms.current_ec;
  ReadSymbols(elf, ".symtab", ".strtab", &syms);
  auto fail = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": a Ruby ehprof cannot read: ", why));
  };
  // libruby: rb_vm_exec and ruby_current_ec exported (3.1), or its public
  // API only (3.3 as Debian 13 builds it), ruby_api_version in both.
  if (!(syms.vm_exec && syms.current_ec) && !syms.api_version) return std::nullopt;
  if (!syms.vm_exec && !syms.iseq_eval_main) return fail("neither rb_vm_exec nor rb_iseq_eval_main exported");
  if (elf.machine() != EM_X86_64) return fail("not x86-64 (the Ruby walk reads x86-64's fsbase)");
  RubyBinary out;
  out.path = path;
  if (syms.api_version) {
    if (auto v = elf.BytesAtVaddr(syms.api_version->value, 12)) {
      int32_t ver[3];
      std::memcpy(ver, v->data(), sizeof(ver));
      out.version = absl::StrCat(ver[0], ".", ver[1]);
    }
  }
  auto fdes = CfiFunctions::FromElf(elf);
  if (!fdes.ok()) return fail(fdes.status().message());
  auto vm = FindVmLoop(elf, *fdes, syms);
  if (!vm) return fail("vm_exec_core not found among the functions rb_vm_exec or rb_iseq_eval_main call");
  out.vm_begin = vm->begin;
  out.vm_end = vm->end;
  // libruby's TLS: the module id the dynamic linker gave it is read per
  // process from this slot. (A ruby executable with the VM linked in keeps
  // ruby_current_ec in its own static TLS: not read.)
  const std::optional<TlsGotPair> pair = dyn_ec ? FindTlsGotPair(elf, *dyn_ec) : std::nullopt;
  if (pair) {
    out.tls_modid_slot = pair->modid_slot;
    out.tls_offset = pair->offset;
  } else if (!TlsFromCode(elf, syms, &out)) {
    return fail("ruby_current_ec's TLS slot not found (no DTPMOD64 relocation for it; a static ruby?)");
  }
  if (absl::Status st = FindGlobalSymbols(elf, *fdes, syms, &out); !st.ok()) return fail(st.message());
  if (absl::Status st = ProbeLayout(elf, *fdes, syms, &out.layout); !st.ok()) return fail(st.message());
  for (int i = 0; i < 3; ++i) out.class_vars[i] = syms.class_vars[i] ? syms.class_vars[i]->value : 0;
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) out.loads.push_back(seg);
  }
  return out;
}

}  // namespace ehprof
