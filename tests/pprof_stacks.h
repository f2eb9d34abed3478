// A pprof file (.pb.gz) read back with the classes protoc generates from
// pprof's own profile.proto, and its samples as stacks of named frames: what
// the agent's --output-dir files say, judged by the format's schema.
#ifndef EHPROF_TESTS_PPROF_STACKS_H_
#define EHPROF_TESTS_PPROF_STACKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profile.pb.h"

namespace ehprof::testing {

// nullopt when the file is not one gzip member holding a Profile.
std::optional<perftools::profiles::Profile> ReadPprof(const std::string& path);

struct PprofFrame {
  std::string function, file;
  int64_t line = 0;
  std::string mapping;  // the location's mapping's file name
};
// Each sample's first value and frames, leaf first (a location's lines
// innermost first).
std::vector<std::pair<int64_t, std::vector<PprofFrame>>> PprofStacks(const perftools::profiles::Profile& p);

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_PPROF_STACKS_H_
