#include "data/storage.h"

#include <gtest/gtest.h>

#include "base/codes.h"
#include "base/file.h"
#include "data/catalog.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::TempDir;

TEST(Uri, Parses) {
  auto u = ParseUri("hdfs://ns1/raw/transactions/year=2024");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "hdfs");
  EXPECT_EQ(u->authority, "ns1");
  EXPECT_EQ(u->path, "/raw/transactions/year=2024");
  EXPECT_EQ(u->Root(), "hdfs://ns1");
  EXPECT_EQ(ParseUri("/tmp/x.csv")->scheme, "file");
  EXPECT_EQ(ParseUri("file:///tmp/x.csv")->path, "/tmp/x.csv");
  auto bad = ParseUri("gopher://x/y");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, codes::kInvalidArgument);
  EXPECT_FALSE(ParseUri("s3:///key").ok());
  EXPECT_EQ(HivePartitions("year=2024/month=06/part-0.avro").at("month"), "06");
}

TEST(FileStorage, ListsRecursivelySkippingHiddenAndReadsRanges) {
  TempDir dir;
  dir.Write("d/year=2024/month=06/a.avro", "aaaa");
  dir.Write("d/year=2024/month=07/b.avro", "bbbbbb");
  dir.Write("d/_SUCCESS", "");
  dir.Write("d/.a.avro.crc", "x");
  auto fs = NewFileStorage();
  auto list = fs->List(dir.path() + "/d");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].relative, "year=2024/month=06/a.avro");
  EXPECT_EQ((*list)[1].size, 6);
  EXPECT_EQ((*list)[1].partitions.at("month"), "07");
  EXPECT_EQ(*fs->ReadRange(dir.path() + "/d/year=2024/month=07/b.avro", 2, 3), "bbb");
  auto missing = fs->List(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kDataSourceNotFound);
}

TEST(FileStorage, PublishIsAllOrNothingWithManifest) {
  TempDir dir;
  dir.Write("staging/model.bin", "weights");
  dir.Write("staging/sub/m.json", "{}");
  dir.Write("out/old.txt", "old");
  auto fs = NewFileStorage();
  ASSERT_TRUE(fs->Publish(dir.path() + "/staging", "file://" + dir.path() + "/out").ok());
  EXPECT_FALSE(PathExists(dir.path() + "/out/old.txt"));
  EXPECT_EQ(*ReadFile(dir.path() + "/out/sub/m.json"), "{}");
  auto manifest = ReadFile(dir.path() + "/out/_RSL_COMMIT");
  ASSERT_TRUE(manifest.ok());
  EXPECT_NE(manifest->find("\"model.bin\""), std::string::npos);
  EXPECT_NE(manifest->find("\"sha256\""), std::string::npos);
}

TEST(Catalog, RegistersResolvesAndNeverPrintsSecrets) {
  TempDir dir;
  auto c = Catalog::Open(dir.path());
  ASSERT_TRUE(c.ok());
  Datasource local;
  local.name = "ns1-local";
  local.kind = "local";
  local.authority = "hdfs://ns1";
  local.path = dir.path() + "/hdfs";
  ASSERT_TRUE((*c)->Register(local).ok());
  Datasource ceph;
  ceph.name = "ceph-models";
  ceph.kind = "ceph";
  ceph.endpoint = "http://127.0.0.1:7480";
  ceph.access_key = "AKIAEXAMPLEKEY123";
  ceph.secret_key = "very-secret";
  ASSERT_TRUE((*c)->Register(ceph).ok());
  auto dup = (*c)->Register(ceph);
  EXPECT_EQ(dup.code(), codes::kConflict);
  Datasource hdfs;
  hdfs.name = "hdfs-prod";
  hdfs.kind = "hdfs";
  hdfs.namenodes = {"ns1:8020", "ns2:8020"};
  ASSERT_TRUE((*c)->Register(hdfs).ok());
  Datasource bad = hdfs;
  bad.name = "bad";
  bad.namenodes = {"ns1"};
  EXPECT_EQ((*c)->Register(bad).error().path, "--namenodes");

  auto all = (*c)->List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  for (const auto& ds : *all) {
    std::string shown = ds.RedactedJson().dump();
    EXPECT_EQ(shown.find("very-secret"), std::string::npos);
    EXPECT_EQ(shown.find("AKIAEXAMPLEKEY123"), std::string::npos);
  }
  // local wins for its authority; hdfs by namenode host; ceph as the only one of its kind.
  EXPECT_EQ((*(*c)->Resolve(*ParseUri("hdfs://ns1/raw")))->name, "ns1-local");
  EXPECT_EQ((*(*c)->Resolve(*ParseUri("hdfs://ns2/raw")))->name, "hdfs-prod");
  EXPECT_EQ((*(*c)->Resolve(*ParseUri("ceph://models/x")))->secret_key, "very-secret");
  EXPECT_FALSE((*(*c)->Resolve(*ParseUri("s3://b/x"))).has_value());
  auto typo = (*c)->Get("hdfs-prd");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().hint, "did you mean \"hdfs-prod\"?");

  // A local datasource serves hdfs:// URIs from a directory, URIs kept as written.
  dir.Write("hdfs/raw/t/part-0.csv", "a\n1\n");
  auto s = OpenStorage("hdfs://ns1/raw/t", c->get());
  ASSERT_TRUE(s.ok());
  auto list = (*s)->List("hdfs://ns1/raw/t");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].uri, "hdfs://ns1/raw/t/part-0.csv");
  ASSERT_TRUE((*c)->Remove("ns1-local").ok());
  EXPECT_EQ((*c)->Remove("ns1-local").code(), codes::kNotFound);
}

}  // namespace
}  // namespace rsl::data
