// TableStore's policy without root: placement in the shared maps, packing
// of pages into row chunks, running out of room, rollback of a load that
// fails part way, unload and id reuse. The maps are in-memory
// (memory_map_writer.h), read by bpf/lookup.bpf.h's own find_rule compiled
// as C (bpf/host/walk_replay.h), so a placement bug shows as a wrong rule.
#include "agent/tables/table_store.h"

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "bpf/host/walk_replay.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

using ::ehprof::testing::TestdataPath;

using Maps = MemoryTableMaps;

// A store over in-memory maps sized as `sizes` says; `maps` points at them.
std::unique_ptr<TableStore> MakeStore(const MapSizes& sizes, Maps* maps) {
  return std::make_unique<TableStore>(MakeMemoryTableMaps(sizes, maps), sizes);
}

// The value at key of one of the in-memory maps, for find_rule's C build:
// zeroes when never written, as a BPF array reads.
void* LookupIn(void* ctx, ehp_replay_map map, uint32_t key) {
  const Maps& m = *static_cast<const Maps*>(ctx);
  const MemoryMapWriter* w = map == EHP_REPLAY_MAP_TABLES     ? m.tables
                             : map == EHP_REPLAY_MAP_PAGES    ? m.pages
                             : map == EHP_REPLAY_MAP_BUCKETS  ? m.buckets
                             : map == EHP_REPLAY_MAP_ROWS     ? m.rows
                             : map == EHP_REPLAY_MAP_PALETTES ? m.palettes
                             : map == EHP_REPLAY_MAP_RULES    ? m.rules
                                                              : nullptr;
  if (!w) return nullptr;
  static std::vector<uint8_t> zero(size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES);
  const std::vector<uint8_t>* v = w->Bytes(key);
  return v ? const_cast<uint8_t*>(v->data()) : zero.data();
}

// find_rule (bpf/lookup.bpf.h, compiled as C in bpf/host/) over the
// in-memory maps; a zero rule when it finds none.
ehp_rule LookupThroughMaps(const Maps& m, uint32_t id, uint64_t addr) {
  ehp_replay_env env{};
  env.lookup = &LookupIn;
  env.ctx = const_cast<Maps*>(&m);
  ehp_rule rule{};
  ehp_replay_find_rule(&env, id, addr, &rule);
  return rule;
}

CompactTable TableOf(const std::string& path) {
  auto unwind = BuildUnwindTableFromPath(path);
  EXPECT_TRUE(unwind.ok()) << unwind.status();
  auto compact = EncodeCompactTable(unwind->rows, path);
  EXPECT_TRUE(compact.ok()) << compact.status();
  return *std::move(compact);
}

bool SameRule(const ehp_rule& a, const ehp_rule& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

// Every row boundary, the byte before it, and random addresses.
void ExpectLookupsAgree(const Maps& m, uint32_t id, const CompactTable& t, const std::string& what) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> in(t.start, t.end + 64);
  int mismatches = 0;
  for (int i = 0; i < 20000 && mismatches < 5; ++i) {
    const uint64_t addr = in(rng);
    if (!SameRule(LookupThroughMaps(m, id, addr), CompactLookup(t, addr))) {
      ADD_FAILURE() << what << ": the maps answer differently at 0x" << std::hex << addr;
      ++mismatches;
    }
  }
}

TEST(TableStore, LoadedTablesAnswerEveryLookupAsTheirTableDoes) {
  Maps m;
  auto store = MakeStore(MapSizes{}, &m);
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  const std::string small = TestdataPath("realign.stripped");
  CompactTable a = TableOf(libc), b = TableOf(small);
  auto ida = store->Load(a, libc);
  auto idb = store->Load(b, small);
  ASSERT_TRUE(ida.ok()) << ida.status();
  ASSERT_TRUE(idb.ok()) << idb.status();
  EXPECT_NE(*ida, *idb);
  ExpectLookupsAgree(m, *ida, a, libc);
  ExpectLookupsAgree(m, *idb, b, small);
  // No page's rows straddle a chunk: the BPF search looks into one chunk.
  for (uint32_t id : {*ida, *idb}) {
    const auto info = m.tables->Get<ehp_table_info>(id);
    for (uint32_t p = 0; p < info.num_pages; ++p) {
      const auto pg = m.pages->Get<ehp_page>(info.page_base + p);
      EXPECT_LE(pg.first_row % EHP_ROW_CHUNK_ROWS + pg.num_rows, uint32_t{EHP_ROW_CHUNK_ROWS});
    }
  }
}

TEST(TableStore, FullMapsRefuseNamingTheMapAndTakeNothing) {
  const std::string path = TestdataPath("realign.stripped");
  CompactTable t = TableOf(path);
  MapSizes sizes;
  sizes.rules = static_cast<uint32_t>(t.rules.size()) + 2;  // room for one table's rules
  Maps m;
  auto store = MakeStore(sizes, &m);
  ASSERT_TRUE(store->Load(t, path).ok());
  const TableStore::Usage before = store->usage();
  auto second = store->Load(t, path);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(second.status()));
  EXPECT_NE(second.status().message().find("rules"), std::string::npos) << second.status();
  EXPECT_NE(second.status().message().find(path), std::string::npos) << second.status();
  const TableStore::Usage after = store->usage();
  EXPECT_EQ(after.tables, before.tables);
  EXPECT_EQ(after.pages, before.pages);
  EXPECT_EQ(after.row_chunks, before.row_chunks);
  EXPECT_EQ(after.palette_words, before.palette_words);
  EXPECT_EQ(after.rules, before.rules);
}

TEST(TableStore, ALoadFailingAtAnyWriteGivesEverythingBackAndPublishesNothing) {
  const std::string path = TestdataPath("realign.stripped");
  CompactTable t = TableOf(path);
  // How many writes a clean load makes.
  Maps probe;
  auto clean = MakeStore(MapSizes{}, &probe);
  ASSERT_TRUE(clean->Load(t, path).ok());
  const uint64_t total = probe.tables->writes() + probe.pages->writes() +
                         probe.buckets->writes() + probe.rows->writes() +
                         probe.palettes->writes() + probe.rules->writes();
  ASSERT_GT(total, 5u);
  for (MemoryMapWriter* Maps::*which : {&Maps::rules, &Maps::palettes, &Maps::rows, &Maps::pages,
                                        &Maps::buckets, &Maps::tables}) {
    Maps m;
    auto store = MakeStore(MapSizes{}, &m);
    (m.*which)->FailAfter(0);
    auto id = store->Load(t, path);
    ASSERT_FALSE(id.ok());
    const TableStore::Usage u = store->usage();
    EXPECT_EQ(u.tables + u.pages + u.row_chunks + u.palette_words + u.rules, 0u)
        << "a failed load kept room";
    EXPECT_FALSE(m.tables->Has(0)) << "a half-written table was published";
    // The same store loads it once the map works again, into the same id.
    (m.*which)->FailAfter(-1);
    auto again = store->Load(t, path);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, 0u);
    ExpectLookupsAgree(m, *again, t, path);
  }
}

TEST(TableStore, UnloadClearsTheDescriptorAndAFreedIdIsReusedLast) {
  const std::string path = TestdataPath("realign.stripped");
  CompactTable t = TableOf(path);
  MapSizes sizes;
  sizes.tables = 3;
  Maps m;
  auto store = MakeStore(sizes, &m);
  auto a = store->Load(t, path), b = store->Load(t, path);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(store->Unload(*a).ok());
  const auto cleared = m.tables->Get<ehp_table_info>(*a);
  EXPECT_EQ(cleared.num_pages, 0u);
  EXPECT_EQ(cleared.end, 0u);
  EXPECT_EQ(store->usage().tables, 1u);
  // The free list is FIFO: the id just freed comes after the never-used one,
  // so a sample still in flight for it does not meet a new table at once.
  auto c = store->Load(t, path);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, 2u);
  auto d = store->Load(t, path);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, *a);
  auto e = store->Load(t, path);
  EXPECT_TRUE(absl::IsResourceExhausted(e.status())) << e.status();
  EXPECT_TRUE(store->Unload(*b).ok());
  EXPECT_TRUE(store->Unload(*c).ok());
  EXPECT_TRUE(store->Unload(*d).ok());
  const TableStore::Usage u = store->usage();
  EXPECT_EQ(u.tables + u.pages + u.row_chunks + u.palette_words + u.rules, 0u);
}

TEST(TableStore, AnUnloadWhoseClearFailsSaysSoAndFreesNothing) {
  const std::string path = TestdataPath("realign.stripped");
  CompactTable t = TableOf(path);
  MapSizes sizes;
  sizes.tables = 2;
  Maps m;
  auto store = MakeStore(sizes, &m);
  auto a = store->Load(t, path);
  ASSERT_TRUE(a.ok());
  const TableStore::Usage before = store->usage();
  m.tables->FailAfter(0);
  absl::Status s = store->Unload(*a);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(absl::StrCat("unwind table ", *a)), std::string::npos) << s;
  // Still published, so its id and parts are still taken: the next table
  // goes elsewhere and answers as its own.
  EXPECT_EQ(m.tables->Get<ehp_table_info>(*a).num_pages, before.pages);
  const TableStore::Usage after = store->usage();
  EXPECT_EQ(after.tables, before.tables);
  EXPECT_EQ(after.pages, before.pages);
  EXPECT_EQ(after.row_chunks, before.row_chunks);
  m.tables->FailAfter(-1);
  auto b = store->Load(t, path);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(*b, *a);
  ExpectLookupsAgree(m, *a, t, path);
  ExpectLookupsAgree(m, *b, t, path);
  // A later unload that works frees it.
  EXPECT_TRUE(store->Unload(*a).ok());
  EXPECT_EQ(store->usage().tables, 1u);
}

}  // namespace
}  // namespace ehprof
