#include "agent/cli/agent_sinks.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/output/output_pprof.h"
#include "agent/sink/otlp_profiles.h"
#include "agent/sink/secret_file.h"

namespace ehprof {
namespace {

void Say(const std::string& line) { std::fprintf(stderr, "ehprof agent: %s\n", line.c_str()); }

absl::Status ParseLabels(const std::vector<std::string>& flags, Labels* out) {
  for (const std::string& kv : flags) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--label takes K=V, not '", kv, "'"));
    }
    out->emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return absl::OkStatus();
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host[0] ? host : "unknown";
}

std::string QueueCounts(const PushQueue& q) {
  const PushQueue::Counters c = q.counters();
  return absl::StrCat(" (failed attempts ", c.attempts_failed, ", refused ", c.rejected, ", dropped ", c.dropped,
                      ", given up ", c.abandoned, ", queued ", c.queued, ")");
}

// Delivers what is queued (a little time for it), then says what happened.
void CloseQueue(std::unique_ptr<PushQueue>& queue, const std::string& nouns, const std::string& done,
                const std::string& units, const std::string& endpoint) {
  if (!queue) return;
  if (size_t left = queue->Flush(std::chrono::seconds(10)); left > 0) {
    Say(absl::StrCat(left, " ", nouns, " not delivered at exit"));
  }
  const PushQueue::Counters c = queue->counters();
  Say(absl::StrCat(done, " ", c.pushed, " ", units, " to ", endpoint, " (", c.rejected, " refused, ", c.dropped,
                   " dropped)"));
  queue.reset();
}

// A header name that usually carries a credential.
bool LooksSecret(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (const char* word : {"authorization", "token", "key", "secret", "password", "cookie"}) {
    if (absl::StrContains(n, word)) return true;
  }
  return false;
}

}  // namespace

absl::Status AgentSinks::OpenOtlp(const SinkFlags& flags) {
  if (flags.otlp.url.empty()) return absl::OkStatus();
  Labels labels;
  if (absl::Status s = ParseLabels(flags.labels, &labels); !s.ok()) return s;
  otlp_attributes_ = {{"host.name", HostName()}, {"ehprof.view", std::string(StackViewName(flags.view))}};
  otlp_attributes_.insert(otlp_attributes_.end(), labels.begin(), labels.end());
  for (const std::string& h : flags.otlp.headers) {
    if (LooksSecret(h.substr(0, h.find(':')))) {
      Say(absl::StrCat("warning: --otlp-header ", h.substr(0, h.find(':')),
                       ": every local user sees the command line (ps); a secret belongs in --otlp-header-file"));
    }
  }
  OtlpOptions otlp = flags.otlp;
  if (!flags.otlp_header_file.empty()) {
    auto headers = ReadHeaderFile(flags.otlp_header_file, "--otlp-header-file");
    if (!headers.ok()) return headers.status();
    otlp.headers.insert(otlp.headers.end(), headers->begin(), headers->end());
  }
  auto c = OtlpClient::Create(std::move(otlp));
  if (!c.ok()) return c.status();
  otlp_ = *std::move(c);
  PushQueue::Options qo;
  qo.max_queued = flags.queue_size;
  qo.max_bytes = flags.queue_mb << 20;
  otlp_queue_ = std::make_unique<PushQueue>(
      [this](const std::string& body) { return otlp_->Push(body); },
      [](const std::string& line) { Say("otlp " + line); }, qo);
  return absl::OkStatus();
}

std::string PushBody(const IntervalOutput& out, const Labels& common, std::vector<std::string>* dropped) {
  std::vector<PushSeries> series;
  PprofOptions po;
  po.frequency_hz = out.frequency_hz;
  po.time_nanos = static_cast<int64_t>(out.start_unix_ns);
  po.duration_nanos = static_cast<int64_t>(out.duration_ns);
  po.build_ids = out.build_ids;
  for (const auto& [service, samples] : out.by_service) {
    // Timer samples as process_cpu; --off-cpu time as off_cpu (the name and
    // sample type Pyroscope's own eBPF agent uses).
    const ServiceSeries named = SplitSeriesKey(service);
    std::vector<uint32_t> cpu, off;
    for (uint32_t i : samples) (out.profile.samples[i].off_cpu ? off : cpu).push_back(i);
    for (auto* part : {&cpu, &off}) {
      if (part->empty()) continue;
      const bool off_cpu = part == &off;
      po.ns_type = off_cpu ? "off_cpu" : "";
      std::ostringstream pprof;
      if (absl::Status st = WritePprof(out.profile, *part, pprof, po); !st.ok()) {
        dropped->push_back(absl::StrCat("the ", off_cpu ? "off_cpu" : "process_cpu", " series of service ",
                                        named.name, ": ", st.message()));
        continue;
      }
      PushSeries s;
      s.labels = {{"__name__", off_cpu ? "off_cpu" : "process_cpu"}, {"service_name", named.name}};
      // Pyroscope's label names have no '.': container_id, k8s_pod_uid.
      for (const auto& [k, v] : named.labels) s.labels.emplace_back(absl::StrReplaceAll(k, {{".", "_"}}), v);
      if (auto name = out.container_names.find(service); name != out.container_names.end()) {
        s.labels.emplace_back("container_name", name->second);
      }
      s.labels.insert(s.labels.end(), common.begin(), common.end());
      s.profiles.push_back(pprof.str());
      series.push_back(std::move(s));
    }
  }
  return EncodePushRequest(series);
}

absl::Status AgentSinks::Open(const SinkFlags& flags) {
  if (!flags.output_dir.empty()) {
    auto d = OutputDir::Open(flags.output_dir, flags.keep);
    if (!d.ok()) return d.status();
    dir_ = std::make_unique<OutputDir>(*std::move(d));
  }
  if (absl::Status s = OpenOtlp(flags); !s.ok()) return s;
  if (flags.push.url.empty()) return absl::OkStatus();
  PyroscopeOptions push = flags.push;
  for (const auto& [file, flag, out] :
       {std::tuple{flags.basic_password_file, "--basic-auth-password-file", &push.basic_password},
        std::tuple{flags.bearer_file, "--bearer-token-file", &push.bearer_token}}) {
    if (file.empty()) continue;
    auto secret = ReadSecretLine(file, flag);
    if (!secret.ok()) return secret.status();
    *out = *secret;
  }
  if (absl::Status s = ParseLabels(flags.labels, &labels_); !s.ok()) return s;
  labels_.emplace_back("hostname", HostName());
  labels_.emplace_back("ehprof_view", StackViewName(flags.view));
  // The labels every series will carry, with sample names for the two the
  // agent sets per series.
  Labels check = labels_;
  check.emplace_back("__name__", "process_cpu");
  check.emplace_back("service_name", "x");
  check.emplace_back("container_id", "x");
  check.emplace_back("k8s_pod_uid", "x");
  if (absl::Status s = ValidateLabels(check); !s.ok()) return s;
  auto c = PyroscopeClient::Create(push);
  if (!c.ok()) return c.status();
  client_ = *std::move(c);
  PushQueue::Options qo;
  qo.max_queued = flags.queue_size;
  qo.max_bytes = flags.queue_mb << 20;
  queue_ = std::make_unique<PushQueue>([this](const std::string& body) { return client_->Push(body); },
                                       Say, qo);
  return absl::OkStatus();
}

void AgentSinks::Write(const IntervalOutput& out) {
  if (dir_) WriteDir(out);
  if (otlp_queue_ && !out.by_service.empty()) otlp_queue_->Enqueue(EncodeOtlpProfiles(out, otlp_attributes_));
  if (!queue_ || out.by_service.empty()) return;
  std::vector<std::string> dropped;
  std::string body = PushBody(out, labels_, &dropped);
  for (const std::string& d : dropped) Say(absl::StrCat("left out of the push: ", d));
  series_dropped_ += dropped.size();
  queue_->Enqueue(std::move(body));
}

void AgentSinks::WriteDir(const IntervalOutput& out) {
  // A full disk fails every interval the same way: said once, counted, and
  // said again when a write succeeds.
  absl::Status s = dir_->Write(out);
  if (!s.ok()) {
    if (dir_failing_++ == 0) Say(absl::StrCat("--output-dir: ", s.message(), " (said once until a file is written)"));
    ++dir_failures_;
  } else {
    ++dir_written_;
  }
  if (s.ok() && dir_failing_ > 0) {
    Say(absl::StrCat("--output-dir: writing again after ", dir_failing_, " intervals not written"));
    dir_failing_ = 0;
  }
}

std::string AgentSinks::MetricsSuffix() const {
  std::string out;
  if (queue_) out += absl::StrCat(", pushed ", queue_->counters().pushed, QueueCounts(*queue_));
  if (otlp_queue_) out += absl::StrCat(", otlp exported ", otlp_queue_->counters().pushed, QueueCounts(*otlp_queue_));
  return out;
}

void AgentSinks::Close() {
  // The last interval (and any backlog) gets a little time to arrive.
  if (queue_ && series_dropped_.load() > 0) {
    Say(absl::StrCat(series_dropped_.load(), " series left out of pushes"));
  }
  if (queue_) CloseQueue(queue_, "pushes", "pushed", "profiles", client_->endpoint());
  if (otlp_queue_) CloseQueue(otlp_queue_, "otlp exports", "otlp exported", "intervals", otlp_->endpoint());
}

}  // namespace ehprof
