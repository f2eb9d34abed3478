// The pprof writer, checked twice: decoded here by classes protoc generates
// from pprof's profile.proto (so the test trusts neither our encoder nor our
// reading of the schema), and read by the real `go tool pprof`, the
// reference consumer of the format.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/output/output_pprof.h"
#include "agent/output/pprof_fields.h"
#include "agent/resolve/resolved_sample.h"
#include "gtest/gtest.h"
#include "profile.pb.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// --- decoding -------------------------------------------------------------

using testing::Gunzip;

struct Label {
  std::string key;
  std::string str;
  uint64_t num = 0;
};
struct Sample {
  std::vector<uint64_t> location_ids;
  std::vector<uint64_t> values;
  std::vector<Label> labels;
};
struct Mapping {
  uint64_t id = 0;
  std::string filename;
  std::string build_id;
  bool has_functions = false;
};
struct Location {
  uint64_t id = 0;
  uint64_t mapping_id = 0;
  uint64_t address = 0;
  std::vector<uint64_t> function_ids;  // the `line`s, in order
};
struct Function {
  uint64_t id = 0;
  std::string name;
  std::string system_name;
};
struct Profile {
  std::vector<std::string> strings;
  std::vector<std::pair<std::string, std::string>> sample_types;
  std::pair<std::string, std::string> period_type;
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  std::vector<Sample> samples;
  std::vector<Mapping> mappings;
  std::vector<Location> locations;
  std::vector<Function> functions;

  // Out-of-range indexes read as "<bad N>" so the assertions show them.
  std::string Str(uint64_t i) const {
    return i < strings.size() ? strings[i] : "<bad " + std::to_string(i) + ">";
  }
  const Location* FindLocation(uint64_t id) const {
    for (const Location& l : locations) {
      if (l.id == id) return &l;
    }
    return nullptr;
  }
  const Function* FindFunction(uint64_t id) const {
    for (const Function& f : functions) {
      if (f.id == id) return &f;
    }
    return nullptr;
  }
  // A location's function names, innermost first.
  std::vector<std::string> Names(uint64_t location_id) const {
    std::vector<std::string> names;
    const Location* loc = FindLocation(location_id);
    if (loc == nullptr) return {"<no location " + std::to_string(location_id) + ">"};
    for (uint64_t fid : loc->function_ids) {
      const Function* f = FindFunction(fid);
      names.push_back(f ? f->name : "<no function>");
    }
    return names;
  }
};

// The profile as pprof's own schema reads it: classes protoc generated from
// profile.proto (Debian's golang-github-google-pprof-dev), not a reader of
// ours, so the test does not trust our reading of the format either.
std::optional<Profile> Decode(const std::string& gz) {
  std::optional<std::string> raw = Gunzip(gz);
  if (!raw) return std::nullopt;
  perftools::profiles::Profile m;
  if (!m.ParseFromString(*raw)) return std::nullopt;
  Profile p;
  p.strings.assign(m.string_table().begin(), m.string_table().end());
  auto value_type = [&](const perftools::profiles::ValueType& v) {
    return std::make_pair(p.Str(v.type()), p.Str(v.unit()));
  };
  for (const auto& v : m.sample_type()) p.sample_types.push_back(value_type(v));
  if (m.has_period_type()) p.period_type = value_type(m.period_type());
  p.period = m.period();
  p.time_nanos = m.time_nanos();
  p.duration_nanos = m.duration_nanos();
  for (const auto& ms : m.sample()) {
    Sample s;
    s.location_ids.assign(ms.location_id().begin(), ms.location_id().end());
    for (int64_t v : ms.value()) s.values.push_back(static_cast<uint64_t>(v));
    for (const auto& l : ms.label()) {
      s.labels.push_back({p.Str(l.key()), l.str() ? p.Str(l.str()) : "",
                          static_cast<uint64_t>(l.num())});
    }
    p.samples.push_back(std::move(s));
  }
  for (const auto& mm : m.mapping()) {
    p.mappings.push_back({mm.id(), p.Str(mm.filename()), p.Str(mm.build_id()), mm.has_functions()});
  }
  for (const auto& ml : m.location()) {
    Location l{ml.id(), ml.mapping_id(), ml.address(), {}};
    for (const auto& line : ml.line()) l.function_ids.push_back(line.function_id());
    p.locations.push_back(std::move(l));
  }
  for (const auto& mf : m.function()) {
    p.functions.push_back({mf.id(), p.Str(mf.name()), p.Str(mf.system_name())});
  }
  return p;
}

// --- input ----------------------------------------------------------------

const char kApp[] = "/opt/ehprof-test/bin/app";
const char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const char kKernel[] = "[kernel.kallsyms]";

ResolvedFrame Kernel(uint64_t addr, std::string symbol) {
  return {addr, std::move(symbol), kKernel, /*kernel=*/true, /*inlined=*/false};
}
ResolvedFrame User(uint64_t addr, std::string symbol, std::string dso = kApp) {
  return {addr, std::move(symbol), std::move(dso), false, false};
}
ResolvedFrame Inlined(uint64_t addr, std::string symbol, std::string dso = kApp) {
  return {addr, std::move(symbol), std::move(dso), false, /*inlined=*/true};
}

ResolvedSample MakeSample(std::string comm, uint32_t pid, uint32_t tid,
                          std::vector<ResolvedFrame> frames, uint64_t count) {
  ResolvedSample s;
  s.comm = std::move(comm);
  s.pid = pid;
  s.tid = tid;
  s.frames = std::move(frames);
  s.count = count;
  return s;
}

// Flat (self) counts by function: hot 12, inner 3, do_syscall_64 2,
// memcpy 1; main is in every stack (cum 18).
std::vector<ResolvedSample> HandBuiltProfile() {
  return {
      MakeSample("app", 42, 42, {User(0x1150, "hot"), User(0x1234, "main")}, 7),
      MakeSample("app", 42, 43, {User(0x1150, "hot"), User(0x1234, "main")}, 5),
      // inner and mid are inlined into outer at 0x1300.
      MakeSample("app", 42, 42,
                 {Inlined(0x1300, "inner"), Inlined(0x1300, "mid"), User(0x1300, "outer"),
                  User(0x1240, "main")},
                 3),
      MakeSample("worker", 42, 44,
                 {Kernel(0xffffffff81a0007c, "do_syscall_64"),
                  Kernel(0xffffffff81c000aa, "entry_SYSCALL_64_after_hwframe"),
                  User(0x114d2, "__GI___libc_write", kLibc), User(0x1400, "write_all"),
                  User(0x1248, "main")},
                 2),
      MakeSample("app", 42, 42, {User(0x9a1c0, "memcpy", kLibc), User(0x1250, "main")}, 1),
  };
}

PprofOptions TestOptions() {
  PprofOptions o;
  o.frequency_hz = 99;
  o.time_nanos = 1'700'000'000'123'456'789;
  o.duration_nanos = 2'500'000'000;
  o.build_ids[kApp] = "0123456789abcdef0123456789abcdef01234567";
  return o;
}

std::string Write(const std::vector<ResolvedSample>& samples, const PprofOptions& options) {
  std::ostringstream out;
  const absl::Status status = WritePprof(samples, out, options);
  EXPECT_TRUE(status.ok()) << status;
  return out.str();
}

// --- schema ---------------------------------------------------------------

// The writer's field numbers are the schema's.
namespace pf = pprof_fields;
namespace pp = perftools::profiles;
static_assert(pf::kProfileSampleType == pp::Profile::kSampleTypeFieldNumber);
static_assert(pf::kProfileSample == pp::Profile::kSampleFieldNumber);
static_assert(pf::kProfileMapping == pp::Profile::kMappingFieldNumber);
static_assert(pf::kProfileLocation == pp::Profile::kLocationFieldNumber);
static_assert(pf::kProfileFunction == pp::Profile::kFunctionFieldNumber);
static_assert(pf::kProfileStringTable == pp::Profile::kStringTableFieldNumber);
static_assert(pf::kProfileTimeNanos == pp::Profile::kTimeNanosFieldNumber);
static_assert(pf::kProfileDurationNanos == pp::Profile::kDurationNanosFieldNumber);
static_assert(pf::kProfilePeriodType == pp::Profile::kPeriodTypeFieldNumber);
static_assert(pf::kProfilePeriod == pp::Profile::kPeriodFieldNumber);
static_assert(pf::kValueTypeType == pp::ValueType::kTypeFieldNumber);
static_assert(pf::kValueTypeUnit == pp::ValueType::kUnitFieldNumber);
static_assert(pf::kSampleLocationId == pp::Sample::kLocationIdFieldNumber);
static_assert(pf::kSampleValue == pp::Sample::kValueFieldNumber);
static_assert(pf::kSampleLabel == pp::Sample::kLabelFieldNumber);
static_assert(pf::kLabelKey == pp::Label::kKeyFieldNumber);
static_assert(pf::kLabelStr == pp::Label::kStrFieldNumber);
static_assert(pf::kLabelNum == pp::Label::kNumFieldNumber);
static_assert(pf::kMappingId == pp::Mapping::kIdFieldNumber);
static_assert(pf::kMappingMemoryStart == pp::Mapping::kMemoryStartFieldNumber);
static_assert(pf::kMappingMemoryLimit == pp::Mapping::kMemoryLimitFieldNumber);
static_assert(pf::kMappingFileOffset == pp::Mapping::kFileOffsetFieldNumber);
static_assert(pf::kMappingFilename == pp::Mapping::kFilenameFieldNumber);
static_assert(pf::kMappingBuildId == pp::Mapping::kBuildIdFieldNumber);
static_assert(pf::kMappingHasFunctions == pp::Mapping::kHasFunctionsFieldNumber);
static_assert(pf::kMappingHasFilenames == pp::Mapping::kHasFilenamesFieldNumber);
static_assert(pf::kMappingHasLineNumbers == pp::Mapping::kHasLineNumbersFieldNumber);
static_assert(pf::kMappingHasInlineFrames == pp::Mapping::kHasInlineFramesFieldNumber);
static_assert(pf::kLocationId == pp::Location::kIdFieldNumber);
static_assert(pf::kLocationMappingId == pp::Location::kMappingIdFieldNumber);
static_assert(pf::kLocationAddress == pp::Location::kAddressFieldNumber);
static_assert(pf::kLocationLine == pp::Location::kLineFieldNumber);
static_assert(pf::kLineFunctionId == pp::Line::kFunctionIdFieldNumber);
static_assert(pf::kLineLine == pp::Line::kLineFieldNumber);
static_assert(pf::kFunctionId == pp::Function::kIdFieldNumber);
static_assert(pf::kFunctionName == pp::Function::kNameFieldNumber);
static_assert(pf::kFunctionSystemName == pp::Function::kSystemNameFieldNumber);
static_assert(pf::kFunctionFilename == pp::Function::kFilenameFieldNumber);

// --- structure ------------------------------------------------------------

TEST(OutputPprof, DecodesWithExpectedStructure) {
  const std::string gz = Write(HandBuiltProfile(), TestOptions());
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
  const std::optional<Profile> p = Decode(gz);
  ASSERT_TRUE(p.has_value()) << "not gzip'd protobuf";

  ASSERT_FALSE(p->strings.empty());
  EXPECT_EQ(p->strings[0], "");
  EXPECT_EQ(std::set<std::string>(p->strings.begin(), p->strings.end()).size(),
            p->strings.size())
      << "string table has duplicates";

  using VT = std::pair<std::string, std::string>;
  EXPECT_EQ(p->sample_types, (std::vector<VT>{{"samples", "count"}, {"cpu", "nanoseconds"}}));
  EXPECT_EQ(p->period_type, (VT{"cpu", "nanoseconds"}));
  const int64_t period = 1'000'000'000 / 99;
  EXPECT_EQ(p->period, period);
  EXPECT_EQ(p->time_nanos, 1'700'000'000'123'456'789);
  EXPECT_EQ(p->duration_nanos, 2'500'000'000);

  std::set<uint64_t> mapping_ids, function_ids, location_ids;
  for (const Mapping& m : p->mappings) {
    EXPECT_NE(m.id, 0u);
    EXPECT_TRUE(mapping_ids.insert(m.id).second) << "duplicate mapping id " << m.id;
    EXPECT_TRUE(m.has_functions) << m.filename;
  }
  for (const Function& f : p->functions) {
    EXPECT_NE(f.id, 0u);
    EXPECT_TRUE(function_ids.insert(f.id).second) << "duplicate function id " << f.id;
    EXPECT_EQ(f.name, f.system_name);
  }
  for (const Location& l : p->locations) {
    EXPECT_NE(l.id, 0u);
    EXPECT_TRUE(location_ids.insert(l.id).second) << "duplicate location id " << l.id;
    EXPECT_TRUE(mapping_ids.count(l.mapping_id)) << "location " << l.id;
    EXPECT_FALSE(l.function_ids.empty()) << "location " << l.id;
    for (uint64_t fid : l.function_ids) EXPECT_TRUE(function_ids.count(fid)) << "location " << l.id;
  }

  // One mapping per dso; the build id only where one was given.
  std::map<std::string, std::string> build_ids;
  for (const Mapping& m : p->mappings) build_ids[m.filename] = m.build_id;
  EXPECT_EQ(build_ids, (std::map<std::string, std::string>{
                           {kApp, "0123456789abcdef0123456789abcdef01234567"},
                           {kLibc, ""},
                           {kKernel, ""}}));
  // Distinct (dso, addr): 0x1150 0x1234 0x1300 0x1240 2 kernel, write,
  // 0x1400 0x1248 memcpy 0x1250.
  EXPECT_EQ(p->locations.size(), 11u);
  // hot main inner mid outer do_syscall_64 entry_SYSCALL write write_all memcpy.
  EXPECT_EQ(p->functions.size(), 10u);

  // The two `hot` samples differ in tid, so they stay two samples.
  ASSERT_EQ(p->samples.size(), 5u);
  const uint64_t counts[] = {7, 5, 3, 2, 1};
  for (size_t i = 0; i < p->samples.size(); ++i) {
    const Sample& s = p->samples[i];
    EXPECT_EQ(s.values, (std::vector<uint64_t>{counts[i], counts[i] * period})) << "sample " << i;
    for (uint64_t id : s.location_ids) EXPECT_TRUE(location_ids.count(id)) << "sample " << i;
  }
  EXPECT_EQ(p->samples[0].location_ids, p->samples[1].location_ids);

  // Inline frames fold into the location they expand, innermost first.
  const Sample& inl = p->samples[2];
  ASSERT_EQ(inl.location_ids.size(), 2u);
  EXPECT_EQ(p->Names(inl.location_ids[0]), (std::vector<std::string>{"inner", "mid", "outer"}));
  EXPECT_EQ(p->FindLocation(inl.location_ids[0])->address, 0x1300u);
  EXPECT_EQ(p->Names(inl.location_ids[1]), (std::vector<std::string>{"main"}));

  // Leaf first, kernel first, each frame its own location.
  const Sample& sys = p->samples[3];
  std::vector<std::string> stack;
  for (uint64_t id : sys.location_ids) {
    for (const std::string& n : p->Names(id)) stack.push_back(n);
  }
  EXPECT_EQ(stack, (std::vector<std::string>{"do_syscall_64", "entry_SYSCALL_64_after_hwframe",
                                             "__GI___libc_write", "write_all", "main"}));
  const Location* kernel_leaf = p->FindLocation(sys.location_ids[0]);
  EXPECT_EQ(kernel_leaf->address, 0xffffffff81a0007cu);
  for (const Mapping& m : p->mappings) {
    if (m.id == kernel_leaf->mapping_id) EXPECT_EQ(m.filename, kKernel);
  }

  ASSERT_EQ(sys.labels.size(), 3u);
  EXPECT_EQ(sys.labels[0].key, "pid");
  EXPECT_EQ(sys.labels[0].num, 42u);
  EXPECT_EQ(sys.labels[1].key, "tid");
  EXPECT_EQ(sys.labels[1].num, 44u);
  EXPECT_EQ(sys.labels[2].key, "comm");
  EXPECT_EQ(sys.labels[2].str, "worker");
}

TEST(OutputPprof, MergesEqualSamplesAndDropsZeroCounts) {
  std::vector<ResolvedSample> samples = {
      MakeSample("a", 1, 1, {User(0x10, "f"), User(0x20, "main")}, 1),
      MakeSample("a", 1, 1, {User(0x10, "f"), User(0x20, "main")}, 4),
      MakeSample("a", 1, 1, {User(0x30, "g")}, 0),
      // Same name, another file: another function.
      MakeSample("a", 1, 1, {User(0x10, "f", kLibc)}, 2),
      // No frames at all still counts toward the total.
      MakeSample("a", 1, 1, {}, 3),
  };
  const std::optional<Profile> p = Decode(Write(samples, TestOptions()));
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->samples.size(), 3u);
  EXPECT_EQ(p->samples[0].values[0], 5u);
  EXPECT_EQ(p->samples[1].values[0], 2u);
  EXPECT_TRUE(p->samples[2].location_ids.empty());
  EXPECT_EQ(p->samples[2].values[0], 3u);
  EXPECT_EQ(p->functions.size(), 3u);  // f (app), main, f (libc); not g
  for (const Function& f : p->functions) EXPECT_NE(f.name, "g");
}

TEST(OutputPprof, EmptyNamesBecomeUnknown) {
  const std::optional<Profile> p =
      Decode(Write({MakeSample("", 0, 0, {User(0, "", "")}, 1)}, TestOptions()));
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->functions.size(), 1u);
  EXPECT_EQ(p->functions[0].name, "[unknown]");
  ASSERT_EQ(p->mappings.size(), 1u);
  EXPECT_EQ(p->mappings[0].filename, "[unknown]");
}

TEST(OutputPprof, RejectsZeroFrequency) {
  PprofOptions options = TestOptions();
  options.frequency_hz = 0;
  std::ostringstream out;
  EXPECT_EQ(WritePprof(HandBuiltProfile(), out, options).code(),
            absl::StatusCode::kInvalidArgument);
}

// --- go tool pprof --------------------------------------------------------

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Name -> flat value from `pprof -top`'s table
// ("flat flat% sum% cum cum% name...").
std::map<std::string, std::string> FlatByName(const std::string& top) {
  std::map<std::string, std::string> flat;
  std::istringstream in(top);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string f, fp, sp, c, cp;
    if (!(fields >> f >> fp >> sp >> c >> cp)) continue;
    if (f == "flat") {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::string name;
    std::getline(fields >> std::ws, name);
    flat[name] = f;
  }
  return flat;
}

class GoPprof : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunCommand("command -v go").exit_code != 0) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        FAIL() << "go not installed (apt-get install golang-go), and CI=true";
      }
      std::printf("SKIPPED: go not installed\n");
      GTEST_SKIP() << "go not installed";
    }
    std::string tmpl = ::testing::TempDir() + "ehprof_pprof_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/profile.pb.gz";
    std::ofstream(file_, std::ios::binary) << Write(HandBuiltProfile(), TestOptions());
  }
  void TearDown() override {
    if (!dir_.empty()) RunCommand("rm -rf '" + dir_ + "'");
  }

  // A private HOME and GOPATH, the build directory's Go cache (as
  // testing::GoToolPprof's: Go 1.24 and later build pprof on its first use,
  // a minute under load, then take it from there), GOPROXY=off (pprof on a
  // local file needs no network), and a timeout so a hung tool fails the
  // test instead of the ctest run.
  CommandResult Pprof(const std::string& args) {
    const std::string bin = testing::EhprofBinary();
    const std::string cache = bin.substr(0, bin.rfind('/')) + "/gocache";
    return RunCommand("env HOME='" + dir_ + "' GOCACHE='" + cache + "' GOPATH='" + dir_ +
                      "/gopath' PPROF_TMPDIR='" + dir_ +
                      "' GOPROXY=off GOFLAGS= timeout 120 go tool pprof " + args + " '" + file_ +
                      "'");
  }

  std::string dir_;
  std::string file_;
};

TEST_F(GoPprof, RawParses) {
  const CommandResult r = Pprof("-raw");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("PeriodType: cpu nanoseconds"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Period: 10101010"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("samples/count cpu/nanoseconds"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("comm:[worker]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tid:[44]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0123456789abcdef0123456789abcdef01234567"), std::string::npos)
      << r.output;
}

TEST_F(GoPprof, TopFlatCounts) {
  const CommandResult r = Pprof("-top -sample_index=samples -nodecount=100");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s", r.output.c_str());
  const std::map<std::string, std::string> flat = FlatByName(r.output);
  EXPECT_EQ(flat.count("hot") ? flat.at("hot") : "", "12") << r.output;
  EXPECT_EQ(flat.count("inner (inline)") ? flat.at("inner (inline)") : "", "3") << r.output;
  EXPECT_EQ(flat.count("do_syscall_64") ? flat.at("do_syscall_64") : "", "2") << r.output;
  EXPECT_EQ(flat.count("memcpy") ? flat.at("memcpy") : "", "1") << r.output;
  EXPECT_EQ(flat.count("main") ? flat.at("main") : "", "0") << r.output;
  EXPECT_NE(r.output.find("of 18 total"), std::string::npos) << r.output;
}

TEST_F(GoPprof, TopDefaultsToCpuTime) {
  const CommandResult r = Pprof("-top");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s", r.output.c_str());
  EXPECT_NE(r.output.find("Type: cpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Duration: 2.50s"), std::string::npos) << r.output;
  // 12 samples at 99 Hz.
  EXPECT_EQ(FlatByName(r.output)["hot"], "121.21ms") << r.output;
}

}  // namespace
}  // namespace ehprof
