// Upgrades keep the state: a state directory written by an earlier RSL (the dump of a real one
// in tests/api/state_fixtures/, with its key file and token) opens with the current binaries,
// which migrate it forward, and everything in it still works: the token authenticates, the
// finished run lists and describes with its steps and events, the sealed secret still opens for
// a new run of the workload (its next version), the sealed datasource credentials are listed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "base/sqlite.h"
#include "base/strings.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

const std::string kFixture = std::string(RSL_SOURCE_DIR) + "/tests/api/state_fixtures/2026-12";

// The state directory as the earlier RSL left it: its database (loaded from the dump) and key.
void RestoreFixture(const std::string& state_dir) {
  auto db = Db::Open(StateDbPath(state_dir));
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  Status loaded = (*db)->Exec(ReadText(kFixture + "/rsl.sql"));
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  std::filesystem::copy_file(kFixture + "/secret.key", state_dir + "/secret.key");
  ::chmod((state_dir + "/secret.key").c_str(), 0600);
}

int64_t Version(const std::string& state_dir, const std::string& component) {
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return -1;
  auto v = (*db)->First(
      "SELECT MAX(version) FROM schema_migrations WHERE component=?1",
      [](const Stmt& r) { return r.Int(0); }, component);
  return v.ok() && v->has_value() ? **v : -1;
}

TEST(StateUpgradeTest, AStateDirectoryOfAnEarlierReleaseOpensMigratedWithEverythingInIt) {
  Controller c;
  RestoreFixture(c.state_dir());
  const int64_t store_before = Version(c.state_dir(), "store");
  ASSERT_GT(store_before, 0);
  ASSERT_TRUE(c.Start()) << c.Log();
  // Migrated forward (or already current): never below what the earlier release wrote.
  EXPECT_GE(Version(c.state_dir(), "store"), store_before);

  const std::string token = std::string(Trim(ReadText(kFixture + "/token")));
  CmdResult list = c.Seedctl(token, {"workload", "list", "-n", "risk"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("upgrade-fixture"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("SUCCEEDED"), std::string::npos) << list.out;
  const std::string old_id = "wl-20261203-92b56b23";
  CmdResult describe = c.Seedctl(token, {"workload", "describe", "--id", old_id});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  for (const char* text : {"prepare", "train", "Succeeded", "OutputCommitted"}) {
    EXPECT_NE(describe.out.find(text), std::string::npos) << text << "\n" << describe.out;
  }
  EXPECT_EQ(describe.out.find("s3cr3t-fixture"), std::string::npos);

  CmdResult secrets = c.Seedctl(token, {"secret", "list", "-n", "risk"});
  ASSERT_EQ(secrets.exit_code, 0) << secrets.err;
  EXPECT_NE(secrets.out.find("db-creds"), std::string::npos) << secrets.out;

  // The next version of the same workload: its step gets the secret sealed by the earlier
  // release (envFrom), and fails unless the value is the one stored then.
  std::string yaml = ReadText(kFixture + "/workload.yaml");
  const std::string prepared = "echo rows=42 > $RSL_OUTPUT/prepared.txt; echo prepared";
  ASSERT_NE(yaml.find(prepared), std::string::npos);
  yaml.replace(yaml.find(prepared), prepared.size(),
               "test \"$password\" = s3cr3t-fixture; echo rows=42 > $RSL_OUTPUT/prepared.txt");
  WriteText(c.work_dir() + "/next.yaml", yaml);
  CmdResult submit = c.Seedctl(token, {"workload", "submit", "-f", "next.yaml", "-n", "risk"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  std::string id = IdFromSubmit(submit.out);
  EXPECT_EQ(c.WaitPhase(token, id, 60000), "SUCCEEDED")
      << c.Seedctl(token, {"workload", "describe", "--id", id}).out;
  CmdResult history = c.Seedctl(token, {"workload", "list", "-n", "risk"});
  EXPECT_NE(history.out.find(id), std::string::npos) << history.out;
  EXPECT_NE(history.out.find(old_id), std::string::npos) << history.out;
  c.Terminate();

  CmdResult sources =
      RunCmd({SeedctlPath(), "datasource", "list", "--state-dir", c.state_dir()}, {});
  ASSERT_EQ(sources.exit_code, 0) << sources.err;
  EXPECT_NE(sources.out.find("fixture-s3"), std::string::npos) << sources.out;
  EXPECT_EQ(sources.out.find("fixture-secret-key-value"), std::string::npos);
}

// The same binaries refuse a state directory written by a newer RSL instead of misreading it.
TEST(StateUpgradeTest, AStateDirectoryOfANewerReleaseIsRefusedAtStart) {
  Controller c;
  RestoreFixture(c.state_dir());
  {
    auto db = Db::Open(StateDbPath(c.state_dir()));
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)
            ->Exec("INSERT INTO schema_migrations(component, version) VALUES ('store', 1000)")
            .ok());
  }
  EXPECT_FALSE(c.Start());
  EXPECT_NE(c.Log().find("STATE_SCHEMA_TOO_NEW"), std::string::npos) << c.Log();
  EXPECT_NE(c.Log().find("store schema version 1000"), std::string::npos) << c.Log();
}

}  // namespace
}  // namespace rsl::apitest
