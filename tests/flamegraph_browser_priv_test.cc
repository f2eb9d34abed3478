// The flame graph SVG in a real browser: headless Chromium loads a generated
// file and dumps the DOM after its script ran. Proves what the unit test
// (tests/output_svg_test.cc) cannot: the browser parses the file as SVG, the
// inline script runs without errors (it marks the root data-ehprof-ready),
// zoom and search work (driven by the ?z=, ?s= and ?re= URL parameters):
// literal search finds "[fio]" and "operator()" and nothing else, the
// matched shares of all and of the zoomed frame are right; the graph takes
// the window's width; the legend sits between the title and the frames.
//
// "priv": Chromium runs as root here, so --no-sandbox. Without Chromium the
// tests skip, printing "SKIPPED: chromium not installed" — except under
// CI=true, where they fail (scripts/install_deps.sh installs it). Every run is
// bounded by a timeout and its process group killed, so a hung browser fails
// the test instead of hanging it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <regex>
#include <thread>
#include <vector>

#include "agent/output/output_svg.h"
#include "agent/resolve/resolved_sample.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof {
namespace {

using ::testing::ContainsRegex;
using ::testing::MatchesRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kBrowserTimeout = std::chrono::seconds(90);
// 54 characters: 295 px at 7.44 px a character hold 38.
const std::string kBeta = "beta" + std::string(50, 'x');

std::string FindChromium() {
  if (access("/usr/bin/chromium", X_OK) == 0) return "/usr/bin/chromium";
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/chromium";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct RunResult {
  bool timed_out = false;
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv in its own process group with stdout and stderr in files, and
// kills the whole group (Chromium forks zygote, renderer and GPU processes)
// when it is done or out of time.
RunResult RunBounded(const std::vector<std::string>& args, const std::string& dir) {
  RunResult result;
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    result.err = std::string("posix_spawn: ") + strerror(err);
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + kBrowserTimeout;
  for (;;) {
    // WNOWAIT: the leader stays a zombie, so its pid (the group id) cannot be
    // reused before the group is killed below.
    siginfo_t info{};
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

// "[NAME]" is how the graph names an unresolved frame in file NAME.
ResolvedSample Sample(std::vector<std::string> root_first, uint64_t count) {
  ResolvedSample s;
  s.comm = "demo";
  for (auto it = root_first.rbegin(); it != root_first.rend(); ++it) {
    if (it->front() == '[') {
      const std::string file = "/usr/bin/" + it->substr(1, it->size() - 2);
      s.frames.push_back({0x10, "[unknown]", file, false, false});
    } else {
      s.frames.push_back({0x1000, *it, "/bin/demo", false, false});
    }
  }
  s.count = count;
  return s;
}

// Names a regular expression would match more of than they say: as a
// regex, "[fio]" is any of f, i, o and "operator()" is "operator".
// 10 samples: work 6 (Foo::operator() 2, operator_new 4), [fio] 1, io_submit 3.
std::vector<ResolvedSample> SearchProfile() {
  return {Sample({"main", "work", "Foo::operator()"}, 2),
          Sample({"main", "work", "operator_new"}, 4), Sample({"main", "[fio]"}, 1),
          Sample({"main", "io_submit"}, 3)};
}

// The frames the search highlighted, by name.
std::vector<std::string> Highlighted(const std::string& dom) {
  std::vector<std::string> names;
  const std::regex re(
      "<title>([^<\\n]*) \\([0-9]+ samples?, [^<]*</title>"
      "<rect [^>]*fill=\"rgb\\(230,0,230\\)\"");
  for (std::sregex_iterator it(dom.begin(), dom.end(), re), end; it != end; ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

std::string Matched(const std::string& dom) {
  std::smatch m;
  const std::regex re("<text id=\"matched\"[^>]*>([^<]*)</text>");
  return std::regex_search(dom, m, re) ? m[1].str() : "(no matched text)";
}

class FlameGraphBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      const char* ci = getenv("CI");
      if (ci && std::string(ci) == "true") {
        FAIL() << "chromium not installed (CI=true; scripts/install_deps.sh installs it)";
      }
      std::cout << "SKIPPED: chromium not installed" << std::endl;
      GTEST_SKIP() << "chromium not installed";
    }
    char tmpl[] = "/tmp/ehprof_fg_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << strerror(errno);
    dir_ = tmpl;
    svg_path_ = dir_ + "/fg.svg";
    std::ofstream out(svg_path_);
    // alpha 3 of 4 samples, beta 1; alpha needs escaping, beta's label is
    // cut until zoomed.
    const absl::Status status =
        WriteFlameGraphSvg({Sample({"main", "alpha<&>"}, 3), Sample({"main", kBeta}, 1)}, out,
                           {.title = "browser test"});
    ASSERT_TRUE(status.ok()) << status;
    out.close();
    ASSERT_TRUE(out);
    search_path_ = dir_ + "/search.svg";
    std::ofstream search(search_path_);
    ASSERT_TRUE(WriteFlameGraphSvg(SearchProfile(), search, {.title = "search test"}).ok());
    search.close();
    ASSERT_TRUE(search);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Chromium on a fresh profile; `what` is e.g. "--dump-dom". The window is
  // 1200 px wide unless `what` says otherwise.
  RunResult Chromium(const std::vector<std::string>& what, const std::string& query = "",
                     const std::string& file = "") {
    std::vector<std::string> args = {
        chromium_, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + dir_ + "/profile",
        // Lets the load event and the script finish before the dump.
        "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1200,600"};
    args.insert(args.end(), what.begin(), what.end());
    args.push_back("file://" + (file.empty() ? svg_path_ : file) + query);
    RunResult r = RunBounded(args, dir_);
    EXPECT_FALSE(r.timed_out) << "chromium hung; stderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  std::string chromium_;
  std::string dir_;
  std::string svg_path_;
  std::string search_path_;
};

TEST_F(FlameGraphBrowser, RendersAndRunsScript) {
  const RunResult r = Chromium({"--dump-dom"});
  EXPECT_THAT(r.out, HasSubstr("data-ehprof-ready=\"1\""));
  const std::string where = "\nuser code in /bin/demo</title>";
  EXPECT_THAT(r.out, HasSubstr("<title>alpha&lt;&amp;&gt; (3 samples, 75.00%)" + where));
  EXPECT_THAT(r.out, HasSubstr("<title>" + kBeta + " (1 sample, 25.00%)" + where));
  EXPECT_THAT(r.out, HasSubstr(">" + kBeta.substr(0, 36) + "..</text>"));
  EXPECT_THAT(r.out, Not(HasSubstr("parsererror")));  // Chromium's XML error page
}

TEST_F(FlameGraphBrowser, ZoomsAndSearchesFromUrl) {
  const RunResult r = Chromium({"--dump-dom"}, "?z=" + kBeta + "&s=alpha");
  ASSERT_THAT(r.out, HasSubstr("data-ehprof-ready=\"1\""));
  // alpha is not in the zoomed view.
  EXPECT_EQ(Matched(r.out), "Matched \"alpha\": 75.00% of all, 0.00% of zoomed");
  EXPECT_THAT(r.out, HasSubstr(">Reset search<"));
  EXPECT_THAT(r.out, HasSubstr("<text id=\"unzoom\" class=\"button\""));  // no longer hidden
  // beta now spans the whole width (1200 - 2 * 10), labelled in full, and
  // alpha is hidden.
  EXPECT_THAT(r.out, ContainsRegex("<g><title>" + kBeta +
                                   " \\(1 sample, 25\\.00%\\)\n[^<]*</title>"
                                   "<rect x=\"10\\.00\" y=\"[0-9.]+\" width=\"1180\\.00\""));
  EXPECT_THAT(r.out, HasSubstr(">" + kBeta + "</text>"));
  EXPECT_THAT(r.out, HasSubstr("<g display=\"none\"><title>alpha"));
  EXPECT_THAT(r.out, HasSubstr("fill=\"rgb(230,0,230)\""));  // the search highlight
}

TEST_F(FlameGraphBrowser, Screenshots) {
  const std::string png = dir_ + "/fg.png";
  Chromium({"--hide-scrollbars", "--window-size=1200,200", "--screenshot=" + png});
  const std::string data = ReadFile(png);
  ASSERT_GT(data.size(), 1000u);
  EXPECT_EQ(data.substr(0, 8), "\x89PNG\r\n\x1a\n");
}

TEST_F(FlameGraphBrowser, SearchIsLiteral) {
  RunResult r = Chromium({"--dump-dom"}, "?s=%5Bfio%5D", search_path_);
  ASSERT_THAT(r.out, HasSubstr("data-ehprof-ready=\"1\""));
  EXPECT_EQ(Matched(r.out), "Matched \"[fio]\": 10.00% of all");
  EXPECT_EQ(Highlighted(r.out), std::vector<std::string>{"[fio]"});

  r = Chromium({"--dump-dom"}, "?s=operator()", search_path_);
  EXPECT_EQ(Matched(r.out), "Matched \"operator()\": 20.00% of all");
  EXPECT_EQ(Highlighted(r.out), std::vector<std::string>{"Foo::operator()"});
}

TEST_F(FlameGraphBrowser, RegexWhenAskedFor) {
  // Every name with an f, i or o: all but "all" itself.
  RunResult r = Chromium({"--dump-dom"}, "?re=%5Bfio%5D", search_path_);
  EXPECT_EQ(Matched(r.out), "Matched \"[fio]\": 100.00% of all");
  EXPECT_EQ(Highlighted(r.out).size(), 7u);
  r = Chromium({"--dump-dom"}, "?re=%5Eo", search_path_);
  EXPECT_EQ(Matched(r.out), "Matched \"^o\": 40.00% of all");
  EXPECT_EQ(Highlighted(r.out), std::vector<std::string>{"operator_new"});
  r = Chromium({"--dump-dom"}, "?re=(", search_path_);
  EXPECT_EQ(Matched(r.out), "Bad regular expression: (");
}

TEST_F(FlameGraphBrowser, ZoomedShare) {
  // work holds 6 of the 10 samples, Foo::operator() 2 of them.
  RunResult r = Chromium({"--dump-dom"}, "?z=work&s=operator()", search_path_);
  EXPECT_EQ(Matched(r.out), "Matched \"operator()\": 20.00% of all, 33.33% of zoomed");
  EXPECT_THAT(r.out, ContainsRegex("<g><title>work \\(6 samples[^<]*</title><rect x=\"10\\.00\" "
                                   "y=\"[0-9.]+\" width=\"1180\\.00\""));
  EXPECT_THAT(r.out, ContainsRegex("<g display=\"none\"><title>io_submit"));
  // A match below the zoomed frame matches every stack in view.
  r = Chromium({"--dump-dom"}, "?z=work&s=main", search_path_);
  EXPECT_EQ(Matched(r.out), "Matched \"main\": 100.00% of all, 100.00% of zoomed");
}

// The y of every rect from the first `from` to the next `to`.
std::vector<double> RectYs(const std::string& dom, const std::string& from, const std::string& to) {
  std::vector<double> ys;
  const size_t start = dom.find(from);
  if (start == std::string::npos) return ys;
  const std::string part = dom.substr(start, dom.find(to, start) - start);
  const std::regex re("<rect [^>]*y=\"([0-9.]+)\"");
  for (std::sregex_iterator it(part.begin(), part.end(), re), end; it != end; ++it) {
    ys.push_back(std::stod((*it)[1]));
  }
  return ys;
}

TEST_F(FlameGraphBrowser, LegendBetweenTitleAndFrames) {
  const RunResult r = Chromium({"--dump-dom"}, "", search_path_);
  ASSERT_THAT(r.out, HasSubstr("data-ehprof-ready=\"1\""));
  EXPECT_THAT(r.out, ContainsRegex("<g id=\"legend\">.*>comm</text>.*>user code</text>.*"
                                   ">unresolved</text>"));
  const std::vector<double> legend = RectYs(r.out, "<g id=\"legend\">", "</g>");
  const std::vector<double> frames = RectYs(r.out, "<g id=\"frames\">", "</svg>");
  ASSERT_EQ(legend.size(), 3u);
  ASSERT_FALSE(frames.empty());
  const double top_frame = *std::min_element(frames.begin(), frames.end());
  for (double y : legend) {
    EXPECT_GT(y, 24);              // below the title's baseline
    EXPECT_LE(y + 11, top_frame);  // swatches are 11 px high
  }
}

// Off-CPU and --wall graphs weigh frames in ms ("NAME (1.5 ms, P%)"): the
// script reads those back too, so their matched share is not 0.
TEST_F(FlameGraphBrowser, SearchInANanosecondGraph) {
  std::vector<ResolvedSample> samples = {Sample({"main", "read"}, 1), Sample({"main", "poll"}, 1)};
  samples[0].weight_ns = 3500000;
  samples[1].weight_ns = 1500000;
  const std::string path = dir_ + "/ns.svg";
  std::ofstream out(path);
  ASSERT_TRUE(WriteFlameGraphSvg(samples, out, {.nanoseconds = true}).ok());
  out.close();
  const RunResult r = Chromium({"--dump-dom"}, "?z=main&s=read", path);
  EXPECT_THAT(r.out, HasSubstr("<title>read (3.5 ms, 70.00%)"));
  EXPECT_EQ(Matched(r.out), "Matched \"read\": 70.00% of all, 70.00% of zoomed");
}

TEST_F(FlameGraphBrowser, TakesTheWindowsWidth) {
  for (int width : {800, 1600}) {
    const RunResult r = Chromium({"--dump-dom", "--window-size=" + std::to_string(width) + ",600"},
                                 "", search_path_);
    const std::string w = std::to_string(width), span = std::to_string(width - 20) + ".00";
    EXPECT_THAT(r.out, ContainsRegex("<svg [^>]*width=\"" + w + "\"")) << width;
    EXPECT_THAT(r.out, ContainsRegex("<svg [^>]*viewBox=\"0 0 " + w + " ")) << width;
    EXPECT_THAT(r.out, ContainsRegex("<g><title>all \\(10 samples, 100\\.00%\\)</title>"
                                     "<rect x=\"10\\.00\" y=\"[0-9.]+\" width=\"" + span + "\""))
        << width;
  }
}

// playwright-core, pinned, in the npm cache the consumer tests share
// (tests/consumers/perf_script_flamegraph.sh); installed on first use.
constexpr char kPlaywright[] = "playwright-core@1.65.1";

std::string NpmCache() {
  const char* dir = getenv("EHPROF_NPM_CACHE");
  return dir && *dir ? dir : "/var/cache/ehprof/npm";
}

// The UI driven through clicks, the prompt and the keyboard by
// tests/flamegraph_ui.js; its checks are listed there.
TEST_F(FlameGraphBrowser, UiWithPlaywright) {
  const std::string node = access("/usr/bin/node", X_OK) == 0 ? "/usr/bin/node" : "";
  const std::string module = NpmCache() + "/node_modules/playwright-core";
  if (node.empty()) {
    const char* ci = getenv("CI");
    ASSERT_FALSE(ci && std::string(ci) == "true") << "node not installed (scripts/install_deps.sh)";
    GTEST_SKIP() << "node not installed";
  }
  if (access((module + "/package.json").c_str(), R_OK) != 0) {
    std::filesystem::create_directories(NpmCache());
    const RunResult npm = RunBounded(
        {"/bin/sh", "-c",
         "cd '" + NpmCache() + "' && npm install --silent --no-audit --no-fund " + kPlaywright},
        dir_);
    ASSERT_EQ(npm.exit_code, 0) << "npm install " << kPlaywright << ":\n" << npm.out << npm.err;
  }
  const RunResult r = RunBounded({node, testing::SourcePath("tests/flamegraph_ui.js"), module,
                                  chromium_, search_path_, dir_ + "/playwright-profile"},
                                 dir_);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("UI checks passed")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok: typed [fio] matches literally"));
  EXPECT_THAT(r.out, HasSubstr("ok: legend visible"));
  std::cout << r.out;
}

}  // namespace
}  // namespace ehprof
