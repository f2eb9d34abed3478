// The two tables a pprof file is indexed by: its strings (entry 0 is "")
// and the file's ids of a model's mappings, locations and functions, both
// handed out in first seen order so the same input gives the same bytes.
#ifndef EHPROF_AGENT_OUTPUT_PPROF_TABLES_H_
#define EHPROF_AGENT_OUTPUT_PPROF_TABLES_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/output/interned_profile.h"

namespace ehprof::pprof_tables {

// Every string in the profile is an index into one table whose entry 0
// must be "" (the proto3 default of an unset index). The model's strings
// are unique already; the table holds those a file uses, and the names of
// its sample types and labels, each once.
class StringTable {
 public:
  explicit StringTable(const InternedProfile& p) : p_(p), remap_(p.strings.size(), -1) { Index(""); }
  // A string of the writer's own (a copy is kept).
  int64_t Index(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    return Intern(own_.emplace_back(s));
  }
  // A string of the model.
  int64_t Of(uint32_t id) {
    if (id == 0) return 0;
    if (remap_[id] < 0) {
      auto it = index_.find(p_.strings[id]);
      remap_[id] = it != index_.end() ? it->second : Intern(p_.strings[id]);
    }
    return remap_[id];
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  // `s` outlives the table.
  int64_t Intern(std::string_view s) {
    index_.emplace(s, static_cast<int64_t>(strings_.size()));
    strings_.push_back(s);
    return static_cast<int64_t>(strings_.size() - 1);
  }

  const InternedProfile& p_;
  std::deque<std::string> own_;
  std::vector<int64_t> remap_;
  absl::flat_hash_map<std::string_view, int64_t> index_;
  std::vector<std::string_view> strings_;
};

// A model id -> the file's id (position + 1; 0 is reserved for "unset"),
// handed out in first seen order so the same input always gives the same
// bytes.
class IdMap {
 public:
  explicit IdMap(size_t n) : local_(n, 0) {}
  // Whether it was new.
  bool Map(uint32_t id, uint64_t* local) {
    const bool fresh = local_[id] == 0;
    if (fresh) {
      order_.push_back(id);
      local_[id] = order_.size();
    }
    *local = local_[id];
    return fresh;
  }
  const std::vector<uint32_t>& order() const { return order_; }

 private:
  std::vector<uint64_t> local_;
  std::vector<uint32_t> order_;
};

}  // namespace ehprof::pprof_tables

#endif  // EHPROF_AGENT_OUTPUT_PPROF_TABLES_H_
