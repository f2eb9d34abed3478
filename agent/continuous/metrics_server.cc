#include "agent/continuous/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/guarded.h"
#include "base/monotonic_clock.h"

namespace ehprof {
namespace {

uint64_t NowMs() { return MonotonicNs() / 1'000'000; }

std::string Response(int code, const char* reason, const char* type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

// Where the request head ends (past its blank line), or npos.
size_t HeadEnd(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const size_t lf = in.find("\n\n");
  return lf == std::string::npos ? lf : lf + 2;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& addr, std::function<std::string()> render) {
  const size_t colon = addr.rfind(':');
  uint32_t port = 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (colon == std::string::npos || !absl::SimpleAtoi(addr.substr(colon + 1), &port) || port > 65535 ||
      inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-addr ", addr, ": not IPV4:PORT"));
  }
  sa.sin_port = htons(static_cast<uint16_t>(port));
  auto s = std::unique_ptr<MetricsServer>(new MetricsServer());
  s->render_ = std::move(render);
  s->listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  s->stop_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  const int one = 1;
  if (!s->listen_.valid() || !s->stop_.valid() ||
      ::setsockopt(s->listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(s->listen_.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0 ||
      ::listen(s->listen_.get(), 64) != 0) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-addr ", addr, ": cannot listen there: ", std::strerror(errno)));
  }
  socklen_t len = sizeof(sa);
  if (::getsockname(s->listen_.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    s->port_ = ntohs(sa.sin_port);
  }
  s->thread_ = std::thread([server = s.get()] {
    (void)Guarded("the metrics server", "it stops answering", [&] {
      server->Serve();
      return absl::OkStatus();
    });
  });
  return s;
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof(one)) < 0) {
      // An eventfd's counter cannot overflow from one write: never here.
    }
    thread_.join();
  }
}

void MetricsServer::Serve() {
  std::vector<pollfd> fds;
  for (;;) {
    const uint64_t now = NowMs();
    std::erase_if(conns_, [&](const Connection& c) { return now >= c.deadline_ms; });
    fds.clear();
    fds.push_back({stop_.get(), POLLIN, 0});
    // Out of fds: the listening socket stays readable; looked at again in
    // a while, not in a busy loop.
    const bool paused = now < accept_paused_until_ms_;
    fds.push_back({paused ? -1 : listen_.get(), POLLIN, 0});
    int timeout = paused ? static_cast<int>(accept_paused_until_ms_ - now) : -1;
    for (const Connection& c : conns_) {
      fds.push_back({c.fd.get(), static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      const auto left = static_cast<int>(c.deadline_ms - now);
      if (timeout < 0 || left < timeout) timeout = left;
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    // Connections first: accepting may close the oldest, moving the rest.
    for (size_t i = 0; i < conns_.size(); ++i) {
      const short revents = fds[i + 2].revents;
      if (revents == 0) continue;
      // An exception in answering (the page's rendering) closes that
      // connection, not the agent.
      bool open = false;
      (void)Guarded("the metrics server", "that scrape is not answered", [&] {
        open = Step(conns_[i], revents);
        return absl::OkStatus();
      });
      if (!open) conns_[i].fd.reset();
    }
    std::erase_if(conns_, [](const Connection& c) { return !c.fd.valid(); });
    if (fds[1].revents) AcceptAll(NowMs());
  }
}

void MetricsServer::AcceptAll(uint64_t now_ms) {
  for (;;) {
    UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ECONNABORTED || errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ms_ = now_ms + 100;
      }
      return;  // none left (EAGAIN), or out of fds: the backlog waits
    }
    if (conns_.size() >= kMaxConnections) conns_.pop_front();
    Connection c;
    c.fd = std::move(fd);
    c.deadline_ms = now_ms + kDeadlineMs;
    conns_.push_back(std::move(c));
  }
}

bool MetricsServer::Step(Connection& c, short revents) {
  if (c.out.empty()) {
    char buf[2048];
    const size_t room = kMaxRequestBytes - c.in.size();
    const ssize_t n = ::recv(c.fd.get(), buf, std::min(sizeof(buf), room), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (n < 0) return true;
    c.in.append(buf, static_cast<size_t>(n));
    const size_t end = HeadEnd(c.in);
    if (end != std::string::npos) {
      c.out = Respond(c.in.substr(0, end));
    } else if (c.in.size() >= kMaxRequestBytes) {
      c.out = Response(431, "Request Header Fields Too Large", "text/plain", "request head too large\n");
    } else {
      return true;
    }
    c.in.clear();
    return true;  // written when poll() says the socket takes it
  }
  if (revents & (POLLERR | POLLHUP)) return false;
  const ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  c.sent += static_cast<size_t>(n);
  if (c.sent < c.out.size()) return true;
  // Done. Input still unread when the socket closes would make the kernel
  // reset the connection, which may destroy the response before the client
  // reads it: what arrived is drained first.
  ::shutdown(c.fd.get(), SHUT_WR);
  char drain[512];
  while (::recv(c.fd.get(), drain, sizeof(drain), MSG_DONTWAIT) > 0) {
  }
  return false;
}

std::string MetricsServer::Respond(const std::string& head) {
  // The request line: METHOD SP TARGET SP VERSION.
  const size_t sp1 = head.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : head.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return Response(400, "Bad Request", "text/plain", "bad request\n");
  const std::string method = head.substr(0, sp1);
  const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
  if (method != "GET") return Response(405, "Method Not Allowed", "text/plain", "only GET\n");
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0) {
    return Response(404, "Not Found", "text/plain", "see /metrics\n");
  }
  const uint64_t now = NowMs();
  if (page_.empty() || now - rendered_ms_ >= kRenderEveryMs) {
    page_ = render_();
    rendered_ms_ = now;
  }
  return Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", page_);
}

std::string PromMetric(const std::string& name, const std::string& type, const std::string& help,
                       double value, const std::string& labels) {
  return absl::StrFormat("# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n", name, help, name, type, name,
                         labels.empty() ? "" : absl::StrCat("{", labels, "}"), value);
}

std::string PromFamily(const std::string& name, const std::string& type, const std::string& help,
                       const std::vector<std::pair<std::string, double>>& samples) {
  std::string out = absl::StrFormat("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (const auto& [labels, value] : samples) absl::StrAppendFormat(&out, "%s{%s} %.17g\n", name, labels, value);
  return out;
}

}  // namespace ehprof
