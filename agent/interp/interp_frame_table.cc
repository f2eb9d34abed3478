#include "agent/interp/interp_frame_table.h"

#include "absl/hash/hash.h"

namespace ehprof {

const char* InterpKindName(ehp_interp_kind kind) {
  switch (kind) {
    case EHP_INTERP_RUBY:
      return "ruby";
    case EHP_INTERP_PHP:
      return "php";
    case EHP_INTERP_PERL:
      return "perl";
  }
  return "interpreter";
}

size_t InterpFrameTable::Hash::operator()(const InterpFrameName& n) const {
  return absl::HashOf(static_cast<int>(n.kind), n.function, n.file, n.line, n.native);
}

uint32_t InterpFrameTable::Add(const InterpFrameName& name) {
  if (names_.empty()) names_.emplace_back();
  auto [it, added] = index_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(name);
  return it->second;
}

uint64_t InterpFrameTable::Word(uint32_t index) const {
  const ehp_interp_kind kind = index < names_.size() ? names_[index].kind : EHP_INTERP_RUBY;
  return EHP_FRAME_INTERP | (uint64_t{kind} << EHP_INTERP_KIND_SHIFT) | (index & EHP_INTERP_INDEX_MASK);
}

InterpFrameName InterpFrameTable::Name(uint64_t word) const {
  const uint64_t index = word & EHP_INTERP_INDEX_MASK;
  if (index != 0 && index < names_.size()) return names_[index];
  InterpFrameName unknown;
  unknown.kind = static_cast<ehp_interp_kind>(EHP_INTERP_FRAME_KIND(word));
  unknown.function = std::string("[") + InterpKindName(unknown.kind) + " unknown]";
  return unknown;
}

size_t InterpFrameTable::Bytes() const {
  size_t bytes = names_.capacity() * sizeof(InterpFrameName) + index_.capacity() * (sizeof(InterpFrameName) + 4);
  for (const InterpFrameName& n : names_) bytes += 2 * (n.function.capacity() + n.file.capacity());
  return bytes;
}

void InterpFrameTable::Clear() {
  names_.clear();
  index_.clear();
}

}  // namespace ehprof
