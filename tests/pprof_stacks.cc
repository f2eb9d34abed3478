#include "tests/pprof_stacks.h"

#include "absl/container/flat_hash_map.h"
#include "tests/test_support.h"

namespace ehprof::testing {

std::optional<perftools::profiles::Profile> ReadPprof(const std::string& path) {
  const std::optional<std::string> raw = Gunzip(ReadFile(path));
  perftools::profiles::Profile p;
  if (!raw || !p.ParseFromString(*raw)) return std::nullopt;
  return p;
}

std::vector<std::pair<int64_t, std::vector<PprofFrame>>> PprofStacks(const perftools::profiles::Profile& p) {
  auto str = [&](int64_t i) { return i >= 0 && i < p.string_table_size() ? p.string_table(i) : std::string(); };
  absl::flat_hash_map<uint64_t, const perftools::profiles::Location*> locations;
  absl::flat_hash_map<uint64_t, const perftools::profiles::Function*> functions;
  absl::flat_hash_map<uint64_t, std::string> mappings;
  for (const auto& loc : p.location()) locations[loc.id()] = &loc;
  for (const auto& fn : p.function()) functions[fn.id()] = &fn;
  for (const auto& m : p.mapping()) mappings[m.id()] = str(m.filename());
  std::vector<std::pair<int64_t, std::vector<PprofFrame>>> out;
  for (const auto& s : p.sample()) {
    std::vector<PprofFrame> frames;
    for (uint64_t id : s.location_id()) {
      auto loc = locations.find(id);
      if (loc == locations.end()) continue;
      const std::string& mapping = mappings[loc->second->mapping_id()];
      for (const auto& line : loc->second->line()) {
        auto fn = functions.find(line.function_id());
        if (fn == functions.end()) continue;
        frames.push_back({str(fn->second->name()), str(fn->second->filename()), line.line(), mapping});
      }
    }
    out.emplace_back(s.value_size() > 0 ? s.value(0) : 0, std::move(frames));
  }
  return out;
}

}  // namespace ehprof::testing
