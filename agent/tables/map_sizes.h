// How many entries each BPF map of the unwind tables and processes gets,
// fixed before the programs load (--table-memory sizes them). The table
// store allocates within these bounds, so they are its limits too.
#ifndef EHPROF_AGENT_TABLES_MAP_SIZES_H_
#define EHPROF_AGENT_TABLES_MAP_SIZES_H_

#include <cstdint>

#include "bpf/ehprof_abi.h"

namespace ehprof {

struct MapSizes {
  // Defaults from bpf/ehprof_abi.h, where the BPF object takes them too.
  uint32_t tables = EHP_DEFAULT_TABLES;
  uint32_t pages = EHP_DEFAULT_PAGES;
  uint32_t row_chunks = EHP_DEFAULT_ROW_CHUNKS;
  uint32_t palette_words = EHP_DEFAULT_PALETTE_WORDS;
  uint32_t rules = EHP_DEFAULT_RULES;
  uint32_t procs = EHP_DEFAULT_PROCS;
  uint32_t ringbuf_bytes = EHP_DEFAULT_RINGBUF_BYTES;
  uint64_t table_bytes() const;     // what the table maps lock in memory
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_MAP_SIZES_H_
