// `ehprof tables [--stats] FILE`: the unwind rows ehprof would load for FILE.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agent/cli/cli.h"
#include "unwind_tables/build_compact_table.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Builds the unwind table of an ELF file (executable, shared library or
separate debug file) from its .eh_frame and .debug_frame, merging the
.debug_frame of its separate debug file (by build-id or .gnu_debuglink) for
addresses .eh_frame does not cover, and prints one row a line, sorted:

  000000000001d020 cfa=rsp+16 rbp=same ra=cfa-8
  000000000001d030 cfa=plt rbp=same ra=cfa-8
  000000000001e7d0 none

Each row holds from its address to the next row's. cfa= is REG+N, plt/plt10
(the PLT expressions), *(REG+N)[+M] (a load) or expr (unsupported); rbp= is
same, cfa+N, undef, *(REG+N) or other; ra= is cfa+N, undef or other; a
trailing 'signal' marks signal trampolines. 'none': no CFI covers it.

AArch64 files are read on any host: there the frame register is x29, the
CFA is sp+N or x29+N, ra=x30 means the return address is still in the link
register, a trailing 'pac' marks rows where it is signed (pointer
authentication), and .plt, which has no CFI, gets rows of its own
(source=...+plt):

  000000000001f404 cfa=sp+32 x29=cfa-32 ra=cfa-24 pac
)";

}  // namespace

int RunTablesCommand(const std::vector<std::string>& args) {
  bool stats = false;
  TableBuildOptions options;
  std::string file;
  bool no_debug_file = false;
  auto app = NewCommandApp("tables", kDescription);
  app->add_flag("--stats", stats,
                "print one line instead of the rows: rows=N bytes=N build_ms=N "
                "source=eh_frame[+debug_frame] followed by the compact encoding's figures");
  app->add_flag("--no-debug-file", no_debug_file, "do not look for a separate debug file");
  app->add_option("FILE", file, "an ELF file")->type_name("")->required();
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  options.find_debug_file = !no_debug_file;
  options.any_arch = true;

  const auto t0 = std::chrono::steady_clock::now();
  auto built = BuildCompactTableFromPath(file, options, KeepRows::kYes);
  const auto t1 = std::chrono::steady_clock::now();
  if (!built.ok()) {
    std::fprintf(stderr, "ehprof tables: %s\n", std::string(built.status().message()).c_str());
    return kExitFailure;
  }
  const UnwindTable* table = &built->unwind;
  const CompactTable* compact = &built->compact;
  for (const std::string& w : table->warnings) {
    std::fprintf(stderr, "ehprof tables: warning: %s\n", w.c_str());
  }
  if (compact->unencodable_rows) {
    std::fprintf(stderr,
                 "ehprof tables: warning: %s: %llu rows have offsets too large for "
                 "the compact encoding; the unwinder will stop there\n",
                 file.c_str(), static_cast<unsigned long long>(compact->unencodable_rows));
  }
  if (stats) {
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const size_t rows = table->rows.size();
    std::printf(
        "rows=%zu bytes=%llu build_ms=%.0f source=%s cfi_rows=%llu fdes=%llu "
        "bytes_per_row=%.2f bytes_per_cfi_row=%.2f pages=%zu page_shift=%u "
        "rules=%zu palette=%zu arch=%s\n",
        rows, static_cast<unsigned long long>(compact->bytes()), ms,
        table->source().c_str(), static_cast<unsigned long long>(table->cfi_rows),
        static_cast<unsigned long long>(table->fdes),
        rows ? double(compact->bytes()) / rows : 0.0,
        table->cfi_rows ? double(compact->bytes()) / table->cfi_rows : 0.0,
        compact->num_pages(), compact->page_shift, compact->rules.size(),
        compact->palette.size(), ArchName(table->arch));
    return kExitOk;
  }
  std::string out;
  out.reserve(table->rows.size() * 48);
  absl::StrAppendFormat(&out, "# %s: %zu rows from %s%s%s\n", file, table->rows.size(),
                        table->source(), table->debug_file.empty() ? "" : " with ",
                        table->debug_file);
  for (const UnwindRow& row : table->rows) {
    out += FormatRow(row, table->arch);
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

}  // namespace ehprof
