// DwarfSymbolizer with debuginfod: a real local server (Debian's
// `debuginfod` package) that holds the only copy of a program's debug file,
// and servers that are down or never answer, which must cost a bounded wait.
#include <arpa/inet.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "symbolizer/debuginfod_client.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool CiMustNotSkip() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

bool Shell(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

std::string BuildIdHex(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  elf_version(EV_CURRENT);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  const void* bits = nullptr;
  ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
  std::string hex =
      len > 0 ? absl::BytesToHexString(absl::string_view(static_cast<const char*>(bits), len)) : "";
  if (elf) elf_end(elf);
  if (fd >= 0) close(fd);
  return hex;
}

sockaddr_in Loopback(int port) {
  return sockaddr_in{AF_INET, htons(static_cast<uint16_t>(port)), {htonl(INADDR_LOOPBACK)}, {}};
}

// A listening TCP socket on 127.0.0.1 (port 0: any free one).
int Listen(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// The HTTP status of GET `path`, 0 when the server does not answer. Our
// own request, not libdebuginfod's: a miss it saw would be cached.
int HttpStatus(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr = Loopback(port);
  int status = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    char buf[64] = {};
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()) &&
        read(fd, buf, sizeof buf - 1) > 12) {
      sscanf(buf, "HTTP/%*s %d", &status);
    }
  }
  close(fd);
  return status;
}

// A stripped program whose only debug file lives in `served_` (see SetUp).
class DebuginfodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ehprof_debuginfod_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    served_ = dir_ + "/served";
    for (const char* sub : {"/served", "/bin", "/cache"}) fs::create_directories(dir_ + sub);
    // strip --strip-debug keeps .symtab and the build-id note and adds no
    // .gnu_debuglink; the debug file is not next to the program either.
    std::string original = testing::TestdataPath("plt_calls");
    stripped_ = dir_ + "/bin/plt_calls";
    ASSERT_TRUE(Shell("objcopy --only-keep-debug '" + original + "' " + served_ + "/x.debug"));
    ASSERT_TRUE(Shell("strip --strip-debug -o " + stripped_ + " '" + original + "'"));
    build_id_ = BuildIdHex(stripped_);
    ASSERT_EQ(build_id_.size(), 40u);
    ASSERT_FALSE(fs::exists("/usr/lib/debug/.build-id/" + build_id_.substr(0, 2) + "/" +
                            build_id_.substr(2) + ".debug"));
    std::optional<testing::SymbolRange> inner = testing::FindSymbol(original, "plt_inner");
    ASSERT_TRUE(inner);
    plt_inner_ = inner->addr;
    setenv("DEBUGINFOD_CACHE_PATH", (dir_ + "/cache").c_str(), 1);
    unsetenv("DEBUGINFOD_PROGRESS");
  }

  void TearDown() override {
    StopServer();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Starts `debuginfod` on a free port; "" or why not.
  std::string StartServer() {
    if (!Shell("command -v debuginfod")) return "debuginfod is not installed";
    for (int attempt = 0; attempt < 3 && server_ < 0; ++attempt) {
      int fd = Listen(&port_);
      if (fd < 0) return "no free port";
      close(fd);  // debuginfod binds it; a race with other tests is retried
      std::string port = std::to_string(port_), db = dir_ + "/db.sqlite";
      int log = open((dir_ + "/debuginfod.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      server_ = fork();  // the test has no other threads yet
      if (server_ == 0) {
        dup2(log, 1);
        dup2(log, 2);
        // No rescans or grooming: one scan of `served_` at start.
        execlp("debuginfod", "debuginfod", "-F", "-p", port.c_str(), "-d", db.c_str(), "-t", "0",
               "-g", "0", "-c", "1", "-v", served_.c_str(), nullptr);
        _exit(127);
      }
      close(log);
      // Indexed when it serves our build-id.
      std::string url = "/buildid/" + build_id_ + "/debuginfo";
      for (auto end = Clock::now() + std::chrono::seconds(20); Clock::now() < end;) {
        if (HttpStatus(port_, url) == 200) return "";
        if (waitpid(server_, nullptr, WNOHANG) == server_) {
          server_ = -1;  // exited (port taken?): try another port
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    if (server_ < 0) {
      std::ifstream log(dir_ + "/debuginfod.log");
      return "debuginfod exited at start: " + std::string(std::istreambuf_iterator<char>(log), {});
    }
    StopServer();
    return "debuginfod did not index " + served_ + " within 20 s";
  }

  void StopServer() {
    if (server_ < 0) return;
    kill(server_, SIGTERM);
    for (int i = 0; i < 50 && waitpid(server_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (waitpid(server_, nullptr, WNOHANG) == 0) {
      kill(server_, SIGKILL);
      waitpid(server_, nullptr, 0);
    }
    server_ = -1;
  }

  // Symbolizes plt_inner in the stripped program with a fresh symbolizer;
  // returns the seconds it took.
  double Symbolize(std::vector<Symbolizer::SourceFrame>* frames, bool* has_dwarf) {
    auto start = Clock::now();
    Warnings warnings;
    DwarfSymbolizer symbolizer(&warnings);
    *frames = symbolizer.Frames(stripped_, plt_inner_);
    *has_dwarf = symbolizer.HasDwarf(stripped_);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // With a server at `port` that does not deliver: names from the symbol
  // table, no DWARF. Returns the seconds it took.
  double FallbackSeconds(int port) {
    setenv("DEBUGINFOD_URLS", ("http://127.0.0.1:" + std::to_string(port)).c_str(), 1);
    setenv("DEBUGINFOD_TIMEOUT", "3", 1);
    unsetenv("DEBUGINFOD_RETRY_LIMIT");
    BoundDebuginfodTimeout();  // ours applies, as main() sets it: no retries
    std::vector<Symbolizer::SourceFrame> frames;
    bool has_dwarf = true;
    double seconds = Symbolize(&frames, &has_dwarf);
    EXPECT_FALSE(has_dwarf);
    EXPECT_EQ(frames.size(), 1u);
    for (const auto& frame : frames) {
      EXPECT_EQ(frame.function, "plt_inner");  // .symtab survives strip --strip-debug
      EXPECT_EQ(frame.file, "");
      EXPECT_EQ(frame.line, 0u);
    }
    return seconds;
  }

  std::string dir_, served_, stripped_, build_id_;
  uint64_t plt_inner_ = 0;
  int port_ = 0;
  pid_t server_ = -1;
};

TEST_F(DebuginfodTest, DebugFileComesFromTheServer) {
  if (std::string why = StartServer(); !why.empty()) {
    if (CiMustNotSkip()) FAIL() << why << " (CI=true; scripts/install_deps.sh installs it)";
    std::printf("SKIPPED: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  std::vector<Symbolizer::SourceFrame> frames;
  bool has_dwarf = false;
  // Without a server the stripped program has no DWARF: the server is what
  // supplies it below.
  unsetenv("DEBUGINFOD_URLS");
  Symbolize(&frames, &has_dwarf);
  ASSERT_FALSE(has_dwarf);
  setenv("DEBUGINFOD_URLS", ("http://127.0.0.1:" + std::to_string(port_)).c_str(), 1);
  Symbolize(&frames, &has_dwarf);
  EXPECT_TRUE(has_dwarf);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "plt_inner");
  EXPECT_THAT(frames[0].file, ::testing::EndsWith("testdata/plt_calls.c"));
  EXPECT_GT(frames[0].line, 0u);
  // The same answer as from the unstripped program.
  Warnings warnings;
  DwarfSymbolizer local(&warnings);
  EXPECT_EQ(frames[0].line,
            local.Frames(testing::TestdataPath("plt_calls"), plt_inner_).at(0).line);
  EXPECT_TRUE(fs::exists(dir_ + "/cache/" + build_id_ + "/debuginfo"));
}

// Nothing listens: refused at once.
TEST_F(DebuginfodTest, ServerDownFallsBackToSymbols) {
  int port = 0;
  int fd = Listen(&port);
  ASSERT_GE(fd, 0);
  close(fd);
  double seconds = FallbackSeconds(port);
  std::printf("refused: %.2f s\n", seconds);
  EXPECT_LT(seconds, 15);
}

// Accepts connections, reads nothing, never answers.
TEST_F(DebuginfodTest, SilentServerCostsOneBoundedTimeout) {
  int port = 0;
  int listener = Listen(&port);
  ASSERT_GE(listener, 0);
  std::atomic<bool> stop{false};
  std::thread silent([&] {
    std::vector<int> held;
    while (!stop) {
      pollfd p{listener, POLLIN, 0};
      if (poll(&p, 1, 100) == 1) held.push_back(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    }
    for (int c : held) close(c);  // close(-1) is harmless
  });
  double seconds = FallbackSeconds(port);
  stop = true;
  silent.join();
  close(listener);
  std::printf("silent server: %.2f s\n", seconds);
  EXPECT_GT(seconds, 2.5) << "the server was not asked";
  // One wait, not 1 + libdebuginfod's default 2 retries (9 s).
  EXPECT_LT(seconds, 8);
}

// Answers every request on `listener` with 200 and `body` under a
// Content-Length of `claimed` (more than body.size(): the connection closes
// mid-body), until `stop`; counts the requests it answered.
void ServeCanned(int listener, const std::string& body, size_t claimed,
                 const std::atomic<bool>& stop, std::atomic<int>* answered) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(claimed) + "\r\n\r\n";
  while (!stop) {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 100) != 1) continue;
    int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    timeval tv{2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string request;
    char buf[4096];
    ssize_t n;
    while (request.find("\r\n\r\n") == std::string::npos && (n = read(c, buf, sizeof buf)) > 0) {
      request.append(buf, n);
    }
    // MSG_NOSIGNAL: a client that hangs up early must not kill the test.
    std::string reply = head + body;
    for (size_t sent = 0; sent < reply.size();) {
      n = send(c, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += n;
    }
    ++*answered;
    close(c);
  }
}

// A server that answers, but not with a debug file: names from the symbol
// table as without a server, no crash, and no waiting for the timeout.
TEST_F(DebuginfodTest, GarbageFromServerFallsBackToSymbols) {
  std::ifstream in(served_ + "/x.debug", std::ios::binary);
  const std::string debug_file(std::istreambuf_iterator<char>(in), {});
  ASSERT_GT(debug_file.size(), 1024u);
  const std::string half = debug_file.substr(0, debug_file.size() / 2);
  std::string random(64 << 10, '\0');
  std::mt19937 rng(1);
  for (char& c : random) c = static_cast<char>(rng());
  struct Case {
    const char* name;
    const std::string& body;
    size_t claimed;
  };
  // A prefix of the real file gets past the ELF magic: libelf and libdw, not
  // only the client, must reject it.
  for (const Case& c : {Case{"random bytes", random, random.size()},
                        Case{"half the debug file", half, half.size()},
                        Case{"closed mid-body", half, debug_file.size()}}) {
    SCOPED_TRACE(c.name);
    // libdebuginfod caches what it downloaded, garbage included: each case
    // must reach the server.
    fs::remove_all(dir_ + "/cache");
    fs::create_directories(dir_ + "/cache");
    int port = 0;
    int listener = Listen(&port);
    ASSERT_GE(listener, 0);
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::thread server([&] { ServeCanned(listener, c.body, c.claimed, stop, &answered); });
    double seconds = FallbackSeconds(port);
    stop = true;
    server.join();
    close(listener);
    std::printf("%s: %.2f s, %d requests\n", c.name, seconds, answered.load());
    EXPECT_GT(answered, 0) << "the server was not asked";
    // An answer is not a timeout: well under the 3 s FallbackSeconds sets.
    EXPECT_LT(seconds, 2.5);
  }
}

// In a child process, so that the test's own environment stays as it was.
// Returns 0 when both variables read `want_*` after BoundDebuginfodTimeout
// (what main() calls before any thread starts).
int EnvAfterBounding(const char* user_timeout, int want_timeout, int want_retries) {
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("DEBUGINFOD_RETRY_LIMIT");
    user_timeout ? setenv("DEBUGINFOD_TIMEOUT", user_timeout, 1) : unsetenv("DEBUGINFOD_TIMEOUT");
    BoundDebuginfodTimeout();
    const char* timeout = getenv("DEBUGINFOD_TIMEOUT");
    const char* retries = getenv("DEBUGINFOD_RETRY_LIMIT");
    if (!timeout || atoi(timeout) != want_timeout) _exit(1);
    if (!retries || atoi(retries) != want_retries) _exit(2);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(DebuginfodTimeout, DefaultUnlessTheUserSetOne) {
  EXPECT_EQ(EnvAfterBounding(nullptr, kDebuginfodTimeoutSeconds, kDebuginfodRetryLimit), 0);
  EXPECT_EQ(EnvAfterBounding("42", 42, kDebuginfodRetryLimit), 0);
}

// A symbolizer may be made on a worker thread: it must not write the
// environment (setenv there races getenv in every other thread).
TEST(DebuginfodTimeout, ASymbolizerLeavesTheEnvironmentAlone) {
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("DEBUGINFOD_TIMEOUT");
    unsetenv("DEBUGINFOD_RETRY_LIMIT");
    Warnings warnings;
    DwarfSymbolizer symbolizer(&warnings);
    _exit(getenv("DEBUGINFOD_TIMEOUT") == nullptr && getenv("DEBUGINFOD_RETRY_LIMIT") == nullptr ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace ehprof
