// The OTLP profiles request the agent sends, decoded by libprotobuf's
// schema-less wire parser (UnknownFieldSet) against the field numbers the
// Collector v0.165.0 uses (agent/sink/otlp_fields.h; the real Collector
// takes these requests in tests/otlp_priv_test.cc); and the gRPC outcome.
#include <google/protobuf/unknown_field_set.h>

#include <string>
#include <vector>

#include "agent/sink/otlp_client.h"
#include "agent/sink/otlp_profiles.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

struct Msg {
  UnknownFieldSet set;
  explicit Msg(const std::string& bytes) { EXPECT_TRUE(set.ParseFromString(bytes)); }
  std::vector<std::string> All(int field) const {
    std::vector<std::string> out;
    for (int i = 0; i < set.field_count(); ++i) {
      const UnknownField& f = set.field(i);
      if (f.number() == field && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) out.push_back(f.length_delimited());
    }
    return out;
  }
  std::string One(int field) const {
    auto all = All(field);
    EXPECT_EQ(all.size(), 1u) << "field " << field;
    return all.empty() ? "" : all[0];
  }
  uint64_t Int(int field) const {
    for (int i = 0; i < set.field_count(); ++i) {
      const UnknownField& f = set.field(i);
      if (f.number() != field) continue;
      if (f.type() == UnknownField::TYPE_VARINT) return f.varint();
      if (f.type() == UnknownField::TYPE_FIXED64) return f.fixed64();
    }
    return 0;
  }
  // A packed repeated varint field.
  std::vector<uint64_t> Packed(int field) const {
    std::vector<uint64_t> out;
    for (const std::string& b : All(field)) {
      for (size_t i = 0; i < b.size();) {
        uint64_t v = 0;
        for (int shift = 0; i < b.size(); shift += 7) {
          const uint8_t c = static_cast<uint8_t>(b[i++]);
          v |= uint64_t{c & 0x7fu} << shift;
          if (!(c & 0x80)) break;
        }
        out.push_back(v);
      }
    }
    return out;
  }
};

ResolvedFrame Frame(const std::string& symbol, const std::string& dso, uint64_t addr, bool inlined = false) {
  ResolvedFrame f;
  f.symbol = symbol;
  f.dso = dso;
  f.addr = addr;
  f.runtime_addr = addr + 0x400000;
  f.map_start = 0x400000;
  f.map_limit = 0x500000;
  f.inlined = inlined;
  return f;
}

ResolvedSample Sample(const std::string& comm, std::vector<ResolvedFrame> frames, uint64_t count) {
  ResolvedSample s;
  s.comm = comm;
  s.frames = std::move(frames);
  s.count = count;
  return s;
}

const std::string kUid = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d";
const std::string kContainer(64, 'c');
// A pod's container: its series as ServiceNames keys it.
const std::string kPodSeries = SeriesKey({"pod/" + kUid, {{"container.id", kContainer}, {"k8s.pod.uid", kUid}}});

IntervalOutput TwoServices() {
  IntervalOutput out;
  out.start_unix_ns = 1'700'000'000'123'456'789ull;
  out.duration_ns = 10'000'000'000ull;
  out.frequency_hz = 99;
  // leaf first: inlined_fn expands into outer_fn; main calls it.
  std::vector<ResolvedFrame> stack = {Frame("inlined_fn", "/bin/app", 0x1010, true),
                                      Frame("outer_fn", "/bin/app", 0x1010), Frame("main", "/bin/app", 0x1200)};
  ServiceProfileBuilder b;
  for (const ResolvedSample& s : {Sample("app", stack, 3), Sample("app", stack, 4), Sample("app", {stack[2]}, 1)}) {
    b.Add("app", s);
  }
  ResolvedSample off = Sample("app", {stack[2]}, 2);
  off.off_cpu = true;
  off.weight_ns = 5'000'000;
  b.Add("app", off);
  b.Add(kPodSeries, Sample("worker", {stack[2]}, 1));
  b.Add(kPodSeries, Sample("helper", {stack[2]}, 1));
  b.Finish(&out);
  out.build_ids["/bin/app"] = "abcdef0123";
  return out;
}

std::string Str(const std::vector<std::string>& strings, uint64_t i) {
  return i < strings.size() ? strings[i] : "<out of range>";
}

// Resource attributes as "k=v" (values are AnyValue string_value).
std::vector<std::string> Attributes(const Msg& resource) {
  std::vector<std::string> out;
  for (const std::string& kv : resource.All(1)) {
    Msg m(kv);
    out.push_back(m.One(1) + "=" + Msg(m.One(2)).One(1));
  }
  return out;
}

TEST(OtlpProfiles, ResourcePerServiceWithItsAttributes) {
  Msg req(EncodeOtlpProfiles(TwoServices(), {{"host.name", "h1"}, {"team", "t"}}));
  const auto rps = req.All(1);
  ASSERT_EQ(rps.size(), 2u);
  // std::map order: "app" first.
  EXPECT_EQ(Attributes(Msg(Msg(rps[0]).One(1))),
            (std::vector<std::string>{"service.name=app", "process.executable.name=app", "host.name=h1", "team=t"}));
  // Two comms: no process.executable.name; the series' cgroup labels.
  EXPECT_EQ(Attributes(Msg(Msg(rps[1]).One(1))),
            (std::vector<std::string>{"service.name=pod/" + kUid, "container.id=" + kContainer,
                                      "k8s.pod.uid=" + kUid, "host.name=h1", "team=t"}));
  Msg scope(Msg(rps[0]).One(2));
  EXPECT_EQ(Msg(scope.One(1)).One(1), "ehprof");
  EXPECT_EQ(scope.All(2).size(), 2u);  // CPU and off-CPU
}

TEST(OtlpProfiles, DictionaryStacksAndValues) {
  const IntervalOutput out = TwoServices();
  Msg req(EncodeOtlpProfiles(out, {}));
  Msg dict(req.One(2));
  const std::vector<std::string> strings = dict.All(5);
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "");
  for (int table : {1, 2, 3, 4, 6, 7}) {  // entry 0 is the zero value
    ASSERT_FALSE(dict.All(table).empty()) << table;
    EXPECT_EQ(dict.All(table)[0], "") << table;
  }
  const auto locations = dict.All(2), functions = dict.All(3), stacks = dict.All(7), mappings = dict.All(1);
  const auto attributes = dict.All(6);
  auto fn_name = [&](uint64_t line_bytes_index, const Msg& loc) {
    Msg line(loc.All(3)[line_bytes_index]);
    return Str(strings, Msg(functions.at(line.Int(1))).Int(1));
  };
  Msg cpu(Msg(Msg(req.All(1)[0]).One(2)).All(2)[0]);
  EXPECT_EQ(Str(strings, Msg(cpu.One(1)).Int(1)), "samples");
  EXPECT_EQ(Str(strings, Msg(cpu.One(5)).Int(1)), "cpu");
  EXPECT_EQ(cpu.Int(6), 1'000'000'000u / 99);
  EXPECT_EQ(cpu.Int(3), out.start_unix_ns);  // fixed64
  EXPECT_EQ(cpu.Int(4), out.duration_ns);
  EXPECT_EQ(cpu.One(7).size(), 16u);
  const auto samples = cpu.All(2);
  ASSERT_EQ(samples.size(), 2u);  // the two equal stacks merged
  Msg s0(samples[0]);
  EXPECT_EQ(s0.Packed(4), std::vector<uint64_t>{7});
  Msg thread(attributes.at(s0.Packed(2).at(0)));
  EXPECT_EQ(Str(strings, thread.Int(1)), "thread.name");
  const std::vector<uint64_t> locs = Msg(stacks.at(s0.Int(1))).Packed(1);
  ASSERT_EQ(locs.size(), 2u);  // the inline expansion folded into outer_fn's location
  Msg leaf(locations.at(locs[0])), root(locations.at(locs[1]));
  ASSERT_EQ(leaf.All(3).size(), 2u);
  EXPECT_EQ(fn_name(0, leaf), "inlined_fn");  // innermost first
  EXPECT_EQ(fn_name(1, leaf), "outer_fn");
  EXPECT_EQ(fn_name(0, root), "main");
  EXPECT_EQ(leaf.Int(2), 0x401010u);  // the address in the process
  Msg mapping(mappings.at(leaf.Int(1)));
  EXPECT_EQ(mapping.Int(1), 0x400000u);
  EXPECT_EQ(mapping.Int(2), 0x500000u);
  EXPECT_EQ(Str(strings, mapping.Int(4)), "/bin/app");
  Msg build_id(attributes.at(mapping.Packed(5).at(0)));
  EXPECT_EQ(Str(strings, build_id.Int(1)), "process.executable.build_id.gnu");
  EXPECT_EQ(Msg(build_id.One(2)).One(1), "abcdef0123");
  Msg off(Msg(Msg(req.All(1)[0]).One(2)).All(2)[1]);
  EXPECT_EQ(Str(strings, Msg(off.One(1)).Int(1)), "off_cpu");
  EXPECT_EQ(Str(strings, Msg(off.One(1)).Int(2)), "nanoseconds");
  EXPECT_EQ(Msg(off.All(2)[0]).Packed(4), std::vector<uint64_t>{5'000'000});
}

// Each location's profile.frame.type, by the runtime its frame is of.
TEST(OtlpProfiles, FrameTypesSayTheRuntime) {
  std::vector<ResolvedFrame> stack = {Frame("sys_write", "[kernel.kallsyms]", 0x10), Frame("write", "/lib/libc.so.6", 0x20),
                                      Frame("Main.run", "[java]", 0x30), Frame("handle", "app.js", 0x40),
                                      Frame("serve", "app.py", 0x50), Frame("Greeter#hi", "app.rb", 0x60),
                                      Frame("Cart::total", "cart.php", 0x70)};
  stack[0].kernel = true;
  stack[2].runtime = FrameRuntime::kJava;
  stack[3].runtime = FrameRuntime::kJavaScript;
  stack[4].runtime = FrameRuntime::kPython;
  stack[5].runtime = FrameRuntime::kRuby;
  stack[6].runtime = FrameRuntime::kPhp;
  IntervalOutput out;
  out.frequency_hz = 99;
  ServiceProfileBuilder b;
  b.Add("app", Sample("app", stack, 1));
  b.Finish(&out);
  Msg req(EncodeOtlpProfiles(out, {}));
  Msg dict(req.One(2));
  const std::vector<std::string> strings = dict.All(5);
  const auto locations = dict.All(2), functions = dict.All(3), stacks = dict.All(7), attributes = dict.All(6);
  Msg cpu(Msg(Msg(req.All(1)[0]).One(2)).All(2)[0]);
  const std::vector<uint64_t> locs = Msg(stacks.at(Msg(cpu.All(2).at(0)).Int(1))).Packed(1);
  std::vector<std::string> typed;  // "function type", leaf first
  for (uint64_t l : locs) {
    Msg loc(locations.at(l));
    Msg attr(attributes.at(loc.Packed(4).at(0)));
    EXPECT_EQ(Str(strings, attr.Int(1)), "profile.frame.type");
    typed.push_back(Str(strings, Msg(functions.at(Msg(loc.All(3).at(0)).Int(1))).Int(1)) + " " +
                    Msg(attr.One(2)).One(1));
  }
  EXPECT_EQ(typed, (std::vector<std::string>{"sys_write kernel", "write native", "Main.run jvm", "handle v8js",
                                             "serve cpython", "Greeter#hi ruby", "Cart::total php"}));
}

TEST(OtlpProfiles, EmptyIntervalIsAnEmptyRequestWithTheZeroEntries) {
  Msg req(EncodeOtlpProfiles(IntervalOutput(), {}));
  EXPECT_TRUE(req.All(1).empty());
  EXPECT_EQ(Msg(req.One(2)).All(5), std::vector<std::string>{""});
}

TEST(OtlpClient, GrpcOutcomeFromTheTrailers) {
  EXPECT_TRUE(GrpcOutcome("e", "HTTP/2 200\r\ncontent-type: application/grpc\r\n\r\ngrpc-status: 0\r\n").ok());
  absl::Status s = GrpcOutcome("e", "HTTP/2 200\r\nGrpc-Status: 14\r\ngrpc-message: down\r\n");
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("down"), absl::string_view::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(GrpcOutcome("e", "grpc-status: 3\r\n")));
  EXPECT_TRUE(absl::IsUnavailable(GrpcOutcome("e", "HTTP/2 200\r\n")));
  EXPECT_TRUE(absl::IsUnavailable(GrpcOutcome("e", "grpc-status: x\r\n")));
}

OtlpOptions Options(const std::string& url, const std::string& protocol = "http/protobuf") {
  OtlpOptions o;
  o.url = url;
  o.protocol = protocol;
  return o;
}

TEST(OtlpClient, RefusesBadFlags) {
  EXPECT_TRUE(absl::IsInvalidArgument(OtlpClient::Create(Options("ftp://h")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(OtlpClient::Create(Options("http://h", "thrift")).status()));
  OtlpOptions o = Options("http://h");
  o.compression = "brotli";
  EXPECT_TRUE(absl::IsInvalidArgument(OtlpClient::Create(o).status()));
  o.compression = "gzip";
  o.headers = {"novalue"};
  EXPECT_TRUE(absl::IsInvalidArgument(OtlpClient::Create(o).status()));
  o.headers = {"X-Evil: a\r\nHost: b"};
  EXPECT_TRUE(absl::IsInvalidArgument(OtlpClient::Create(o).status()));
  o = Options("https://h");
  o.ca_file = "/no/such/ca.pem";
  EXPECT_TRUE(absl::IsNotFound(OtlpClient::Create(o).status()));
  auto c = OtlpClient::Create(Options("http://h:4318"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->endpoint(), "http://h:4318/v1development/profiles");
  c = OtlpClient::Create(Options("https://h/custom/path"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->endpoint(), "https://h/custom/path");
  c = OtlpClient::Create(Options("http://h:4317/", "grpc"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->endpoint(),
            "http://h:4317/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export");
}

}  // namespace
}  // namespace ehprof
