#include "tests/go_programs.h"

#include <glob.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/test_support.h"

namespace ehprof::testing {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The build cache beside build/ehprof (as GoToolPprof's), no network.
std::string GoEnv() {
  const std::string bin = EhprofBinary();
  return "env GOCACHE='" + bin.substr(0, bin.rfind('/')) +
         "/gocache' GOPROXY=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local ";
}

}  // namespace

std::vector<GoBuild> BuildGowork(const std::string& dir, std::vector<std::string>* errors) {
  std::vector<std::string> candidates = {"go", "/usr/local/go/bin/go"};
  glob_t g{};
  if (glob("/usr/lib/go-*/bin/go", 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) candidates.push_back(g.gl_pathv[i]);
  }
  globfree(&g);
  std::set<std::string> seen;
  std::vector<GoBuild> out;
  const std::string src = SourcePath("testdata/gowork");
  for (const std::string& go : candidates) {
    const std::string version = Trim(ShellOutput(go + " env GOVERSION 2>/dev/null"));
    if (version.rfind("go1.", 0) != 0 || !seen.insert(version).second) continue;
    GoBuild b{go, version, dir + "/gowork." + version, dir + "/gowork." + version + ".stripped"};
    const std::string cmd = "cd '" + src + "' && " + GoEnv() + go + " build -o '" + b.binary +
                            "' . && " + GoEnv() + go + " build -ldflags='-s -w' -o '" +
                            b.stripped + "' . 2>&1";
    const std::string log = ShellOutput(cmd);
    if (access(b.stripped.c_str(), X_OK) != 0) {
      errors->push_back(version + ": " + cmd + "\n" + log);
      continue;
    }
    out.push_back(b);
  }
  if (out.empty() && errors->empty()) {
    errors->push_back("no Go toolchain (golang-go: scripts/install_deps.sh)");
  }
  return out;
}

std::vector<GoAddr2line> GoAddr2lineOf(const GoBuild& b, const std::vector<uint64_t>& addrs) {
  const std::string in = b.binary + ".addrs";
  {
    std::ofstream f(in);
    for (uint64_t a : addrs) f << "0x" << std::hex << a << "\n";
  }
  std::istringstream lines(
      ShellOutput(GoEnv() + b.go + " tool addr2line '" + b.binary + "' < '" + in + "'"));
  std::remove(in.c_str());
  std::vector<GoAddr2line> out;
  std::string fn, pos;
  while (std::getline(lines, fn) && std::getline(lines, pos)) out.push_back({fn, pos});
  return out;
}

void GoBuildsTest::SetUp() {
  dir_ = ::testing::TempDir() + "/" + name_ + "." + std::to_string(getpid());
  ShellOutput("mkdir -p '" + dir_ + "'");
  std::vector<std::string> errors;
  builds_ = BuildGowork(dir_, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
}

void GoBuildsTest::TearDown() { ShellOutput("rm -rf '" + dir_ + "'"); }

}  // namespace ehprof::testing
