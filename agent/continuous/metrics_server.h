// --metrics-addr: the agent's self-metrics as a Prometheus scrape target
// (text exposition format 0.0.4 at GET /metrics), served by libmicrohttpd
// on its own thread.
#ifndef EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_
#define EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/scoped_handle.h"

struct MHD_Daemon;

namespace ehprof {

// MHD_stop_daemon, with libmicrohttpd's header kept out of includers.
void StopDaemon(MHD_Daemon* d);

class MetricsServer {
 public:
  // addr is HOST:PORT with a numeric IPv4 host (127.0.0.1:9465; port 0
  // picks one). render is called on the server's thread for each scrape.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& addr,
                                                              std::function<std::string()> render);
  ~MetricsServer();
  uint16_t port() const { return port_; }

 private:
  MetricsServer() = default;
  std::function<std::string()> render_;
  ScopedHandle<MHD_Daemon, StopDaemon> daemon_;
  uint16_t port_ = 0;
  friend struct MetricsHandler;
};

// One metric in the exposition format: HELP, TYPE and the sample line.
std::string PromMetric(const std::string& name, const std::string& type, const std::string& help,
                       double value, const std::string& labels = "");

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_METRICS_SERVER_H_
