#include "agent/replay/capture_tables.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/process/vdso_file.h"
#include "agent/tables/map_writer.h"
#include "agent/tables/table_store.h"
#include "agent/verify/dwfl_unwinder.h"
#include "base/status_macros.h"
#include "elf/elf_file.h"
#include "unwind_tables/build_compact_table.h"

namespace ehprof {
namespace {

// Bytes kept past the highest word the replayed walk read.
constexpr uint64_t kTrimSlack = 64;

uint64_t Addr(uint64_t frame) { return frame & EHP_FRAME_ADDR_MASK; }

// Whether the kernel's walk of c looked m up: a frame's pc (or a return
// address - 1, where the walk looks it up) lies in it.
bool HoldsAFrame(const Capture& c, const CaptureMapping& m) {
  auto in = [&](uint64_t a) { return a >= m.start && a < m.end; };
  if (in(c.regs[EHP_REG_RIP])) return true;
  for (uint64_t f : c.bpf_frames) {
    const uint64_t a = Addr(f);
    if (in(a) || (a > 0 && in(a - 1))) return true;
  }
  return false;
}

// The table store's writes into a host map.
class HostMapWriter : public MapWriter {
 public:
  explicit HostMapWriter(HostArrayMap* map) : map_(map) {}
  absl::Status Write(uint32_t start, const void* values, uint32_t n) override {
    const auto* bytes = static_cast<const uint8_t*>(values);
    const size_t size = map_->shape().value_size;
    for (uint32_t i = 0; i < n; ++i) {
      EHP_RETURN_IF_ERROR(map_->Write(start + i, 0, bytes + size_t{i} * size, size));
    }
    return absl::OkStatus();
  }
  void Delete(uint32_t key) override { map_->Delete(key); }
  bool Read(uint32_t key, void* value) const override {
    const std::vector<uint8_t>* v = map_->Value(key);
    if (v) std::copy(v->begin(), v->end(), static_cast<uint8_t*>(value));
    return v != nullptr;
  }
  size_t value_size() const override { return map_->shape().value_size; }

 private:
  HostArrayMap* map_;
};

template <typename T>
T ValueAs(const std::vector<uint8_t>& v) {
  T out{};
  std::copy(v.begin(), v.begin() + sizeof(T), reinterpret_cast<uint8_t*>(&out));
  return out;
}

}  // namespace

std::string CaptureFilePath(const std::string& path) {
  if (path.empty() || path[0] != '/' || absl::StartsWith(path, "//")) return "";
  return path;
}

CaptureTables::CaptureTables() {
  TableMaps m;
  m.tables = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_TABLES));
  m.pages = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_PAGES));
  m.buckets = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_BUCKETS));
  m.rows = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_ROWS));
  m.palettes = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_PALETTES));
  m.rules = std::make_unique<HostMapWriter>(&maps_.map(EHP_REPLAY_MAP_RULES));
  store_ = std::make_unique<TableStore>(std::move(m), MapSizes{});
}

CaptureTables::~CaptureTables() = default;

absl::StatusOr<ElfFile> CaptureTables::OpenElf(const std::string& file) {
  if (file != kVdso) return ElfFile::Open(file);
  std::vector<uint8_t> image = ReadOwnVdso();
  if (image.empty()) return absl::NotFoundError("this process maps no [vdso]");
  if (!vdso_file_) vdso_file_ = std::make_unique<VdsoFile>(image);
  return ElfFile::FromBytes(kVdso, std::move(image));
}

absl::StatusOr<uint32_t> CaptureTables::Table(const std::string& file, const CaptureMapping& m) {
  auto known = build_ids_.find(file);
  if (known == build_ids_.end()) {
    auto elf = OpenElf(file);
    if (!elf.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the capture maps ", m.path, ", which this machine cannot read: ", elf.status().message()));
    }
    known = build_ids_.emplace(file, elf->BuildId()).first;
  }
  // Another build (for the vDSO: another machine's or kernel's): the
  // stack's return addresses are not this file's.
  const std::string& have = known->second;
  if (have != m.build_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        file, ": build-id ", have.empty() ? "(none)" : have, " on this machine, ",
        m.build_id.empty() ? "(none)" : m.build_id,
        " in the capture: the stack's return addresses belong to the other build"));
  }
  auto it = tables_.find(file);
  if (it != tables_.end()) return it->second;
  auto id = [&]() -> absl::StatusOr<uint32_t> {
    EHP_ASSIGN_OR_RETURN(ElfFile elf, OpenElf(file));
    EHP_ASSIGN_OR_RETURN(CompactBuild built, BuildCompactTable(elf, TableBuildOptions{}, file));
    return store_->Load(built.compact, file);
  }();
  if (!id.ok()) {
    return absl::Status(id.status().code(), absl::StrCat("table of ", file, ": ", id.status().message()));
  }
  tables_.emplace(file, *id);
  return *id;
}

std::string CaptureTables::TableFile(const CaptureMapping& m) const {
  return m.path == kVdso ? kVdso : CaptureFilePath(m.path);
}

std::string CaptureTables::DwflPath(const CaptureMapping& m) const {
  if (m.path == kVdso) return vdso_file_ ? vdso_file_->path() : "";
  return CaptureFilePath(m.path);
}

absl::Status CaptureTables::Assign(Capture* c, std::vector<std::string>* notes) {
  for (CaptureMapping& m : c->mappings) {
    m.table_id.reset();
    const std::string file = TableFile(m);
    if (file.empty()) continue;
    auto id = Table(file, m);
    if (id.ok()) {
      m.table_id = *id;
    } else if (!absl::IsFailedPrecondition(id.status()) || HoldsAFrame(*c, m)) {
      return id.status();
    } else if (notes) {
      // No frame the kernel found is in it, so its walk never looked at
      // its table: the capture goes without.
      notes->push_back(absl::StrCat(id.status().message(), "; no frame of the capture is in it: left without its table"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReplayResult> CaptureTables::Replay(const Capture& c) {
  maps_.ClearLookedUp();
  ReplayResult r = ReplayWalk(maps_, c);
  if (r.stop >= EHP_STOP_REASON_COUNT) {
    return absl::ResourceExhaustedError("replay: out of memory for the walk's scratch");
  }
  std::vector<DwflMapping> files;
  for (const CaptureMapping& m : c.mappings) {
    if (m.table_id) files.push_back({m.start, m.end, m.bias, DwflPath(m)});
  }
  DwflUnwinder dwfl(std::move(files));
  StackCapture sc;
  std::copy(std::begin(c.regs), std::end(c.regs), sc.regs);
  sc.stack = c.stack;
  sc.exact = c.exact;
  EHP_ASSIGN_OR_RETURN(r.libdwfl, dwfl.Unwind(sc, EHP_MAX_USER_FRAMES));
  r.libdwfl_stop = dwfl.last_stop();
  r.CountAgreement();
  return r;
}

std::vector<CaptureEntry> CaptureTables::Entries() const {
  // (map, key) -> byte ranges [from, to) of its value to keep.
  std::map<std::pair<int, uint32_t>, std::set<std::pair<size_t, size_t>>> keep;
  auto whole = [&](ehp_replay_map map, uint32_t key) {
    keep[{map, key}].insert({0, ShapeOf(map).value_size});
  };
  const HostArrayMap& tables = maps_.map(EHP_REPLAY_MAP_TABLES);
  std::vector<ehp_table_info> infos;
  for (uint32_t id : tables.looked_up()) {
    if (const std::vector<uint8_t>* v = tables.Value(id)) {
      whole(EHP_REPLAY_MAP_TABLES, id);
      infos.push_back(ValueAs<ehp_table_info>(*v));
    }
  }
  const HostArrayMap& pages = maps_.map(EHP_REPLAY_MAP_PAGES);
  const HostArrayMap& rows = maps_.map(EHP_REPLAY_MAP_ROWS);
  const HostArrayMap& palettes = maps_.map(EHP_REPLAY_MAP_PALETTES);
  for (uint32_t gp : pages.looked_up()) {
    const std::vector<uint8_t>* pv = pages.Value(gp);
    auto t = std::find_if(infos.begin(), infos.end(), [&](const ehp_table_info& i) {
      return gp >= i.page_base && gp - i.page_base < i.num_pages;
    });
    if (!pv || t == infos.end()) continue;
    const auto pg = ValueAs<ehp_page>(*pv);
    whole(EHP_REPLAY_MAP_PAGES, gp);
    whole(EHP_REPLAY_MAP_BUCKETS, gp);
    const uint32_t chunk = pg.first_row / EHP_ROW_CHUNK_ROWS;
    const size_t from = size_t{pg.first_row % EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES;
    const size_t to = std::min(from + size_t{pg.num_rows} * EHP_ROW_BYTES, ShapeOf(EHP_REPLAY_MAP_ROWS).value_size);
    const std::vector<uint8_t>* rv = rows.Value(chunk);
    if (!rv) continue;
    keep[{EHP_REPLAY_MAP_ROWS, chunk}].insert({from, to});
    uint32_t palette_end = 0;  // the page's palette entries: [0, palette_end)
    for (size_t at = from; at + EHP_ROW_BYTES <= to; at += EHP_ROW_BYTES) {
      palette_end = std::max<uint32_t>(palette_end, (*rv)[at + 2] + 1u);
    }
    for (uint32_t gpal = pg.first_palette; gpal < pg.first_palette + palette_end; ++gpal) {
      const uint32_t word = gpal / EHP_PALETTE_PER_WORD;
      whole(EHP_REPLAY_MAP_PALETTES, word);
      const std::vector<uint8_t>* wv = palettes.Value(word);
      if (!wv) continue;
      const uint64_t w = ValueAs<uint64_t>(*wv);
      whole(EHP_REPLAY_MAP_RULES, t->rule_base + static_cast<uint16_t>(w >> (16 * (gpal % EHP_PALETTE_PER_WORD))));
    }
  }
  std::vector<CaptureEntry> out;
  for (const auto& [where, ranges] : keep) {
    const auto map = static_cast<ehp_replay_map>(where.first);
    const std::vector<uint8_t>* v = maps_.map(map).Value(where.second);
    if (!v) continue;
    // Overlapping or touching ranges merged; each written as one entry.
    std::vector<std::pair<size_t, size_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    for (const auto& [from, to] : merged) {
      CaptureEntry e;
      e.map = map;
      e.key = where.second;
      e.offset = static_cast<uint32_t>(from);
      e.bytes.assign(v->begin() + static_cast<ptrdiff_t>(from), v->begin() + static_cast<ptrdiff_t>(to));
      out.push_back(std::move(e));
    }
  }
  return out;
}

absl::StatusOr<Capture> CompleteCapture(CaptureTables& tables, Capture c, std::vector<std::string>* notes) {
  EHP_RETURN_IF_ERROR(tables.Assign(&c, notes));
  EHP_ASSIGN_OR_RETURN(ReplayResult full, tables.Replay(c));
  const uint64_t sp = c.regs[EHP_REG_RSP];
  if (full.read_end > sp && full.read_end - sp + kTrimSlack < c.stack.size()) {
    // Cut to what the walk read when neither walk finds anything else in
    // the cut copy.
    Capture cut = c;
    cut.stack.resize(full.read_end - sp + kTrimSlack);
    auto trimmed = tables.Replay(cut);
    if (trimmed.ok() && trimmed->frames == full.frames && trimmed->stop == full.stop &&
        trimmed->libdwfl == full.libdwfl) {
      c = std::move(cut);
    }
  }
  // Once more on what is kept: Entries are the keys of the last replay.
  EHP_ASSIGN_OR_RETURN(full, tables.Replay(c));
  c.libdwfl_frames = full.libdwfl;
  c.libdwfl_stop = full.libdwfl_stop;
  c.entries = tables.Entries();
  EHP_ASSIGN_OR_RETURN(ReplayResult stored, ReplayCapture(c));
  if (stored.frames != full.frames || stored.stop != full.stop) {
    return absl::InternalError(absl::StrCat("capture of pid ", c.pid, ": the replay from its ",
                                            c.entries.size(), " stored entries walks ", stored.frames.size(),
                                            " frames, over the whole tables ", full.frames.size()));
  }
  return c;
}

}  // namespace ehprof
