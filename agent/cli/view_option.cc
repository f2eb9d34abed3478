// --view, which `record` and `agent` both take (agent/output/stack_view.h).
#include "agent/cli/cli.h"

namespace ehprof {

void AddViewOption(CLI::App& app, std::string* view) {
  app.add_option("--view", *view,
                 "full (default): every frame, native and runtime (Python, Java, JavaScript, Ruby, "
                 "PHP, Perl) interleaved as they ran; runtime: without the native frames between two "
                 "frames of one runtime (its interpreter loop and call glue), as py-spy and rbspy show "
                 "stacks")
      ->type_name("V")
      ->check(CLI::IsMember({"full", "runtime"}).description(""));
}

StackView ViewOf(const std::string& view) { return ParseStackView(view).value_or(StackView::kFull); }

}  // namespace ehprof
