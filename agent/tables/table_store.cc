#include "agent/tables/table_store.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

// Splits per-page runs of `per_page[i]` items into chunks of `chunk` items
// without splitting a run: returns each run's chunk number and offset.
std::vector<TableStore::Slot> Pack(const std::vector<uint32_t>& per_page, uint32_t chunk, uint32_t* chunks) {
  std::vector<TableStore::Slot> out;
  out.reserve(per_page.size());
  uint32_t c = 0, used = 0;
  for (uint32_t n : per_page) {
    if (used + n > chunk) {
      ++c;
      used = 0;
    }
    out.push_back({c, used});
    used += n;
  }
  *chunks = per_page.empty() ? 0 : c + 1;
  return out;
}

}  // namespace

TableStore::TableStore(TableMaps maps, const MapSizes& sizes)
    : maps_(std::move(maps)),
      sizes_(sizes),
      pages_(sizes.pages),
      rules_(sizes.rules),
      palette_words_(sizes.palette_words) {
  for (uint32_t i = 0; i < sizes.tables; ++i) free_ids_.push_back(i);
  for (uint32_t i = 0; i < sizes.row_chunks; ++i) free_row_chunks_.push_back(i);
}

void TableStore::Release(const Placement& p) {
  pages_.Free(p.page_base, p.num_pages);
  rules_.Free(p.rule_base, p.num_rules);
  palette_words_.Free(p.palette_base, p.num_palette_words);
  free_row_chunks_.insert(free_row_chunks_.end(), p.row_chunks.begin(), p.row_chunks.end());
}

absl::StatusOr<TableStore::Placement> TableStore::Allocate(uint32_t np, uint32_t n_row_chunks,
                                                           uint32_t n_pal_words,
                                                           uint32_t n_rules,
                                                           const std::string& name) {
  auto full = [&](const char* what) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name, ": the BPF table maps are full (", what, "); raise --table-memory"));
  };
  if (free_ids_.empty()) return full("table slots");
  if (free_row_chunks_.size() < n_row_chunks) return full("row chunks");
  Placement p;
  auto pal_base = palette_words_.Allocate(n_pal_words);
  if (!pal_base) return full("palettes");
  p.palette_base = *pal_base;
  p.num_palette_words = n_pal_words;
  auto page_base = pages_.Allocate(np);
  if (!page_base) {
    palette_words_.Free(p.palette_base, n_pal_words);
    return full("pages");
  }
  p.page_base = *page_base;
  p.num_pages = np;
  auto rule_base = rules_.Allocate(n_rules);
  if (!rule_base) {
    pages_.Free(p.page_base, np);
    palette_words_.Free(p.palette_base, n_pal_words);
    return full("rules");
  }
  p.rule_base = *rule_base;
  p.num_rules = n_rules;
  for (uint32_t i = 0; i < n_row_chunks; ++i) {
    p.row_chunks.push_back(free_row_chunks_.front());
    free_row_chunks_.pop_front();
  }
  return p;
}

absl::Status TableStore::WriteParts(const CompactTable& t, const Placement& p,
                                    const std::vector<Slot>& row_slots) {
  const uint32_t np = p.num_pages;
  const auto n_row_chunks = static_cast<uint32_t>(p.row_chunks.size());
  // Lay out the chunks and the pages with global indexes.
  std::vector<uint8_t> row_bytes(size_t{n_row_chunks} * EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES, 0);
  // The table's palette as is, 4 ids a word: pages keep their offsets.
  std::vector<uint64_t> pal_words(p.num_palette_words, 0);
  for (size_t k = 0; k < t.palette.size(); ++k) {
    pal_words[k / EHP_PALETTE_PER_WORD] |= uint64_t{t.palette[k]} << (16 * (k % EHP_PALETTE_PER_WORD));
  }
  std::vector<ehp_page> pages(np);
  for (uint32_t i = 0; i < np; ++i) {
    const ehp_page& src = t.pages[i];
    const Slot rs = row_slots[i];
    std::memcpy(&row_bytes[(size_t{rs.chunk} * EHP_ROW_CHUNK_ROWS + rs.offset) * EHP_ROW_BYTES],
                &t.rows[size_t{src.first_row} * EHP_ROW_BYTES], size_t{src.num_rows} * EHP_ROW_BYTES);
    pages[i] = {p.row_chunks[rs.chunk] * EHP_ROW_CHUNK_ROWS + rs.offset, src.num_rows,
                p.palette_base * EHP_PALETTE_PER_WORD + src.first_palette, 0};
  }
  absl::Status st = maps_.rules->Write(p.rule_base, t.rules.data(), p.num_rules);
  if (st.ok()) st = maps_.palettes->Write(p.palette_base, pal_words.data(), p.num_palette_words);
  for (uint32_t c = 0; st.ok() && c < n_row_chunks; ++c) {
    st = maps_.rows->Write(p.row_chunks[c],
                           &row_bytes[size_t{c} * EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES], 1);
  }
  if (st.ok()) st = maps_.pages->Write(p.page_base, pages.data(), np);
  if (st.ok()) st = maps_.buckets->Write(p.page_base, t.buckets.data(), np);
  return st;
}

absl::StatusOr<uint32_t> TableStore::Load(const CompactTable& t, const std::string& name) {
  const uint32_t np = static_cast<uint32_t>(t.num_pages());
  std::vector<uint32_t> page_rows(np);
  for (uint32_t i = 0; i < np; ++i) page_rows[i] = t.pages[i].num_rows;
  uint32_t n_row_chunks = 0;
  const std::vector<Slot> row_slots = Pack(page_rows, EHP_ROW_CHUNK_ROWS, &n_row_chunks);
  const auto n_pal_words = static_cast<uint32_t>(
      (t.palette.size() + EHP_PALETTE_PER_WORD - 1) / EHP_PALETTE_PER_WORD);
  absl::StatusOr<Placement> p =
      Allocate(np, n_row_chunks, n_pal_words, static_cast<uint32_t>(t.rules.size()), name);
  if (!p.ok()) return p.status();
  absl::Status st = WriteParts(t, *p, row_slots);
  const uint32_t id = free_ids_.front();
  if (st.ok()) {
    ehp_table_info info{t.start, t.end, t.page_shift, np, p->page_base, p->rule_base};
    st = maps_.tables->Write(id, &info, 1);
  }
  if (!st.ok()) {
    Release(*p);
    return st;
  }
  free_ids_.pop_front();
  loaded_[id] = *std::move(p);
  return id;
}

absl::Status TableStore::Unload(uint32_t id) {
  auto it = loaded_.find(id);
  if (it == loaded_.end()) return absl::OkStatus();
  ehp_table_info empty{};
  // Cleared first: the BPF side stops using the table before its parts are
  // handed to the next one. A descriptor that could not be cleared may
  // still be read: the table keeps its id and its parts.
  if (absl::Status s = maps_.tables->Write(id, &empty, 1); !s.ok()) {
    return absl::InternalError(absl::StrCat("cannot unload unwind table ", id,
                                            ": clearing its descriptor failed: ", s.message(),
                                            "; its map space stays in use"));
  }
  Release(it->second);
  loaded_.erase(it);
  free_ids_.push_back(id);
  return absl::OkStatus();
}

TableStore::Usage TableStore::usage() const {
  return {static_cast<uint32_t>(loaded_.size()), pages_.used(),
          sizes_.row_chunks - static_cast<uint32_t>(free_row_chunks_.size()),
          palette_words_.used(),
          rules_.used()};
}

}  // namespace ehprof
