#include "agent/continuous/metrics_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/guarded.h"

namespace ehprof {

struct MetricsHandler {
  // On libmicrohttpd's thread: an exception in answering closes that
  // connection (MHD_NO), not the agent.
  static MHD_Result Handle(void* cls, MHD_Connection* c, const char* url, const char* method,
                           const char*, const char*, size_t*, void**) {
    MHD_Result ret = MHD_NO;
    (void)Guarded("the metrics server", "that scrape is not answered", [&] {
      ret = Respond(static_cast<MetricsServer*>(cls), c, url, method);
      return absl::OkStatus();
    });
    return ret;
  }
  static MHD_Result Respond(MetricsServer* self, MHD_Connection* c, const char* url, const char* method) {
    const bool get = std::strcmp(method, "GET") == 0;
    const bool metrics = std::strcmp(url, "/metrics") == 0;
    std::string body = !get ? "only GET\n" : metrics ? self->render_() : "see /metrics\n";
    MHD_Response* r =
        MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type",
                            metrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
    const MHD_Result ret =
        MHD_queue_response(c, !get ? MHD_HTTP_METHOD_NOT_ALLOWED : metrics ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, r);
    MHD_destroy_response(r);
    return ret;
  }
};

void StopDaemon(MHD_Daemon* d) { MHD_stop_daemon(d); }

MetricsServer::~MetricsServer() = default;

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
  s->daemon_.reset(MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                                    static_cast<uint16_t>(port), nullptr, nullptr,
                                    &MetricsHandler::Handle, s.get(), MHD_OPTION_SOCK_ADDR, &sa,
                                    MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END));
  if (!s->daemon_) {
    return absl::UnavailableError(absl::StrCat("--metrics-addr ", addr, ": cannot listen there"));
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(s->daemon_.get(), MHD_DAEMON_INFO_BIND_PORT);
  s->port_ = info ? info->port : static_cast<uint16_t>(port);
  return s;
}

std::string PromMetric(const std::string& name, const std::string& type, const std::string& help,
                       double value, const std::string& labels) {
  return absl::StrFormat("# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n", name, help, name, type, name,
                         labels.empty() ? "" : absl::StrCat("{", labels, "}"), value);
}

}  // namespace ehprof
