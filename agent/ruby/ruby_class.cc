#include "agent/ruby/ruby_class.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ehprof {

namespace {

// ruby/internal/value_type.h: the type bits of RBasic's flags.
constexpr uint64_t kTypeMask = 0x1f, kTypeClass = 0x02, kTypeModule = 0x03, kTypeIclass = 0x1c;
// FL_SINGLETON is FL_USER0 or FL_USER1, as the Ruby was built.
constexpr uint64_t kSingletonCandidates = (1u << 12) | (1u << 13);
// The bytes of an RClass (and 3.3+'s rb_classext_t after it) the probe
// looks through: 3.3's classpath lies at 152.
constexpr uint32_t kScanBytes = 320;
// rb_method_entry_t {flags, defined_class, def, called_id, owner}.
constexpr uint64_t kMeDefinedClass = 8, kMeOwner = 32;

}  // namespace

absl::StatusOr<uint64_t> RubyClasses::U64(uint64_t addr) const {
  uint64_t v = 0;
  if (!mem_.ReadU64(addr, &v)) return absl::UnavailableError(absl::StrFormat("unreadable at 0x%x", addr));
  return v;
}

absl::StatusOr<std::string> RubyClasses::PathAt(uint64_t klass, uint32_t off) const {
  auto value = U64(klass + off);
  if (!value.ok()) return value.status();
  return objects_.String(*value);
}

absl::Status RubyClasses::Probe(uint64_t object_var, uint64_t module_var, uint64_t string_var) {
  auto object = U64(object_var), module = U64(module_var), string = U64(string_var);
  if (!object.ok() || !module.ok() || !string.ok()) return absl::UnavailableError("rb_cObject unreadable");
  RubyClassLayout found;
  for (uint32_t off = 16; off < kScanBytes && !found.classpath; off += 8) {
    auto a = PathAt(*object, off);
    if (!a.ok() || *a != "Object") continue;
    auto b = PathAt(*module, off), c = PathAt(*string, off);
    if (b.ok() && *b == "Module" && c.ok() && *c == "String") found.classpath = off;
  }
  if (!found.classpath) return absl::NotFoundError("no class path field (Object, Module, String) in RClass");
  auto flags = U64(*object), meta = U64(*object + 8);
  auto meta_flags = meta.ok() ? U64(*meta) : meta.status();
  if (!flags.ok() || !meta_flags.ok()) return absl::UnavailableError("Object's singleton class unreadable");
  found.singleton_flag = *meta_flags & ~*flags & kSingletonCandidates;
  if (std::popcount(found.singleton_flag) != 1) return absl::NotFoundError("no singleton flag on Object's metaclass");
  for (uint32_t off = 16; off < kScanBytes && !found.attached; off += 8) {
    auto v = U64(*meta + off);
    if (v.ok() && *v == *object && off != found.classpath) found.attached = off;
  }
  if (!found.attached) return absl::NotFoundError("Object's metaclass holds no Object");
  layout_ = found;
  return absl::OkStatus();
}

absl::StatusOr<RubyClassName> RubyClasses::Path(uint64_t klass) const {
  if (!ready()) return absl::FailedPreconditionError("class paths not probed");
  auto flags = U64(klass);
  if (!flags.ok()) return flags.status();
  RubyClassName out;
  if ((*flags & kTypeMask) == kTypeIclass) {  // an included module's proxy: RBasic.klass is the module
    auto module = U64(klass + 8);
    if (!module.ok()) return module.status();
    klass = *module;
    flags = U64(klass);
  } else if ((*flags & kTypeMask) == kTypeClass && (*flags & layout_.singleton_flag)) {
    out.singleton = true;
    auto attached = U64(klass + layout_.attached);
    if (!attached.ok()) return attached.status();
    klass = *attached;
    flags = U64(klass);
  }
  if (!flags.ok()) return flags.status();
  const uint64_t type = *flags & kTypeMask;
  if (type != kTypeClass && type != kTypeModule) {
    return absl::InvalidArgumentError(absl::StrFormat("0x%x is no class or module", klass));
  }
  auto path = PathAt(klass, layout_.classpath);
  if (!path.ok()) return path.status();  // anonymous: no path
  if (path->empty()) return absl::NotFoundError("empty class path");
  out.path = *path;
  return out;
}

absl::StatusOr<RubyClassName> RubyClasses::OfMethodEntry(uint64_t cme, bool cfunc) const {
  auto klass = U64(cme + (cfunc ? kMeOwner : kMeDefinedClass));
  if (!klass.ok()) return klass.status();
  return Path(*klass);
}

std::string QualifiedLabel(const std::string& label, const std::string& base_label, const RubyClassName& klass) {
  if (klass.path.empty() || base_label.empty() || label.size() < base_label.size() ||
      label.compare(label.size() - base_label.size(), base_label.size(), base_label) != 0) {
    return label;
  }
  return absl::StrCat(label.substr(0, label.size() - base_label.size()), klass.path, klass.singleton ? "." : "#",
                      base_label);
}

}  // namespace ehprof
