#include "agent/tables/map_sizes.h"

namespace ehprof {

uint64_t MapSizes::table_bytes() const {
  return uint64_t{tables} * sizeof(ehp_table_info) + uint64_t{pages} * sizeof(ehp_page) +
         uint64_t{pages} * sizeof(ehp_buckets) +
         uint64_t{row_chunks} * EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES +
         uint64_t{palette_words} * sizeof(uint64_t) + uint64_t{rules} * sizeof(ehp_rule);
}

}  // namespace ehprof
