// Container names from containers/storage's containers.json: the record
// podman writes, read as hostile (cut, deep, huge, bad ids and names), and
// refused when someone other than its owner (root) could have written it.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/continuous/container_names.h"
#include "agent/continuous/storage_containers.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

const std::string kId(64, 'a');
const std::string kOther = "0123456789ab" + std::string(52, 'c');

// As podman 4.3 writes it (one container, from a real run).
std::string Record(const std::string& id, const std::string& names) {
  return absl::StrCat(R"([{"id":")", id, R"(","names":)", names,
                      R"(,"image":"68780ae0e4eb","layer":"1fa62ca2308c","metadata":"{\"image-name\":\"localhost/x:1\",)",
                      R"(\"name\":\"web\",\"created-at\":1796012388}","created":"2026-11-30T04:19:49.001841662Z",)",
                      R"("flags":{"MountLabel":"","ProcessLabel":""}}])");
}

TEST(StorageContainers, ReadsIdsAndFirstValidName) {
  auto c = ParseStorageContainers(Record(kId, R"(["web-1.a_b", "other"])"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].id, kId);
  EXPECT_EQ((*c)[0].name, "web-1.a_b");
  // A name podman would refuse is passed over for the next.
  c = ParseStorageContainers(Record(kId, R"(["bad name", "-x", "\u00e9t\u00e9", "ok"])"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].name, "ok");
  EXPECT_TRUE(ParseStorageContainers(" [ ] ").value().empty());
}

TEST(StorageContainers, LeavesOutBadIdsAndNamelessContainers) {
  for (const std::string& id : {std::string(63, 'a'), std::string(65, 'a'), std::string(64, 'A'),
                                "../../etc/passwd" + std::string(48, 'a'), std::string(64, 'g')}) {
    auto c = ParseStorageContainers(Record(id, R"(["web"])"));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->empty()) << id;
  }
  auto c = ParseStorageContainers(Record(kId, R"(["x y", ")" + std::string(129, 'n') + R"("])"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->empty());
  c = ParseStorageContainers(Record(kId, "null"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->empty());
}

TEST(StorageContainers, RefusesWhatIsNotSuchJson) {
  const std::string good = Record(kId, R"(["web"])");
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(ParseStorageContainers(good.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(ParseStorageContainers(good + "x").ok());
  EXPECT_FALSE(ParseStorageContainers(R"({"id":"x"})").ok());
  EXPECT_FALSE(ParseStorageContainers(R"([{"id":"a\q"}])").ok());
  EXPECT_FALSE(ParseStorageContainers("[{\"id\":\"a\nb\"}]").ok());
  // Nesting past the bound, without recursing as deep as the text.
  const std::string deep = R"([{"x":)" + std::string(100000, '[') + std::string(100000, ']') + "}]";
  auto c = ParseStorageContainers(deep);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("nesting"), std::string::npos) << c.status();
  // A string past 1 MiB.
  c = ParseStorageContainers(R"([{"x":")" + std::string((1 << 20) + 10, 'a') + R"("}])");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("1 MiB"), std::string::npos) << c.status();
}

class ContainerNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/container_names." + std::to_string(getpid());
    std::filesystem::create_directories(dir_ + "/overlay-containers");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/overlay-containers/containers.json";
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << text;
    chmod(tmp.c_str(), mode);
    std::filesystem::rename(tmp, path);  // as containers/storage replaces it
  }
  std::string dir_;
};

TEST_F(ContainerNamesTest, NamesServicesByShortIdAndFollowsChanges) {
  ContainerNames names(dir_, geteuid());
  ASSERT_TRUE(names.Refresh().ok());  // no record yet: no runtime
  EXPECT_EQ(names.Of("container/" + kId.substr(0, 12)), "");
  Write(Record(kId, R"(["web"])"));
  ASSERT_TRUE(names.Refresh().ok());
  EXPECT_EQ(names.Of("container/" + kId.substr(0, 12)), "web");
  EXPECT_EQ(names.Of("nginx.service"), "");
  EXPECT_EQ(names.Of("container/" + kOther.substr(0, 12)), "");
  Write(Record(kId, R"(["web2"])"));
  ASSERT_TRUE(names.Refresh().ok());
  EXPECT_EQ(names.Of("container/" + kId.substr(0, 12)), "web2");
}

TEST_F(ContainerNamesTest, TwoContainersSharingTheShortIdGetNoName) {
  const std::string twin = kId.substr(0, 12) + std::string(52, 'b');
  std::string a = Record(kId, R"(["a"])"), b = Record(twin, R"(["b"])");
  Write(a.substr(0, a.size() - 1) + "," + b.substr(1));
  ContainerNames names(dir_, geteuid());
  ASSERT_TRUE(names.Refresh().ok());
  EXPECT_EQ(names.size(), 1u);
  EXPECT_EQ(names.Of("container/" + kId.substr(0, 12)), "");
}

// What another user could write (a rootless runtime's own storage, a file
// made group- or world-writable) names nothing; a broken record neither.
TEST_F(ContainerNamesTest, RefusesARecordOthersCouldHaveWritten) {
  Write(Record(kId, R"(["web"])"));
  ContainerNames not_owner(dir_, geteuid() + 1);
  absl::Status s = not_owner.Refresh();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_EQ(not_owner.Of("container/" + kId.substr(0, 12)), "");
  Write(Record(kId, R"(["web"])"), 0622);
  ContainerNames writable(dir_, geteuid());
  s = writable.Refresh();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_EQ(writable.Of("container/" + kId.substr(0, 12)), "");
  // A link in its place is not followed.
  std::filesystem::remove(dir_ + "/overlay-containers/containers.json");
  std::filesystem::create_symlink("/etc/passwd", dir_ + "/overlay-containers/containers.json");
  ContainerNames linked(dir_, 0);
  linked.Refresh().IgnoreError();
  EXPECT_EQ(linked.size(), 0u);
  Write("[{\"id\":");
  ContainerNames broken(dir_, geteuid());
  EXPECT_FALSE(broken.Refresh().ok());
  EXPECT_EQ(broken.size(), 0u);
}

}  // namespace
}  // namespace ehprof
