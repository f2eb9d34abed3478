#include "agent/perl/perl_objects.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ehprof {

namespace {

// sv.h: every SV is {any, refcnt, flags, sv_u}; the type in flags' low bits.
constexpr uint64_t kSvAny = 0, kSvFlags = 12;
constexpr uint32_t kTypeMask = 0x1f, kPvgv = 9, kPvhv = 12, kPvcv = 13;
constexpr uint32_t kSvfOok = 0x02000000;  // a stash with its aux (name) part
// cv.h's XPVCV: stash, glob (or, CVf_NAMED, the name's HEK), file, flags.
constexpr uint64_t kCvStash = 0x20, kCvGv = 0x38, kCvFile = 0x40, kCvFlags = 0x5c;
constexpr uint32_t kCvfIsXsub = 0x0008, kCvfNamed = 0x8000;
// gv.h's XPVGV: the name's HEK, the stash.
constexpr uint64_t kGvName = 0x20, kGvStash = 0x28;
// hv.h: XPVHV_WITH_AUX's aux at 0x20: the name (or names), their count.
constexpr uint64_t kHvAux = 0x20, kAuxNameCount = 0x1c;
// HEK: {hash, len, key[]}.
constexpr uint64_t kHekLen = 4, kHekKey = 8;
// cop.h (ithreads): cop_line, cop_file (a C string).
constexpr uint64_t kCopLine = 0x24, kCopFile = 0x30;
constexpr int32_t kMaxName = 1024;
constexpr size_t kMaxFile = 4096;

bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return !s.empty();
}

}  // namespace

absl::StatusOr<uint32_t> PerlObjects::SvType(uint64_t sv, uint32_t* flags) const {
  uint32_t f = 0;
  if (!sv || (sv & 7) || !mem_.Read(sv + kSvFlags, &f, sizeof(f))) {
    return absl::DataLossError(absl::StrFormat("SV at %#x unreadable", sv));
  }
  if (flags) *flags = f;
  return f & kTypeMask;
}

absl::StatusOr<std::string> PerlObjects::Hek(uint64_t hek) const {
  int32_t len = 0;
  if (!hek || !mem_.Read(hek + kHekLen, &len, sizeof(len))) return absl::DataLossError("name unreadable");
  if (len <= 0 || len > kMaxName) return absl::DataLossError(absl::StrCat("name of length ", len));
  std::string s(static_cast<size_t>(len), '\0');
  if (!mem_.Read(hek + kHekKey, s.data(), s.size()) || !Printable(s)) return absl::DataLossError("name unreadable");
  return s;
}

absl::StatusOr<std::string> PerlObjects::StashName(uint64_t hv) const {
  uint32_t flags = 0;
  auto type = SvType(hv, &flags);
  if (!type.ok()) return type.status();
  if (*type != kPvhv || !(flags & kSvfOok)) return absl::DataLossError("stash is no named hash");
  uint64_t any = 0, name = 0;
  int32_t count = 0;
  if (!mem_.ReadU64(hv + kSvAny, &any) || !mem_.ReadU64(any + kHvAux, &name) ||
      !mem_.Read(any + kHvAux + kAuxNameCount, &count, sizeof(count))) {
    return absl::DataLossError("stash unreadable");
  }
  if (count != 0 && !mem_.ReadU64(name, &name)) return absl::DataLossError("stash names unreadable");
  return Hek(name);
}

absl::StatusOr<std::string> PerlObjects::CString(uint64_t at) const {
  std::string out;
  char chunk[128];
  while (at && out.size() < kMaxFile) {
    if (!mem_.Read(at + out.size(), chunk, sizeof(chunk))) break;
    const size_t n = strnlen(chunk, sizeof(chunk));
    out.append(chunk, n);
    if (n < sizeof(chunk)) return Printable(out) ? absl::StatusOr<std::string>(out) : absl::DataLossError("file name");
  }
  return absl::DataLossError("file name unreadable or too long");
}

absl::StatusOr<PerlSub> PerlObjects::Sub(uint64_t cv) const {
  auto type = SvType(cv, nullptr);
  if (!type.ok()) return type.status();
  if (*type != kPvcv) return absl::DataLossError(absl::StrFormat("%#x is no CV (type %d)", cv, *type));
  uint64_t any = 0, gv = 0, file = 0, stash = 0;
  uint32_t cv_flags = 0;
  if (!mem_.ReadU64(cv + kSvAny, &any) || !mem_.ReadU64(any + kCvGv, &gv) || !mem_.ReadU64(any + kCvFile, &file) ||
      !mem_.Read(any + kCvFlags, &cv_flags, sizeof(cv_flags))) {
    return absl::DataLossError("CV unreadable");
  }
  PerlSub sub;
  sub.xsub = (cv_flags & kCvfIsXsub) != 0;
  absl::StatusOr<std::string> name;
  if (cv_flags & kCvfNamed) {  // a lexical sub: its own name and stash
    name = Hek(gv);
    if (!mem_.ReadU64(any + kCvStash, &stash)) return absl::DataLossError("CV stash unreadable");
  } else {
    auto gv_type = SvType(gv, nullptr);
    if (!gv_type.ok()) return gv_type.status();
    if (*gv_type != kPvgv) return absl::DataLossError("the CV's glob is no glob");
    uint64_t gv_any = 0, hek = 0;
    if (!mem_.ReadU64(gv + kSvAny, &gv_any) || !mem_.ReadU64(gv_any + kGvName, &hek) ||
        !mem_.ReadU64(gv_any + kGvStash, &stash)) {
      return absl::DataLossError("glob unreadable");
    }
    name = Hek(hek);
  }
  if (!name.ok()) return name.status();
  auto package = StashName(stash);
  if (!package.ok()) return package.status();
  sub.name = absl::StrCat(*package, "::", *name);
  if (!sub.xsub && file) {
    auto f = CString(file);
    if (f.ok()) sub.file = *f;
  }
  return sub;
}

absl::StatusOr<PerlCop> PerlObjects::Cop(uint64_t cop) const {
  uint32_t line = 0;
  uint64_t file = 0;
  if (!cop || (cop & 7) || !mem_.Read(cop + kCopLine, &line, sizeof(line)) || !mem_.ReadU64(cop + kCopFile, &file)) {
    return absl::DataLossError(absl::StrFormat("statement at %#x unreadable", cop));
  }
  auto f = CString(file);
  if (!f.ok()) return f.status();
  PerlCop c;
  c.file = *f;
  c.line = line > 0 && line < (1u << 24) ? static_cast<int32_t>(line) : -1;
  return c;
}

}  // namespace ehprof
