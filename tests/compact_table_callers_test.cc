// The users of a compact table build the same one for a stripped Go binary
// (whose rows come from .gopclntab: no CFI covers Go's code): the agent's
// FileTables and `ehprof tables` go through BuildCompactTable, as the
// capture recorder (agent/replay/capture_tables.cc) does. The agent's table
// is compared as what it writes into the maps, against the reference table
// loaded into empty in-memory maps; `ehprof tables` as its rows and its
// --stats figures.
#include "unwind_tables/build_compact_table.h"


#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/tables/file_tables.h"
#include "base/warnings.h"
#include "gtest/gtest.h"
#include "tests/go_programs.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

class CompactTableCallersTest : public testing::GoBuildsTest {
 protected:
  CompactTableCallersTest() : GoBuildsTest("compact_table_callers") {}
  void SetUp() override {
    GoBuildsTest::SetUp();
    ASSERT_FALSE(builds_.empty()) << "no Go toolchain built testdata/gowork";
  }
};

// Every key's value in `map`, a map of `n` keys of `size`-byte values, is
// what `value(key)` reads; either side's missing value (nullptr) reads as
// zeros, as in an array map.
void ExpectSameMap(const char* what, const MemoryMapWriter& map, uint32_t n, size_t size,
                   const std::function<const void*(uint32_t)>& value) {
  const std::vector<uint8_t> zeros(size, 0);
  size_t differ = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const std::vector<uint8_t>* want = map.Bytes(k);
    const void* got = value(k);
    if (std::memcmp(got ? got : zeros.data(), want ? want->data() : zeros.data(), size) != 0 &&
        ++differ <= 3) {
      ADD_FAILURE() << what << ": key " << k << " differs";
    }
  }
  EXPECT_EQ(differ, 0u) << what;
}

TEST_F(CompactTableCallersTest, AgentAndTablesCommandBuildTheSameGoTable) {
  for (const testing::GoBuild& b : builds_) {
    SCOPED_TRACE(b.version);
    const std::string& path = b.stripped;
    // What the agent's options are (TableBuildOptions{}), rows kept to
    // compare with `ehprof tables`.
    auto ref = BuildCompactTableFromPath(path, TableBuildOptions{}, KeepRows::kYes);
    ASSERT_TRUE(ref.ok()) << ref.status();
    ASSERT_EQ(ref->unwind.source(), "gopclntab") << "a stripped Go binary's rows are Go's";
    ASSERT_GT(ref->rows, 1000u);
    ASSERT_EQ(ref->rows, ref->unwind.rows.size());

    const MapSizes sizes;
    MemoryTableMaps want;
    TableStore want_store(MakeMemoryTableMaps(sizes, &want), sizes);
    auto want_id = want_store.Load(ref->compact, path);
    ASSERT_TRUE(want_id.ok()) << want_id.status();

    // The agent: FileTables' worker builds it, CollectFinished loads it.
    MemoryTableMaps agent;
    TableStore agent_store(MakeMemoryTableMaps(sizes, &agent), sizes);
    {
      Warnings warnings;
      FileTables files(&agent_store, &warnings);
      auto key = files.Register(path, path);
      ASSERT_TRUE(key.ok()) << key.status();
      files.AddRef(*key);
      for (int i = 0; i < 3000 && files.pending() > 0; ++i) {
        files.CollectFinished();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      files.CollectFinished();
      const FileInfo* f = files.Find(*key);
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(f->state, FileInfo::State::kReady) << f->error;
      EXPECT_TRUE(warnings.Take().empty());
      EXPECT_EQ(f->table_id, *want_id);
    }
    auto in = [](const MemoryMapWriter* m) {
      return [m](uint32_t k) -> const void* {
        const std::vector<uint8_t>* v = m->Bytes(k);
        return v ? v->data() : nullptr;
      };
    };
    ExpectSameMap("agent tables", *want.tables, sizes.tables, sizeof(ehp_table_info), in(agent.tables));
    ExpectSameMap("agent pages", *want.pages, sizes.pages, sizeof(ehp_page), in(agent.pages));
    ExpectSameMap("agent buckets", *want.buckets, sizes.pages, sizeof(ehp_buckets), in(agent.buckets));
    ExpectSameMap("agent rows", *want.rows, sizes.row_chunks, size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES,
                  in(agent.rows));
    ExpectSameMap("agent palettes", *want.palettes, sizes.palette_words, sizeof(uint64_t),
                  in(agent.palettes));
    ExpectSameMap("agent rules", *want.rules, sizes.rules, sizeof(ehp_rule), in(agent.rules));

    // `ehprof tables`: the same rows, and the same encoding's figures.
    const std::string cmd = testing::EhprofBinary() + " tables '" + path + "'";
    std::string rows = absl::StrFormat("# %s: %zu rows from %s\n", path, ref->rows, ref->unwind.source());
    for (const UnwindRow& r : ref->unwind.rows) absl::StrAppend(&rows, FormatRow(r, ref->unwind.arch), "\n");
    EXPECT_TRUE(testing::ShellOutput(cmd + " 2>/dev/null") == rows) << "`ehprof tables` rows differ";
    const std::string stats = testing::ShellOutput(cmd + " --stats 2>/dev/null");
    const CompactTable& c = ref->compact;
    for (const std::string& field :
         {absl::StrCat("rows=", ref->rows, " bytes=", c.bytes(), " "),
          absl::StrCat(" source=", ref->unwind.source(), " "),
          absl::StrCat(" pages=", c.num_pages(), " page_shift=", c.page_shift, " rules=", c.rules.size(),
                       " palette=", c.palette.size(), " ")}) {
      EXPECT_NE(stats.find(field), std::string::npos) << field << " not in: " << stats;
    }
  }
}

}  // namespace
}  // namespace ehprof
