#include "agent/record/interp_trackers.h"

#include "agent/perl/perl_tracker.h"
#include "agent/php/php_tracker.h"
#include "agent/ruby/ruby_tracker.h"

namespace ehprof {

std::vector<std::unique_ptr<InterpTracker>> MakeInterpTrackers(
    const InterpSelection& selection, absl::FunctionRef<std::unique_ptr<MapWriter>(ehp_interp_kind)> maps,
    InterpFrameTable* frames, Warnings* warnings) {
  std::vector<std::unique_ptr<InterpTracker>> trackers;
  // One line per runtime: if (selection.X) trackers.push_back(
  //   std::make_unique<XTracker>(maps(EHP_INTERP_X), frames, warnings));
  if (selection.ruby) trackers.push_back(std::make_unique<RubyTracker>(maps(EHP_INTERP_RUBY), frames, warnings));
  if (selection.php) trackers.push_back(std::make_unique<PhpTracker>(maps(EHP_INTERP_PHP), frames, warnings));
  if (selection.perl) trackers.push_back(std::make_unique<PerlTracker>(maps(EHP_INTERP_PERL), frames, warnings));
  return trackers;
}

}  // namespace ehprof
