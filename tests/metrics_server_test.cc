// MetricsServer without the agent: it answers GET /metrics, refuses what
// is not that, and stays bounded whatever its clients do (idle connections
// past its limit, a request sent a byte at a time, a head too large).
#include "agent/continuous/metrics_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/loopback_http.h"

namespace ehprof {
namespace {

using testing::ConnectLoopback;
using testing::ReadUntilClosed;

std::string Request(uint16_t port, const std::string& req) { return testing::LoopbackRequest(port, req); }

int Connect(uint16_t port) {
  const int fd = ConnectLoopback(port);
  EXPECT_GE(fd, 0);
  return fd;
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = MetricsServer::Start("127.0.0.1:0", [this] {
      ++renders_;
      return std::string("# TYPE x gauge\nx 1\n");
    });
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  std::atomic<int> renders_{0};
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(MetricsServerTest, AnswersGetMetricsAndRefusesTheRest) {
  const std::string ok = Request(server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Length: 19\r\n"), std::string::npos) << ok;
  EXPECT_EQ(ok.substr(ok.size() - 19), "# TYPE x gauge\nx 1\n");
  EXPECT_EQ(Request(server_->port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(Request(server_->port(), "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Request(server_->port(), "nonsense\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Request(server_->port(), "GET /metrics HTTP/1.1\r\nX: " + std::string(10000, 'a'))
                .rfind("HTTP/1.1 431", 0),
            0u);
  EXPECT_FALSE(MetricsServer::Start("localhost:1", [] { return std::string(); }).ok());
}

TEST_F(MetricsServerTest, IdleConnectionsPastTheLimitDoNotKeepAScraperOut) {
  std::vector<int> idle;
  for (size_t i = 0; i < 10 * MetricsServer::kMaxConnections; ++i) idle.push_back(Connect(server_->port()));
  const std::string ok = Request(server_->port(), "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
  // The server closed all but its limit's worth at once, the rest at their
  // deadline: every idle connection ends (EOF, or a reset), none answered.
  for (int fd : idle) {
    EXPECT_EQ(ReadUntilClosed(fd), "");
    close(fd);
  }
}

TEST_F(MetricsServerTest, ARequestSentByteByByteIsCutOffAtItsDeadline) {
  const int fd = Connect(server_->port());
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  bool closed = false;
  // A byte every 200 ms takes 7 s for the whole request; the server ends
  // the connection before it is complete.
  for (size_t i = 0; i < req.size() && !closed; ++i) {
    closed = send(fd, &req[i], 1, MSG_NOSIGNAL) != 1;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 200) == 1) {
      char c;
      closed = recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
    }
  }
  EXPECT_TRUE(closed) << "the whole request went through, a byte at a time";
  close(fd);
  // Meanwhile and after, scrapes are answered.
  EXPECT_EQ(Request(server_->port(), "GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MetricsServerTest, AFloodOfScrapesRendersThePageOncePerSecondAtMost) {
  const int before = renders_.load();
  int scrapes = 0;
  for (; scrapes < 50; ++scrapes) {
    if (Request(server_->port(), "GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200", 0) != 0) break;
  }
  EXPECT_EQ(scrapes, 50);
  EXPECT_LT(renders_.load() - before, scrapes);
}

}  // namespace
}  // namespace ehprof
