// Credentials of the sinks: read from files (never argv), checked before
// use, sent, and never shown; URL user information refused with a pointer
// to the file options; no basic auth with an empty password.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "agent/sink/http_post.h"
#include "agent/sink/otlp_client.h"
#include "agent/sink/pyroscope_client.h"
#include "agent/sink/secret_file.h"
#include "base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/ehprof_secret_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(SecretFileTest, TheFirstLineOfAPrivateFile) {
  auto s = ReadSecretLine(Write("token", "  s3cret-token \nignored\n", 0400), "--bearer-token-file");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, "s3cret-token");
}

TEST_F(SecretFileTest, RefusedWhenOthersCanWriteItOrItIsEmptyOrALink) {
  const std::string shared = Write("shared", "s3cret\n", 0620);
  const std::string empty = Write("empty", "\n");
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink((dir_ + "/token").c_str(), link.c_str()), 0);
  Write("token", "s3cret\n");
  for (const std::string& path : {shared, empty, link, dir_}) {
    auto s = ReadSecretLine(path, "--basic-auth-password-file");
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("--basic-auth-password-file " + path));
    EXPECT_THAT(std::string(s.status().message()), Not(HasSubstr("s3cret")));
  }
}

TEST_F(SecretFileTest, HeaderLinesWithCommentsAndCarriageReturns) {
  auto h = ReadHeaderFile(Write("headers", "# from the vault\nAuthorization: Bearer s3cret\r\n\nX-Tenant: a b\n"),
                          "--otlp-header-file");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(*h, ElementsAre("Authorization: Bearer s3cret", "X-Tenant: a b"));
}

TEST_F(SecretFileTest, ABadHeaderLineIsNamedByNumberNotShown) {
  for (const std::string text : {"Authorization: Bearer s3cret\nno colon s3cret\n", "Bad Name: s3cret\n",
                                  "X: s3cret\x01\n", "# only a comment\n"}) {
    auto h = ReadHeaderFile(Write("headers", text), "--otlp-header-file");
    ASSERT_FALSE(h.ok()) << text;
    EXPECT_THAT(std::string(h.status().message()), HasSubstr("--otlp-header-file " + dir_ + "/headers: "));
    EXPECT_THAT(std::string(h.status().message()), Not(HasSubstr("s3cret")));
  }
}

TEST(UrlCredentials, RedactedInWhatIsShown) {
  EXPECT_EQ(RedactUrl("http://user:pa@ss@host:4040/x@y"), "http://***@host:4040/x@y");
  EXPECT_EQ(RedactUrl("https://host/path@x"), "https://host/path@x");
  EXPECT_EQ(RedactUrl("user:pass@host"), "***@host");
}

TEST(UrlCredentials, RefusedWithTheFileOptionsNamed) {
  PyroscopeOptions p;
  p.url = "http://admin:s3cret@127.0.0.1:4040";
  auto c = PyroscopeClient::Create(p);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_THAT(std::string(c.status().message()), Not(HasSubstr("s3cret")));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--basic-auth-password-file"));
  OtlpOptions o;
  o.url = "http://:s3cret@127.0.0.1:4318";
  auto d = OtlpClient::Create(o);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), Not(HasSubstr("s3cret")));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("--otlp-header-file"));
}

TEST(UrlCredentials, NoBasicAuthWithoutAPassword) {
  PyroscopeOptions p;
  p.url = "http://127.0.0.1:4040";
  p.basic_user = "admin";
  auto c = PyroscopeClient::Create(p);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--basic-auth-password-file"));
  p.basic_password = "pw";
  EXPECT_TRUE(PyroscopeClient::Create(p).ok());
}

// A loopback listener that answers one request 200 and keeps its bytes.
class OneRequest {
 public:
  OneRequest() {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(listener_.get(), 1) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OneRequest() {
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  // After the client is done.
  const std::string& request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  void Serve() {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return;
    UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buf[4096];
    // Headers and a body of Content-Length bytes, 10 s at most a read.
    for (;;) {
      pollfd q{c.get(), POLLIN, 0};
      if (::poll(&q, 1, 10000) != 1) return;
      const ssize_t n = ::read(c.get(), buf, sizeof(buf));
      if (n <= 0) return;
      request_.append(buf, static_cast<size_t>(n));
      const size_t end = request_.find("\r\n\r\n");
      const size_t cl = request_.find("Content-Length: ");
      if (end != std::string::npos && cl != std::string::npos &&
          request_.size() >= end + 4 + std::stoul(request_.substr(cl + 16))) {
        break;
      }
    }
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!::write(c.get(), ok.data(), ok.size());
  }
  UniqueFd listener_;
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

TEST_F(SecretFileTest, HeadersFromTheFileAreSentWithEachRequest) {
  auto headers = ReadHeaderFile(Write("headers", "Authorization: Bearer s3cret\n"), "--otlp-header-file");
  ASSERT_TRUE(headers.ok()) << headers.status();
  OneRequest server;
  ASSERT_NE(server.port(), 0);
  OtlpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server.port());
  o.compression = "none";
  o.headers = *headers;
  auto c = OtlpClient::Create(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->Push("body").ok());
  EXPECT_THAT(server.request(), HasSubstr("\r\nAuthorization: Bearer s3cret\r\n"));
}

}  // namespace
}  // namespace ehprof
