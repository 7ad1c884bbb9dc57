// Secrets at rest, over a whole state directory: secret values and datasource credentials
// never appear in any of its files (database, WAL, logs, key ring aside), rows written in
// clear before sealing are sealed when the directory is opened, and a key rotation re-seals
// everything.
#include "runtime/rotate_key.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "base/file.h"
#include "base/secret_box.h"
#include "base/sqlite.h"
#include "base/strings.h"
#include "base/test_util.h"
#include "data/catalog.h"
#include "store/store.h"

namespace rsl::runtime {
namespace {

const char kSecretValue[] = "s3cr3t-Passw0rd-4711";
const char kLegacyValue[] = "legacy-clear-value-0815";
const char kSecretKey[] = "AKIAsecretKEYvalue9876";
const char kLegacyKey[] = "legacySecretKey-1234567";

// Every file of the state directory but the key ring, searched for `needle`.
std::vector<std::string> FilesHolding(const std::string& dir, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "secret.key") continue;
    auto bytes = ReadFileIfExists(e.path().string(), size_t{1} << 30);
    if (bytes.ok() && bytes->has_value() && (*bytes)->find(needle) != std::string::npos) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

void ExpectNoValueInAnyFile(const std::string& dir) {
  for (const char* v : {kSecretValue, kLegacyValue, kSecretKey, kLegacyKey}) {
    EXPECT_EQ(FilesHolding(dir, v), std::vector<std::string>()) << v;
  }
}

void ExpectValuesStillRead(const std::string& dir) {
  auto store = store::OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto s = (*store)->GetConfigMap("risk", "db", true);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(s->data.at("PASSWORD"), kSecretValue);
  auto legacy = (*store)->GetConfigMap("risk", "old", true);
  ASSERT_TRUE(legacy.ok()) << legacy.error().ToString();
  EXPECT_EQ(legacy->data.at("TOKEN"), kLegacyValue);
  auto listed = (*store)->ListConfigMaps("", true);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);
  auto catalog = data::Catalog::Open(dir);
  ASSERT_TRUE(catalog.ok());
  auto ds = (*catalog)->Get("lake");
  ASSERT_TRUE(ds.ok()) << ds.error().ToString();
  EXPECT_EQ(ds->secret_key, kSecretKey);
  auto old_ds = (*catalog)->Get("old-lake");
  ASSERT_TRUE(old_ds.ok());
  EXPECT_EQ(old_ds->secret_key, kLegacyKey);
}

// A state directory as this version writes it, plus one secret and one datasource written in
// clear, as versions before sealing did.
void Populate(const std::string& dir) {
  {
    auto store = store::OpenSqliteStore(dir);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store::ConfigMap cm{"risk", "db", true, {{"PASSWORD", kSecretValue}}, 1};
    ASSERT_TRUE((*store)->PutConfigMap(cm).ok());
    auto catalog = data::Catalog::Open(dir);
    ASSERT_TRUE(catalog.ok());
    data::Datasource ds;
    ds.name = "lake";
    ds.kind = "s3";
    ds.endpoint = "http://127.0.0.1:9";
    ds.access_key = "AKIA";
    ds.secret_key = kSecretKey;
    ASSERT_TRUE((*catalog)->Register(ds).ok());
    ds.name = "old-lake";
    ds.secret_key = "placeholder";
    ASSERT_TRUE((*catalog)->Register(ds).ok());
  }
  auto db = Db::Open(StateDbPath(dir));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)
                  ->Run("INSERT INTO store_configmaps VALUES ('risk', 'old', 1, ?1, 1)",
                        std::string("{\"TOKEN\":\"") + kLegacyValue + "\"}")
                  .ok());
  ASSERT_TRUE(
      (*db)
          ->Run("UPDATE data_sources SET secret = ?1 WHERE name = 'old-lake'",
                std::string("{\"accessKey\":\"AKIA\",\"secretKey\":\"") + kLegacyKey + "\"}")
          .ok());
}

TEST(SecretsAtRestTest, NoSecretValueInAnyFileOfTheStateDirectory) {
  testing::TempDir dir("secrets-at-rest");
  Populate(dir.path());
  ASSERT_FALSE(FilesHolding(dir.path(), kLegacyValue).empty());  // the clear rows are there
  ExpectValuesStillRead(dir.path());  // opening the store and the catalog seals them
  ExpectNoValueInAnyFile(dir.path());
}

TEST(SecretsAtRestTest, RotationReSealsEverythingAndDropsTheOldKey) {
  testing::TempDir dir("secrets-rotate");
  Populate(dir.path());
  ExpectValuesStillRead(dir.path());
  std::string ring_before = *ReadFile(SecretBox::KeyFilePath(dir.path()));
  auto r = RotateSecretKey(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_NE(r->old_key_id, r->new_key_id);
  EXPECT_EQ(r->key_file, SecretBox::KeyFilePath(dir.path()));
  std::string ring_after = *ReadFile(r->key_file);
  for (const auto& line : Split(ring_before, '\n')) {
    if (!line.empty() && line[0] != '#') {
      EXPECT_EQ(ring_after.find(line), std::string::npos);
    }
  }
  ExpectValuesStillRead(dir.path());  // with only the new key
  ExpectNoValueInAnyFile(dir.path());
  auto db = Db::Open(StateDbPath(dir.path()));
  ASSERT_TRUE(db.ok());
  auto sealed = (*db)->Rows("SELECT data_json FROM store_configmaps WHERE secret = 1",
                            [](const Stmt& s) { return s.Text(0); });
  ASSERT_TRUE(sealed.ok());
  for (const auto& v : *sealed) {
    EXPECT_NE(v.find(":" + r->new_key_id + ":"), std::string::npos) << v;
  }
}

TEST(SecretsAtRestTest, RotationIsRefusedWhileAControllerHoldsTheDirectory) {
  testing::TempDir dir("secrets-busy");
  int fd = ::open(dir.Sub("controller.lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto r = RotateSecretKey(dir.path());
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "CONFLICT");
  EXPECT_EQ(r.error().hint, "stop it, rotate the key, start it again");
}

}  // namespace
}  // namespace rsl::runtime
