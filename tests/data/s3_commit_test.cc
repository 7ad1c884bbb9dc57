// Two runs, one object-store output root, against a real S3 server (the single-node Ceph
// RADOS Gateway of scripts/s3-server.sh; label s3): the lease and the commit of
// engine/object_root.h through the data layer's publisher, the real thing beside the fake of
// src/engine/object_root_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "commit_root_cases.h"
#include "data/catalog.h"
#include "data/remote.h"
#include "runtime/data_hooks.h"

namespace rsl {
namespace {

std::string EnvOr(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

std::string FreshDir(const std::string& name) {
  std::string dir =
      ::testing::TempDir() + "s3_commit_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A state directory whose catalog serves ceph:// from the test server, and its publisher.
std::shared_ptr<runtime::DataPublisher> Publisher(const std::string& state_dir) {
  auto catalog = data::Catalog::Open(state_dir);
  EXPECT_TRUE(catalog.ok());
  data::Datasource ds;
  ds.name = "ceph-test";
  ds.kind = "ceph";
  ds.endpoint = EnvOr("S3_ENDPOINT", "http://127.0.0.1:7480");
  ds.access_key = EnvOr("S3_ACCESS_KEY", "0555b35654ad1656d804");
  ds.secret_key =
      EnvOr("S3_SECRET_KEY", "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==");
  EXPECT_TRUE((*catalog)->Register(ds, /*replace=*/true).ok());
  data::S3Config c = data::S3ConfigFrom(ds);
  EXPECT_TRUE(data::S3CreateBucket(c, "rsl-commit").ok());
  return std::make_shared<runtime::DataPublisher>(state_dir);
}

TEST(S3Commit, ALiveLeaseMakesTheNextWaitAndAnExpiredOneIsTakenOver) {
  commit_cases::ALiveLeaseMakesTheNextWaitAndAnExpiredOneIsTakenOver(Publisher, FreshDir("lease"),
                                                                     "ceph://rsl-commit/lease");
}

TEST(S3Commit, TwoControllersCommittingToOneRootLeaveOneRunsSetAndRecordTheOthers) {
  commit_cases::TwoControllersCommittingToOneRootLeaveOneRunsSetAndRecordTheOthers(
      Publisher, FreshDir("two"), "ceph://rsl-commit/shared");
}

TEST(S3Commit, ARefuseRunIsRejectedWhileAnotherControllersRunIsInFlightAndAdmittedAfter) {
  commit_cases::ARefuseRunIsRejectedWhileAnotherControllersRunIsInFlightAndAdmittedAfter(
      Publisher, FreshDir("refuse"), "ceph://rsl-commit/refuse");
}

}  // namespace
}  // namespace rsl
