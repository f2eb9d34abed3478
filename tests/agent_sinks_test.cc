// PushBody: a series whose profile cannot be encoded is left out with a
// reason naming its service, never dropped without a word.
#include "agent/cli/agent_sinks.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

IntervalOutput TwoServices(uint64_t frequency_hz, std::vector<std::string> services = {"fio", "nginx"}) {
  IntervalOutput out;
  out.start_unix_ns = 1'700'000'000'000'000'000;
  out.duration_ns = 10'000'000'000;
  out.frequency_hz = frequency_hz;
  ServiceProfileBuilder b;
  for (const std::string& service : services) {
    ResolvedSample s;
    s.comm = service;
    s.pid = 42;
    s.tid = 42;
    ResolvedFrame f;
    f.addr = 0x1150;
    f.symbol = "main";
    s.frames.push_back(f);
    s.count = 3;
    b.Add(service, s);
  }
  b.Finish(&out);
  return out;
}

TEST(PushBody, EverySeriesOfAGoodInterval) {
  std::vector<std::string> dropped;
  const std::string body = PushBody(TwoServices(99), {{"hostname", "h"}}, &dropped);
  EXPECT_TRUE(dropped.empty());
  EXPECT_NE(body.find("fio"), std::string::npos);
  EXPECT_NE(body.find("nginx"), std::string::npos);
}

// A pod's series: service_name pod/UID, its cgroup labels with Pyroscope's
// names (no '.'), the key itself nowhere.
TEST(PushBody, CgroupLabelsAsPyroscopeLabels) {
  const std::string uid = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", id(64, 'c');
  std::vector<std::string> dropped;
  const std::string body = PushBody(
      TwoServices(99, {SeriesKey({"pod/" + uid, {{"container.id", id}, {"k8s.pod.uid", uid}}})}), {}, &dropped);
  EXPECT_TRUE(dropped.empty());
  for (const std::string& s : std::vector<std::string>{"service_name", "pod/" + uid, "container_id", id, "k8s_pod_uid"}) {
    EXPECT_NE(body.find(s), std::string::npos) << s;
  }
  // Neither the key as it is ("...\x1fcontainer.id=...") nor the OTel name.
  EXPECT_EQ(body.find("container.id"), std::string::npos);
  EXPECT_EQ(body.find("=" + id), std::string::npos);
}

TEST(PushBody, ASeriesThatCannotBeEncodedIsNamedWithWhy) {
  std::vector<std::string> dropped;
  // WritePprof refuses a zero frequency (no sample period).
  const std::string body = PushBody(TwoServices(0), {{"hostname", "h"}}, &dropped);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_NE(dropped[0].find("service fio"), std::string::npos) << dropped[0];
  EXPECT_NE(dropped[1].find("service nginx"), std::string::npos) << dropped[1];
  EXPECT_NE(dropped[0].find("process_cpu"), std::string::npos) << dropped[0];
  EXPECT_EQ(body.find("nginx"), std::string::npos) << "a left-out series was pushed";
}

// A credential-looking --otlp-header is on the command line for every user
// to read: said by name (never its value), with the file option named.
TEST(AgentSinks, ASecretLookingHeaderOnTheCommandLineIsWarnedOf) {
  SinkFlags f;
  f.otlp.url = "http://127.0.0.1:9";
  f.otlp.headers = {"Authorization: Bearer s3cret", "X-Scope-OrgID: team"};
  ::testing::internal::CaptureStderr();
  {
    AgentSinks sinks;
    ASSERT_TRUE(sinks.Open(f).ok());
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: --otlp-header Authorization: every local user sees the command line (ps); a "
                     "secret belongs in --otlp-header-file"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("s3cret"), std::string::npos) << err;
  EXPECT_EQ(err.find("X-Scope-OrgID"), std::string::npos) << err;
}

}  // namespace
}  // namespace ehprof
