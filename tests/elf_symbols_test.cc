#include "symbolizer/elf_symbols.h"

#include <stdio.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolizer/demangle.h"
#include "symbolizer/symbol_cache.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using ::ehprof::testing::FindSymbol;
using ::ehprof::testing::TestdataPath;
using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;

std::shared_ptr<const ElfSymbols> MustLoad(const std::string& path) {
  auto syms = ElfSymbols::Load(path);
  EXPECT_TRUE(syms.ok()) << syms.status();
  return syms.ok() ? *syms : nullptr;
}

std::optional<std::string> NameAt(const ElfSymbols& syms, uint64_t vaddr) {
  auto s = syms.Find(vaddr);
  if (!s) return std::nullopt;
  return s->name;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

struct PcloseDeleter {
  void operator()(FILE* f) const { pclose(f); }
};

std::string RunAndRead(const std::string& cmd) {
  std::unique_ptr<FILE, PcloseDeleter> p(popen(cmd.c_str(), "r"));
  std::string out;
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0) out.append(buf, n);
  return out;
}

// objdump's "<name@plt>" labels: binutils is the reference for PLT names.
std::map<uint64_t, std::string> ObjdumpPltNames(const std::string& path,
                                                const std::string& objdump = "objdump") {
  std::string out = RunAndRead(objdump + " -d '" + path + "' 2>/dev/null");
  std::map<uint64_t, std::string> names;
  std::regex label(R"(^([0-9a-f]+) <([^>+-]+@plt)>:$)");
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, label)) {
      names[std::stoull(m[1].str(), nullptr, 16)] = m[2].str();
    }
  }
  return names;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ehprof_sym_XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(ElfSymbolsTest, UnstrippedResolvesFunctionsWithinTheirSize) {
  std::string path = TestdataPath("plt_calls");
  auto truth = FindSymbol(path, "plt_inner");
  ASSERT_TRUE(truth);
  auto syms = MustLoad(path);
  ASSERT_TRUE(syms);
  auto s = syms->Find(truth->addr);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "plt_inner");
  EXPECT_EQ(s->start, truth->addr);
  EXPECT_EQ(s->size, truth->size);
  EXPECT_EQ(NameAt(*syms, truth->addr + 3), "plt_inner");
  EXPECT_EQ(NameAt(*syms, truth->addr + truth->size - 1), "plt_inner");
  EXPECT_NE(NameAt(*syms, truth->addr + truth->size), "plt_inner");
  EXPECT_FALSE(syms->Find(0));
  EXPECT_FALSE(syms->Find(1));
}

TEST(ElfSymbolsTest, SizeZeroSymbolsEndAtNextSymbolOrSectionEnd) {
  std::string path = TestdataPath("plt_calls");
  auto syms = MustLoad(path);
  ASSERT_TRUE(syms);
  // frame_dummy (size 0, local) is followed by plt_compare.
  auto dummy = FindSymbol(path, "frame_dummy");
  auto compare = FindSymbol(path, "plt_compare");
  ASSERT_TRUE(dummy && compare);
  ASSERT_EQ(dummy->size, 0u);
  auto s = syms->Find(dummy->addr + 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "frame_dummy");
  EXPECT_EQ(s->size, compare->addr - dummy->addr);
  EXPECT_EQ(NameAt(*syms, compare->addr - 1), "frame_dummy");
  // _fini (size 0) is the last symbol: it stops at the end of .fini.
  auto fini = FindSymbol(path, "_fini");
  ASSERT_TRUE(fini);
  s = syms->Find(fini->addr + 4);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "_fini");
  EXPECT_GT(s->size, 4u);
  EXPECT_LT(s->size, 64u);
  EXPECT_FALSE(syms->Find(fini->addr + s->size));
  EXPECT_FALSE(syms->Find(fini->addr + 0x100000));
}

TEST(ElfSymbolsTest, PltStubsNamedAsObjdumpDoes) {
  for (const char* name : {"plt_calls", "plt_calls.stripped", "libdlwork.so"}) {
    SCOPED_TRACE(name);
    std::string path = TestdataPath(name);
    auto expected = ObjdumpPltNames(path);
    ASSERT_FALSE(expected.empty()) << "objdump shows no @plt labels";
    auto syms = MustLoad(path);
    ASSERT_TRUE(syms);
    for (const auto& [addr, plt_name] : expected) {
      auto s = syms->Find(addr + 2);
      ASSERT_TRUE(s) << plt_name;
      EXPECT_EQ(s->name, plt_name);
      EXPECT_EQ(s->start, addr);
    }
  }
}

// AArch64 PLTs: plain 16-byte entries (a64_cfi.so), BTI landing pads
// before the adrp (an executable's 24-byte entries) and PAC's autia1716
// before the branch, named and placed as binutils' aarch64 objdump labels
// them, every byte of an entry inside its stub.
TEST(ElfSymbolsTest, Aarch64PltStubsNamedAsObjdumpDoes) {
#ifndef EHPROF_HAVE_A64_TESTDATA
  GTEST_SKIP() << "no aarch64-linux-gnu-ld at configure time: no AArch64 testdata "
                  "(scripts/install_deps.sh installs binutils-aarch64-linux-gnu)";
#endif
  const std::string objdump = "aarch64-linux-gnu-objdump";
  for (const char* name : {"a64_cfi.so", "a64_plt_bti", "a64_plt_pac.so"}) {
    SCOPED_TRACE(name);
    const std::string path = TestdataPath(name);
    const auto expected = ObjdumpPltNames(path, objdump);
    ASSERT_FALSE(expected.empty()) << objdump << " shows no @plt labels in " << path;
    auto syms = MustLoad(path);
    ASSERT_TRUE(syms);
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      const auto next = std::next(it);
      // The last entry ends where objdump's next label (or the section) does;
      // entries are 16 or 24 bytes.
      const uint64_t size = next != expected.end() ? next->first - it->first : 16;
      for (uint64_t at = it->first; at < it->first + size; at += 4) {
        auto s = syms->Find(at);
        ASSERT_TRUE(s) << it->second << " at 0x" << std::hex << at;
        EXPECT_EQ(s->name, it->second) << "at 0x" << std::hex << at;
        EXPECT_EQ(s->start, it->first);
      }
    }
  }
}

TEST(ElfSymbolsTest, StrippedExecutableHasOnlyPltNames) {
  // The executable exports nothing: its .dynsym only lists imports.
  auto inner = FindSymbol(TestdataPath("plt_calls"), "plt_inner");
  auto main_sym = FindSymbol(TestdataPath("plt_calls"), "main");
  ASSERT_TRUE(inner && main_sym);
  auto syms = MustLoad(TestdataPath("plt_calls.stripped"));
  ASSERT_TRUE(syms);
  EXPECT_FALSE(syms->Find(inner->addr));
  EXPECT_FALSE(syms->Find(main_sym->addr));
  EXPECT_FALSE(syms->has_mini_debug_info());
}

TEST(ElfSymbolsTest, StrippedLibraryResolvesDynamicSymbolsOnly) {
  std::string unstripped = TestdataPath("libdlwork.so");
  auto entry = FindSymbol(unstripped, "dlwork_entry");
  auto dummy = FindSymbol(unstripped, "frame_dummy");  // local: not in .dynsym
  ASSERT_TRUE(entry && dummy);
  auto syms = MustLoad(TestdataPath("libdlwork.so.stripped"));
  ASSERT_TRUE(syms);
  EXPECT_EQ(NameAt(*syms, entry->addr + entry->size / 2), "dlwork_entry");
  EXPECT_FALSE(syms->Find(dummy->addr));
}

TEST(ElfSymbolsTest, LibcResolvesMalloc) {
  std::string path = "/lib/x86_64-linux-gnu/libc.so.6";
  auto malloc_sym = FindSymbol(path, "malloc");
  ASSERT_TRUE(malloc_sym);
  auto syms = MustLoad(path);
  ASSERT_TRUE(syms);
  for (uint64_t at : {malloc_sym->addr, malloc_sym->addr + malloc_sym->size / 2}) {
    auto s = syms->Find(at);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->start, malloc_sym->addr);
    // Debian's libc exports malloc with an alias; both are global, and the
    // longer name wins the tie.
    EXPECT_EQ(s->name, "malloc");  // fewer leading underscores wins, as in perf
  }
}

// MiniDebugInfo as Fedora builds it (gdb manual, "MiniDebugInfo"): the
// local function symbols .dynsym lacks, in an xz-compressed ELF stored in
// the stripped binary's .gnu_debugdata.
class MiniDebugInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    std::string bin = TestdataPath("plt_calls");
    std::string d = dir_.path();
    std::string script =
        "set -e; cd '" + d + "'\n"
        "nm -D '" + bin + "' --format=posix --defined-only | awk '{print $1}' | sort > dynsyms\n"
        "nm '" + bin + "' --format=posix --defined-only"
        " | awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }' | sort > funcsyms\n"
        "comm -13 dynsyms funcsyms > keep_symbols\n"
        "objcopy --only-keep-debug '" + bin + "' debug\n"
        "objcopy -S --remove-section .gdb_index --remove-section .comment"
        " --keep-symbols=keep_symbols debug mini_debuginfo\n"
        "strip --strip-all -R .comment -o stripped '" + bin + "'\n"
        "xz --keep mini_debuginfo\n"
        "cp stripped with_mini\n"
        "objcopy --add-section .gnu_debugdata=mini_debuginfo.xz with_mini\n"
        "head -c 200 /dev/urandom > garbage.xz\n"
        "cp stripped with_bad_mini\n"
        "objcopy --add-section .gnu_debugdata=garbage.xz with_bad_mini\n";
    std::string script_path = dir_.File("make_minidebuginfo.sh");
    std::ofstream(script_path) << script;
    std::string log = dir_.File("log");
    ASSERT_EQ(std::system(("sh '" + script_path + "' >'" + log + "' 2>&1").c_str()), 0)
        << script << "\n" << RunAndRead("cat '" + log + "'");
  }

  TempDir dir_;
};

TEST_F(MiniDebugInfoTest, ResolvesFunctionsStrippingRemoved) {
  std::string bin = TestdataPath("plt_calls");
  auto inner = FindSymbol(bin, "plt_inner");
  auto dtors = FindSymbol(bin, "__do_global_dtors_aux");  // static
  ASSERT_TRUE(inner && dtors);

  auto plain = MustLoad(dir_.File("stripped"));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->Find(inner->addr));

  auto syms = MustLoad(dir_.File("with_mini"));
  ASSERT_TRUE(syms);
  EXPECT_TRUE(syms->has_mini_debug_info());
  auto s = syms->Find(inner->addr + 3);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "plt_inner");
  EXPECT_EQ(s->start, inner->addr);
  EXPECT_EQ(s->size, inner->size);
  EXPECT_EQ(NameAt(*syms, dtors->addr + 1), "__do_global_dtors_aux");
  // .dynsym's imports still give the PLT names.
  for (const auto& [addr, name] : ObjdumpPltNames(bin)) {
    EXPECT_EQ(NameAt(*syms, addr), name);
  }
}

TEST_F(MiniDebugInfoTest, CorruptXzIsAnError) {
  auto syms = ElfSymbols::Load(dir_.File("with_bad_mini"));
  ASSERT_FALSE(syms.ok());
  EXPECT_THAT(std::string(syms.status().message()), HasSubstr("with_bad_mini"));
  EXPECT_THAT(std::string(syms.status().message()), HasSubstr(".gnu_debugdata"));
}

TEST(ElfSymbolsTest, UnreadableFilesAreErrorsNamingTheFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::vector<uint8_t> elf = ReadBytes(TestdataPath("plt_calls"));
  ASSERT_GT(elf.size(), 4096u);

  std::map<std::string, std::vector<uint8_t>> cases;
  cases["empty"] = {};
  cases["text"] = {'h', 'e', 'l', 'l', 'o', '\n'};
  cases["truncated_header"] = std::vector<uint8_t>(elf.begin(), elf.begin() + 20);
  // Section headers are at the end of the file: cut off, they point past it.
  cases["truncated"] = std::vector<uint8_t>(elf.begin(), elf.begin() + elf.size() / 2);
  std::vector<uint8_t> bad_shoff = elf;
  bad_shoff[0x28 + 6] = 0x7f;  // e_shoff far beyond the end
  cases["bad_shoff"] = bad_shoff;
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    std::string path = dir.File(name);
    WriteBytes(path, bytes);
    auto syms = ElfSymbols::Load(path);
    ASSERT_FALSE(syms.ok());
    EXPECT_THAT(std::string(syms.status().message()), HasSubstr(path));
  }
  auto missing = ElfSymbols::Load(dir.File("does_not_exist"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("does_not_exist"));
}

TEST(ElfSymbolsTest, MutatedFilesNeverCrash) {
  std::vector<uint8_t> elf = ReadBytes(TestdataPath("plt_calls"));
  ASSERT_FALSE(elf.empty());
  std::mt19937_64 rng(42);
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = elf;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < flips; ++j) {
      // Half the mutations hit the headers and symbol tables, which are
      // small next to the code.
      size_t at = rng() % 2 ? rng() % bytes.size() : bytes.size() - 1 - rng() % 2048;
      bytes[at] = static_cast<uint8_t>(rng());
    }
    auto syms = ElfSymbols::FromBytes("mutated", std::move(bytes));
    if (!syms.ok()) continue;
    ++ok;
    for (uint64_t a = 0x1000; a < 0x1400; a += 8) (*syms)->Find(a);
  }
  EXPECT_GT(ok, 0);
}

TEST(DemangleTest, DemanglesCxxNamesAndKeepsOthers) {
  EXPECT_EQ(Demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(Demangle("_ZN3foo3barEv@plt"), "foo::bar()@plt");
  EXPECT_EQ(Demangle("_Z3fooi.cold"), "foo(int) [clone .cold]");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("i"), "i");  // a type when demangled naively
  EXPECT_EQ(Demangle("_Znot_valid("), "_Znot_valid(");
  EXPECT_EQ(Demangle(""), "");
}

TEST(SymbolCacheTest, LoadsOnceAndReportsFailuresOnce) {
  std::string bin = TestdataPath("plt_calls");
  auto inner = FindSymbol(bin, "plt_inner");
  ASSERT_TRUE(inner);
  Warnings warnings;
  SymbolCache cache(&warnings);
  Symbolizer& symbolizer = cache;
  EXPECT_EQ(symbolizer.FunctionName(bin, inner->addr + 3), "plt_inner");
  EXPECT_EQ(cache.Get(bin), cache.Get(bin));
  EXPECT_FALSE(cache.Symbolize(bin, 0));

  std::string missing = TestdataPath("no_such_file");
  EXPECT_FALSE(cache.Symbolize(missing, 0x1000));
  EXPECT_FALSE(cache.Symbolize(missing, 0x2000));
  auto said = warnings.Take();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("no_such_file"));
  EXPECT_TRUE(warnings.Take().empty());
}

TEST(SymbolCacheTest, ConcurrentLookupsShareOneLoad) {
  std::string bin = TestdataPath("plt_calls");
  std::string lib = TestdataPath("libdlwork.so");
  auto inner = FindSymbol(bin, "plt_inner");
  auto entry = FindSymbol(lib, "dlwork_entry");
  ASSERT_TRUE(inner && entry);
  Warnings warnings;
  SymbolCache cache(&warnings);
  std::vector<std::thread> threads;
  std::vector<int> good(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        good[t] += cache.Symbolize(bin, inner->addr + i % inner->size) == "plt_inner";
        good[t] += cache.Symbolize(lib, entry->addr) == "dlwork_entry";
        good[t] += !cache.Symbolize(TestdataPath("no_such_file"), 0x1000);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int g : good) EXPECT_EQ(g, 600);
  EXPECT_EQ(warnings.Take().size(), 1u);
}

}  // namespace
}  // namespace ehprof

namespace ehprof {
namespace {

TEST(SymbolCacheDebugFile, StrippedFileIsNamedThroughItsSeparateDebugFile) {
  // debugframe_only.stripped has no .symtab; its .gnu_debuglink names
  // debugframe_only.debug, whose .symtab has the static functions.
  auto inner = testing::FindSymbol(testing::TestdataPath("debugframe_only"), "plt_inner");
  ASSERT_TRUE(inner);
  Warnings warnings;
  SymbolCache cache(&warnings);
  EXPECT_EQ(cache.FunctionName(testing::TestdataPath("debugframe_only.stripped"), inner->addr + 1),
            "plt_inner");
  // Without a debug file no symbol names it: its FDE does (cfi_functions.h).
  const uint64_t start = testing::FindSymbol(testing::TestdataPath("plt_calls"), "plt_inner")->addr;
  EXPECT_EQ(cache.FunctionName(testing::TestdataPath("plt_calls.stripped"), start + 1),
            absl::StrCat("plt_calls.stripped+0x", absl::Hex(start)));
}

}  // namespace
}  // namespace ehprof
