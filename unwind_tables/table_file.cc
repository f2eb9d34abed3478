#include "unwind_tables/table_file.h"

#include <zlib.h>

#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "unwind_tables/compact_table_check.h"

namespace ehprof {
namespace {

constexpr char kMagic[8] = {'E', 'H', 'P', 'T', 'A', 'B', 'L', 'E'};
constexpr size_t kMaxBuildId = 64;  // hex characters (SHA-256 ids are 64)

// Everything the payload's meaning depends on besides the builder: a table
// written for another layout is refused, not reinterpreted.
constexpr uint32_t AbiFingerprint() {
  return (uint32_t{sizeof(ehp_page)} << 24) ^ (uint32_t{sizeof(ehp_rule)} << 16) ^
         (uint32_t{sizeof(ehp_buckets)} << 4) ^ (EHP_ROW_BYTES << 2) ^
         (EHP_PAGE_SHIFT_MAX << 8) ^ (EHP_MAX_PAGE_ROWS << 12) ^ EHP_PALETTE_MAX;
}

struct Header {
  char magic[8];
  uint32_t builder_version;
  uint32_t abi;
  uint64_t inode;
  uint64_t size;
  int64_t mtime_ns;
  char build_id[kMaxBuildId];
  uint64_t start;
  uint64_t end;
  uint32_t page_shift;
  uint32_t payload_crc;
  uint64_t unencodable_rows;
  uint64_t plain_rows;
  uint64_t num_pages;
  uint64_t row_bytes;
  uint64_t palette_entries;
  uint64_t num_rules;
};
static_assert(sizeof(Header) == 176, "no implicit padding in the header");

template <typename T>
void Append(std::string* out, const std::vector<T>& v) {
  if (!v.empty()) out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Copies n elements of T from bytes at *at; false when they do not fit.
template <typename T>
bool Take(std::span<const uint8_t> bytes, size_t* at, uint64_t n, std::vector<T>* out) {
  if (n > (bytes.size() - *at) / sizeof(T)) return false;
  out->resize(n);
  if (n > 0) std::memcpy(out->data(), bytes.data() + *at, n * sizeof(T));
  *at += n * sizeof(T);
  return true;
}

}  // namespace

uint32_t TableFormatTag() { return kTableBuilderVersion * 0x9e3779b1u ^ AbiFingerprint(); }

std::string SerializeTable(const TableFileKey& key, const StoredTable& s) {
  const CompactTable& t = s.table;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.builder_version = kTableBuilderVersion;
  h.abi = AbiFingerprint();
  h.inode = key.inode;
  h.size = key.size;
  h.mtime_ns = key.mtime_ns;
  std::memcpy(h.build_id, key.build_id.data(), std::min(key.build_id.size(), kMaxBuildId));
  h.start = t.start;
  h.end = t.end;
  h.page_shift = t.page_shift;
  h.unencodable_rows = t.unencodable_rows;
  h.plain_rows = s.plain_rows;
  h.num_pages = t.pages.size();
  h.row_bytes = t.rows.size();
  h.palette_entries = t.palette.size();
  h.num_rules = t.rules.size();
  std::string payload;
  Append(&payload, t.pages);
  Append(&payload, t.buckets);
  Append(&payload, t.rows);
  Append(&payload, t.palette);
  Append(&payload, t.rules);
  h.payload_crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())));
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out += payload;
  return out;
}

std::string WithTableChecksumFixed(std::span<const uint8_t> bytes) {
  std::string out(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (bytes.size() < sizeof(Header) || bytes.size() - sizeof(Header) > UINT32_MAX) return out;
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, bytes.data() + sizeof(Header), static_cast<uInt>(bytes.size() - sizeof(Header))));
  std::memcpy(out.data() + offsetof(Header, payload_crc), &crc, sizeof(crc));
  return out;
}

absl::StatusOr<StoredTable> ParseTable(std::span<const uint8_t> bytes, const TableFileKey& key,
                                       const std::string& name) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(name, ": cached table: ", what));
  };
  Header h;
  if (bytes.size() < sizeof(h)) return bad("shorter than its header");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return bad("not a table file");
  if (h.builder_version != kTableBuilderVersion || h.abi != AbiFingerprint()) {
    return bad("written by another version of ehprof");
  }
  const size_t id_len = strnlen(h.build_id, kMaxBuildId);
  for (size_t i = id_len; i < kMaxBuildId; ++i) {
    if (h.build_id[i] != 0) return bad("not a table file");  // what SerializeTable zeroes
  }
  if (key.build_id.size() > kMaxBuildId || std::string_view(h.build_id, id_len) != key.build_id ||
      h.inode != key.inode || h.size != key.size || h.mtime_ns != key.mtime_ns) {
    return bad("built from another file");
  }
  const std::span<const uint8_t> payload = bytes.subspan(sizeof(h));
  if (payload.size() > UINT32_MAX ||
      crc32(0, payload.data(), static_cast<uInt>(payload.size())) != h.payload_crc) {
    return bad("checksum mismatch");
  }
  StoredTable s;
  CompactTable& t = s.table;
  t.start = h.start;
  t.end = h.end;
  t.page_shift = h.page_shift;
  t.unencodable_rows = h.unencodable_rows;
  s.plain_rows = h.plain_rows;
  size_t at = sizeof(h);
  if (!Take(bytes, &at, h.num_pages, &t.pages) || !Take(bytes, &at, h.num_pages, &t.buckets) ||
      !Take(bytes, &at, h.row_bytes, &t.rows) || !Take(bytes, &at, h.palette_entries, &t.palette) ||
      !Take(bytes, &at, h.num_rules, &t.rules)) {
    return bad("counts larger than the file");
  }
  if (at != bytes.size()) return bad("bytes after the table");
  if (absl::Status st = ValidateCompactTable(t, name); !st.ok()) return st;
  return s;
}

}  // namespace ehprof
