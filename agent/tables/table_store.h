// Places compact unwind tables in the BPF maps and takes them out again.
//
// Tables share global maps (pages, buckets, row and palette chunks, rules);
// each gets a table id whose ehp_table_info says where its parts are. A
// page's rows and palette never straddle a chunk, so the BPF search needs
// one map lookup per page; palettes are ranges of u64 words. The descriptor
// is written last and cleared first, so the BPF side never sees a
// half-written table; a load that fails part way gives back everything it
// took. The maps come through MapWriter, so all of this is unit-tested
// without root (tests/table_store_test.cc).
#ifndef EHPROF_AGENT_TABLES_TABLE_STORE_H_
#define EHPROF_AGENT_TABLES_TABLE_STORE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/tables/map_sizes.h"
#include "agent/tables/map_writer.h"
#include "agent/tables/range_allocator.h"
#include "unwind_tables/compact_table.h"

namespace ehprof {

class TableStore {
 public:
  TableStore(TableMaps maps, const MapSizes& sizes);

  // ResourceExhausted when the maps are full (the caller evicts or degrades).
  absl::StatusOr<uint32_t> Load(const CompactTable& table, const std::string& name);
  // Clears the table's descriptor, then frees its id and parts. When the
  // clear fails (an error naming the table), nothing is freed: the BPF side
  // may still read the table.
  absl::Status Unload(uint32_t id);

  struct Usage {
    uint32_t tables = 0, pages = 0, row_chunks = 0, palette_words = 0, rules = 0;
  };
  Usage usage() const;
  const MapSizes& sizes() const { return sizes_; }

  // Where a page's rows sit: chunk number within its table's chunks, and
  // the row offset in that chunk.
  struct Slot {
    uint32_t chunk, offset;
  };

 private:
  struct Placement {
    uint32_t page_base = 0, num_pages = 0, rule_base = 0, num_rules = 0;
    uint32_t palette_base = 0, num_palette_words = 0;  // in words
    std::vector<uint32_t> row_chunks;
  };
  // Takes room for a table of these dimensions; ResourceExhausted naming
  // the map that is full, with nothing taken.
  absl::StatusOr<Placement> Allocate(uint32_t pages, uint32_t row_chunks, uint32_t palette_words,
                                     uint32_t rules, const std::string& name);
  // Writes everything but the descriptor; row_slots from packing the pages.
  absl::Status WriteParts(const CompactTable& t, const Placement& p,
                          const std::vector<Slot>& row_slots);
  void Release(const Placement& p);

  TableMaps maps_;
  MapSizes sizes_;
  std::deque<uint32_t> free_ids_;  // FIFO: a freed id is reused last
  RangeAllocator pages_;
  RangeAllocator rules_;
  RangeAllocator palette_words_;
  std::deque<uint32_t> free_row_chunks_;
  std::map<uint32_t, Placement> loaded_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_TABLE_STORE_H_
