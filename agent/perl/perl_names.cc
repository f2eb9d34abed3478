// PerlTracker's naming of the walk's frame words (agent/perl/perl_tracker.h).
#include "absl/strings/str_cat.h"
#include "agent/perl/perl_tracker.h"

namespace ehprof {

namespace {

// A frame named is trusted this long before it is read again (a sub can be
// redefined and its CV's memory reused).
constexpr uint64_t kRereadNs = 1'000'000'000;

bool IsPerlWord(uint64_t v) { return EHP_IS_INTERP_FRAME(v) && EHP_INTERP_FRAME_KIND(v) == EHP_INTERP_PERL; }

bool IsBlock(uint64_t v) { return EHP_INTERP_FRAME_OBJECT(v) && EHP_INTERP_FRAME_AUX(v) == EHP_PERL_AUX_BLOCK; }

}  // namespace

InterpFrameName PerlTracker::Name(uint32_t pid, uint64_t word) {
  InterpFrameName n;
  n.kind = EHP_INTERP_PERL;
  const uint64_t object = EHP_INTERP_FRAME_OBJECT(word);
  const uint32_t aux = EHP_INTERP_FRAME_AUX(word);
  if (object == 0) {
    n.function = PerlStopName(aux);
    return n;
  }
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.state != InterpState::kPublished || !it->second.objects) {
    n.function = "[perl: unreadable frame]";
    return n;
  }
  const PerlObjects& objects = *it->second.objects;
  if (aux == EHP_PERL_AUX_BLOCK || aux == EHP_PERL_AUX_EVAL) {
    n.function = aux == EHP_PERL_AUX_EVAL ? "(eval)" : "";
    auto cop = objects.Cop(object);
    if (!cop.ok()) {
      n.function = "[perl: unreadable statement]";
      return n;
    }
    n.file = cop->file;
    n.line = cop->line;
    return n;
  }
  auto sub = objects.Sub(object);
  if (!sub.ok()) {
    n.function = "[perl: unreadable sub]";
    return n;
  }
  n.function = sub->name;
  n.file = sub->file;
  n.native = sub->xsub;
  if (aux != EHP_INTERP_AUX_UNKNOWN && !sub->xsub) n.line = static_cast<int32_t>(aux);
  return n;
}

InterpFrameName PerlTracker::Cached(uint32_t pid, Proc& p, uint64_t word, uint64_t now_ns) {
  const uint64_t key = word & EHP_INTERP_INDEX_MASK;
  auto it = p.words.find(key);
  if (it != p.words.end() && now_ns - it->second.read_ns < kRereadNs) return it->second.name;
  InterpFrameName n = Name(pid, word);
  p.words[key] = {n, now_ns};
  return n;
}

void PerlTracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  // From the root to the leaf: a code block takes the name of the sub it
  // runs in, the nearest sub frame on its root side.
  std::string around = "<main>";
  for (auto v = user->rbegin(); v != user->rend(); ++v) {
    if (!IsPerlWord(*v)) continue;
    const bool block = IsBlock(*v);
    InterpFrameName n = Cached(pid, p, *v, now_ns);
    if (block && n.function.empty()) n.function = around;
    else if (!block && EHP_INTERP_FRAME_OBJECT(*v) && n.function[0] != '[') around = n.function;
    *v = table_->Word(table_->Add(n));
  }
}

}  // namespace ehprof
