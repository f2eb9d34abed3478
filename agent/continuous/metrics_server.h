// --metrics-addr: the agent's self-metrics as a Prometheus scrape target
// (text exposition format 0.0.4 at GET /metrics), served on its own thread.
// Off unless asked for; it listens where --metrics-addr says (any local user
// can connect to a loopback address). Whoever connects must not block or
// grow the agent, so what it keeps is bounded whatever they do:
//  - poll(), not select(): any fd number (the agent holds thousands);
//  - at most kMaxConnections connections; a new one over that closes the
//    oldest (an idle flood cannot keep a scraper out, who sends its request
//    at once);
//  - each connection has kDeadlineMs from its accept for the whole request
//    and response (a request sent byte by byte is cut off then), and a
//    request head of at most kMaxRequestBytes;
//  - the page is rendered at most once per kRenderEveryMs (a flood of
//    scrapes costs socket calls, not renders).
#ifndef EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_
#define EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace ehprof {

class MetricsServer {
 public:
  static constexpr size_t kMaxConnections = 16;
  static constexpr size_t kMaxRequestBytes = 8192;
  static constexpr uint64_t kDeadlineMs = 2000;
  static constexpr uint64_t kRenderEveryMs = 1000;

  // addr is HOST:PORT with a numeric IPv4 host (127.0.0.1:9465; port 0
  // picks one). render is called on the server's thread for a scrape.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& addr,
                                                              std::function<std::string()> render);
  ~MetricsServer();  // stops the thread; open connections are closed
  uint16_t port() const { return port_; }

 private:
  struct Connection {
    UniqueFd fd;
    uint64_t deadline_ms = 0;
    std::string in;   // the request head so far
    std::string out;  // the response, once the head is complete
    size_t sent = 0;
  };
  MetricsServer() = default;
  void Serve();
  // Accepts every pending connection; over the limit the oldest goes.
  void AcceptAll(uint64_t now_ms);
  // Reads or writes what poll() said is ready; false when it is done with.
  bool Step(Connection& c, short revents);
  // The whole response to a complete request head.
  std::string Respond(const std::string& head);

  std::function<std::string()> render_;
  std::string page_;
  uint64_t rendered_ms_ = 0;
  uint64_t accept_paused_until_ms_ = 0;  // out of fds until then
  UniqueFd listen_;
  UniqueFd stop_;  // an eventfd: readable when the destructor runs
  std::deque<Connection> conns_;
  std::thread thread_;
  uint16_t port_ = 0;
};

// One metric in the exposition format: HELP, TYPE and the sample line.
std::string PromMetric(const std::string& name, const std::string& type, const std::string& help,
                       double value, const std::string& labels = "");
// One metric family of several labelled samples ("sink=\"otlp\"", value):
// HELP and TYPE once.
std::string PromFamily(const std::string& name, const std::string& type, const std::string& help,
                       const std::vector<std::pair<std::string, double>>& samples);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_
