// DwarfSymbolizer against elfutils' own eu-addr2line, the reference for what
// libdw's line tables and inline chains say.
#include "symbolizer/dwarf_symbolizer.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::FindSymbol;
using testing::TestdataPath;
using Frame = Symbolizer::SourceFrame;

const char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";

// Hermetic: local debug files only (a login shell on Debian may set
// DEBUGINFOD_URLS); eu-addr2line inherits this too.
const bool kNoDebuginfod = unsetenv("DEBUGINFOD_URLS") == 0;

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

std::string FramesText(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& f : frames) {
    absl::StrAppend(&out, f.function, f.inlined ? " [inlined]" : "", " @ ", f.file, ":", f.line,
                    "\n");
  }
  return out;
}

// "file:line" or "file:line:column"; "??:0" is unknown.
void ParsePosition(std::string s, Frame* frame) {
  for (size_t colon; (colon = s.rfind(':')) != std::string::npos && colon + 1 < s.size() &&
                     s.find_first_not_of("0123456789", colon + 1) == std::string::npos;) {
    frame->line = static_cast<uint32_t>(std::stoul(s.substr(colon + 1)));  // column, then line
    s.resize(colon);
  }
  frame->file = s == "??" ? "" : s;
}

// What `eu-addr2line -a -i -f -e FILE ADDR...` prints, per address: after
// the "0x..." line, pairs of "function" and "file:line", innermost first;
// every pair but the last is an inline expansion. The first function line
// reads "inner inlined at F:L in outer" when it is inlined.
std::vector<std::vector<Frame>> Addr2line(const std::string& file,
                                          const std::vector<uint64_t>& addrs) {
  std::string cmd = "eu-addr2line -a -i -f -e '" + file + "'";
  for (uint64_t a : addrs) cmd += " " + Hex(a);
  std::vector<std::vector<Frame>> out;
  FILE* pipe = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return out;
  std::vector<std::string> lines;
  char buf[8192];
  while (fgets(buf, sizeof buf, pipe)) lines.emplace_back(buf, strcspn(buf, "\n"));
  pclose(pipe);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("0x")) {
      out.emplace_back();
    } else if (!out.empty() && i + 1 < lines.size()) {
      Frame frame;
      frame.function = lines[i].substr(0, lines[i].find(" inlined "));
      ParsePosition(lines[++i], &frame);
      out.back().push_back(frame);
    }
  }
  for (auto& frames : out) {
    for (size_t k = 0; k + 1 < frames.size(); ++k) frames[k].inlined = true;
    // Nothing known: "??" and "??:0".
    if (frames.size() == 1 && frames[0].function == "??" && frames[0].file.empty()) frames.clear();
  }
  return out;
}

// Every `step`-th byte of each named function.
std::vector<uint64_t> Addresses(const std::string& file, const std::vector<std::string>& names,
                                uint64_t step) {
  std::vector<uint64_t> addrs;
  for (const std::string& name : names) {
    std::optional<testing::SymbolRange> sym = FindSymbol(file, name);
    EXPECT_TRUE(sym.has_value()) << name << " in " << file;
    if (!sym) continue;
    uint64_t end = sym->addr + std::max<uint64_t>(sym->size, 1);
    for (uint64_t a = sym->addr; a < end; a += step) addrs.push_back(a);
  }
  return addrs;
}

// Returns how many addresses had inline frames.
int ExpectMatchesAddr2line(DwarfSymbolizer& symbolizer, const std::string& file,
                           const std::vector<uint64_t>& addrs) {
  std::vector<std::vector<Frame>> expected = Addr2line(file, addrs);
  EXPECT_EQ(expected.size(), addrs.size()) << "eu-addr2line output for " << file;
  int with_inlines = 0;
  for (size_t i = 0; i < addrs.size() && i < expected.size(); ++i) {
    std::vector<Frame> got = symbolizer.Frames(file, addrs[i]);
    EXPECT_EQ(FramesText(got), FramesText(expected[i])) << file << " at " << Hex(addrs[i]);
    if (got.size() > 1) ++with_inlines;
    if (got.empty()) continue;
    EXPECT_EQ(symbolizer.FunctionName(file, addrs[i]), got.back().function) << Hex(addrs[i]);
  }
  return with_inlines;
}

TEST(DwarfSymbolizerTest, PieProgramsMatchEuAddr2line) {
  ASSERT_TRUE(kNoDebuginfod);
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  int inlines = 0;
  // libdlwork.so: a shared library, the other kind of ET_DYN.
  for (const auto& [name, functions] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"plt_calls", {"plt_compare", "plt_inner", "plt_outer", "main"}},
           {"sig_handler",
            {"sig_handler_work", "sig_handler_outer", "sig_prof_handler", "sig_main_work",
             "sig_main_loop", "main"}},
           {"deep_recursion", {"recurse", "recurse_leaf", "main"}},
           {"libdlwork.so", {"dlwork_inner", "dlwork_entry"}}}) {
    std::string file = TestdataPath(name);
    inlines += ExpectMatchesAddr2line(symbolizer, file, Addresses(file, functions, 4));
  }
  // td_now() is inlined into plt_outer and the mains: the chain was walked.
  EXPECT_GT(inlines, 0);
  EXPECT_TRUE(warnings.Take().empty());
}

TEST(DwarfSymbolizerTest, InlinedFrameNamesTheCallerAsFunction) {
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  std::string plt = TestdataPath("plt_calls");
  int seen = 0;
  for (uint64_t a : Addresses(plt, {"plt_outer"}, 1)) {
    std::vector<Frame> frames = symbolizer.Frames(plt, a);
    if (frames.size() < 2) continue;
    ++seen;
    EXPECT_EQ(FramesText(frames).substr(0, 16), "td_now [inlined]") << Hex(a);
    EXPECT_THAT(FramesText({frames[1]}), ::testing::StartsWith("plt_outer @")) << Hex(a);
    EXPECT_EQ(symbolizer.FunctionName(plt, a), "plt_outer");
  }
  EXPECT_GT(seen, 0);
}

TEST(DwarfSymbolizerTest, NonPieProgramMatchesEuAddr2line) {
  // The testdata programs are all PIEs; an ET_EXEC keeps its link-time
  // addresses in libdwfl, a PIE does not. Built here for want of one.
  fs::path dir = fs::temp_directory_path() / ("ehprof_nopie_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string exe = (dir / "plt_calls_nopie").string();
  std::string cmd = "gcc -O2 -g -fno-pie -no-pie -fno-builtin -I '" +
                    testing::SourcePath("testdata") + "' -o '" + exe + "' '" +
                    testing::SourcePath("testdata/plt_calls.c") + "' 2>&1";
  if (system(cmd.c_str()) != 0) {
    fs::remove_all(dir);
    FAIL() << "gcc could not build a non-PIE program (scripts/install_deps.sh installs gcc): " << cmd;
  }
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  auto addrs = Addresses(exe, {"plt_compare", "plt_inner", "plt_outer", "main"}, 4);
  ASSERT_FALSE(addrs.empty());
  EXPECT_GE(addrs[0], 0x400000u) << "not linked at a fixed address";
  ExpectMatchesAddr2line(symbolizer, exe, addrs);  // FunctionName too
  fs::remove_all(dir);
}

TEST(DwarfSymbolizerTest, StrippedFileFallsBackToSymbolTables) {
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  SymbolCache symbols(&warnings);
  std::string stripped = TestdataPath("plt_calls.stripped");
  EXPECT_FALSE(symbolizer.HasDwarf(stripped));
  for (uint64_t a : Addresses(TestdataPath("plt_calls"), {"plt_inner", "main"}, 8)) {
    EXPECT_EQ(symbolizer.FunctionName(stripped, a), symbols.Symbolize(stripped, a));
    for (const Frame& f : symbolizer.Frames(stripped, a))
      EXPECT_EQ(f.file + ":" + std::to_string(f.line), ":0");
  }
  EXPECT_TRUE(warnings.Take().empty());
  // DWARF does not describe PLT stubs; SymbolCache synthesizes foo@plt.
  std::string plt = TestdataPath("plt_calls");
  int named = 0;
  for (uint64_t a = 0x1000; a < 0x1100; a += 4) {
    std::optional<std::string> want = symbols.Symbolize(plt, a);
    if (!want || !want->ends_with("@plt")) continue;
    ++named;
    EXPECT_EQ(symbolizer.FunctionName(plt, a), want) << Hex(a);
  }
  EXPECT_GT(named, 0);
}

TEST(DwarfSymbolizerTest, LibcFromBuildIdDebugFile) {
  std::optional<testing::SymbolRange> malloc_sym = FindSymbol(kLibc, "malloc");
  ASSERT_TRUE(malloc_sym);
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  // libc6-dbg is a dependency (scripts/install_deps.sh): its debug file not
  // being found is a lookup failure, not a missing machine feature.
  ASSERT_TRUE(symbolizer.HasDwarf(kLibc))
      << "no DWARF found for " << kLibc << " under /usr/lib/debug/.build-id (libc6-dbg is installed by "
      << "scripts/install_deps.sh, so the build-id lookup failed)";
  std::vector<Frame> frames = symbolizer.Frames(kLibc, malloc_sym->addr);
  ASSERT_FALSE(frames.empty());
  EXPECT_THAT(frames[0].file, ::testing::HasSubstr("malloc.c"));
  EXPECT_GT(frames[0].line, 0u);
  // Its inline chains (tcache_get, arena_for_chunk...) too.
  EXPECT_GT(ExpectMatchesAddr2line(symbolizer, kLibc, Addresses(kLibc, {"malloc"}, 8)), 0);
}

// Garbage over one section of `file`.
void Corrupt(const std::string& file, const std::string& section, int pattern) {
  int fd = open(file.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Elf* elf = (elf_version(EV_CURRENT), elf_begin(fd, ELF_C_READ, nullptr));
  size_t shstrndx = 0;
  ASSERT_EQ(elf_getshdrstrndx(elf, &shstrndx), 0);
  GElf_Shdr found{};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char* name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
    if (name && section == name) found = sh;
  }
  elf_end(elf);
  ASSERT_GT(found.sh_size, 12u) << section;
  // 0: all 0xff; 1: random; 2: random past the first unit's header.
  std::string bytes(found.sh_size, '\xff');
  std::mt19937 rng(pattern);
  size_t skip = pattern == 2 ? 12 : 0;
  for (char& c : bytes) c = pattern ? static_cast<char>(rng()) : c;
  ASSERT_EQ(pwrite(fd, bytes.data() + skip, bytes.size() - skip, found.sh_offset + skip),
            static_cast<ssize_t>(bytes.size() - skip));
  close(fd);
}

// The testdata's split debug file, wired to a copy of its stripped program
// through .gnu_debuglink, with garbage over one section.
TEST(DwarfSymbolizerTest, CorruptDebugFileDoesNotCrash) {
  std::string original = TestdataPath("debugframe_only");
  auto addrs = Addresses(original, {"plt_compare", "plt_inner", "plt_outer", "main"}, 2);
  std::optional<testing::SymbolRange> inner = FindSymbol(original, "plt_inner");
  ASSERT_TRUE(inner);
  fs::path dir = fs::temp_directory_path() / ("ehprof_corrupt_" + std::to_string(getpid()));
  for (const char* section : {"", ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
                              ".debug_line_str", ".debug_rnglists", ".debug_aranges"}) {
    for (int pattern : {0, 1, 2}) {
      SCOPED_TRACE(std::string(section) + " pattern " + std::to_string(pattern));
      fs::remove_all(dir);
      fs::create_directories(dir);
      std::string exe = (dir / "debugframe_only.stripped").string();
      fs::copy_file(TestdataPath("debugframe_only.stripped"), exe);
      fs::copy_file(TestdataPath("debugframe_only.debug"), dir / "debugframe_only.debug");
      if (*section) Corrupt((dir / "debugframe_only.debug").string(), section, pattern);
      Warnings warnings;
      DwarfSymbolizer symbolizer(&warnings);
      for (uint64_t a : addrs) symbolizer.Frames(exe, a);
      // Its own .symtab (strip --strip-debug keeps it) still names it.
      EXPECT_EQ(symbolizer.FunctionName(exe, inner->addr), "plt_inner");
      if (!*section) {  // the control: intact, the debug file is found and used
        EXPECT_THAT(FramesText(symbolizer.Frames(exe, inner->addr)), ::testing::HasSubstr(".c:"));
        break;
      }
    }
  }
  fs::remove_all(dir);
}

TEST(DwarfSymbolizerTest, ConcurrentLookupsAgree) {
  std::vector<std::pair<std::string, uint64_t>> queries;
  for (const char* name : {"plt_calls", "sig_handler", "deep_recursion"}) {
    for (uint64_t a : Addresses(TestdataPath(name), {"main"}, 3))
      queries.emplace_back(TestdataPath(name), a);
  }
  Warnings warnings;
  DwarfSymbolizer reference(&warnings), shared(&warnings);
  std::vector<std::string> want;
  for (const auto& [file, a] : queries) want.push_back(FramesText(reference.Frames(file, a)));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {  // each from its own starting point: files load concurrently
      for (size_t i = 0, n = queries.size(); i < n; ++i) {
        size_t q = (i + t * n / 4) % n;
        mismatches[t] += FramesText(shared.Frames(queries[q].first, queries[q].second)) != want[q];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
}

TEST(DwarfSymbolizerTest, UnreadableFileIsAWarning) {
  Warnings warnings;
  DwarfSymbolizer symbolizer(&warnings);
  EXPECT_EQ(symbolizer.FunctionName("/nonexistent/ehprof", 0x1000), std::nullopt);
  EXPECT_TRUE(symbolizer.Frames("/nonexistent/ehprof", 0x1000).empty());
  EXPECT_THAT(warnings.Take(),
              ::testing::ElementsAre(::testing::HasSubstr("/nonexistent/ehprof")));
}

}  // namespace
}  // namespace ehprof
