// The S3 driver against a real S3 server: a single-node Ceph RADOS Gateway that the CTest
// fixture starts and stops (scripts/s3-server.sh; label `s3`, so `ctest -L s3` runs alone).
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "data/catalog.h"
#include "data/quality.h"
#include "data/remote.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::Input;
using testing::TempDir;

std::string Env(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

// The defaults scripts/s3-server.sh uses.
S3Config Config() {
  S3Config c;
  c.endpoint = Env("S3_ENDPOINT", "http://127.0.0.1:7480");
  c.access_key = Env("S3_ACCESS_KEY", "0555b35654ad1656d804");
  c.secret_key = Env("S3_SECRET_KEY", "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==");
  return c;
}

std::string Bucket(const std::string& name) {
  EXPECT_TRUE(S3CreateBucket(Config(), name).ok());
  return name;
}

TEST(S3, WriteStatListReadDelete) {
  auto s3 = NewS3Storage(Config(), "ceph");
  std::string b = Bucket("rsl-basic");
  ASSERT_TRUE(s3->Write("ceph://" + b + "/d/year=2024/month=06/a.csv", "x,y\n1,2\n").ok());
  ASSERT_TRUE(s3->Write("ceph://" + b + "/d/year=2024/month=07/b key.csv", "x,y\n3,4\n").ok());
  ASSERT_TRUE(s3->Write("ceph://" + b + "/d/_SUCCESS", "").ok());
  auto st = s3->Stat("ceph://" + b + "/d/year=2024/month=06/a.csv");
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(st->size, 8);
  EXPECT_FALSE(st->etag.empty());
  EXPECT_GT(st->mtime_ms, 1600000000000);
  auto dir = s3->Stat("ceph://" + b + "/d");
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(dir->is_dir);
  auto list = s3->List("ceph://" + b + "/d");
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  ASSERT_EQ(list->size(), 2u);  // _SUCCESS skipped
  EXPECT_EQ((*list)[0].relative, "year=2024/month=06/a.csv");
  EXPECT_EQ((*list)[1].uri, "ceph://" + b + "/d/year=2024/month=07/b key.csv");
  EXPECT_EQ((*list)[1].partitions.at("month"), "07");
  auto range = s3->ReadRange("ceph://" + b + "/d/year=2024/month=06/a.csv", 4, 3);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, "1,2");
  auto missing = s3->Stat("ceph://" + b + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kDataSourceNotFound);
  ASSERT_TRUE(s3->Delete("ceph://" + b + "/d").ok());
  EXPECT_FALSE(s3->Stat("ceph://" + b + "/d").ok());
}

TEST(S3, MultipartUploadRoundTrips) {
  S3Config c = Config();
  c.multipart_threshold = 6 << 20;
  c.part_size = 5 << 20;
  auto s3 = NewS3Storage(c, "s3");
  std::string b = Bucket("rsl-multipart");
  std::string big(13 << 20, '\0');
  for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<char>(i * 2654435761u >> 13);
  ASSERT_TRUE(s3->Write("s3://" + b + "/big.bin", big).ok());
  auto all = s3->ReadAll("s3://" + b + "/big.bin");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE((*all)->data() == big);
  auto st = s3->Stat("s3://" + b + "/big.bin");
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->etag.find("-3"), std::string::npos) << st->etag;  // 3 parts
}

TEST(S3, ValidatesThroughTheCatalogAndPublishes) {
  TempDir dir;
  std::string b = Bucket("rsl-validate");
  auto catalog = Catalog::Open(dir.path() + "/state");
  ASSERT_TRUE(catalog.ok());
  Datasource ds;
  ds.name = "ceph-test";
  ds.kind = "ceph";
  ds.endpoint = Config().endpoint;
  ds.access_key = Config().access_key;
  ds.secret_key = Config().secret_key;
  ASSERT_TRUE((*catalog)->Register(ds).ok());
  auto s3 = OpenStorage("ceph://" + b + "/tx", catalog->get());
  ASSERT_TRUE(s3.ok());
  std::string csv = "tx_id,amount\n";
  for (int i = 0; i < 1000; i++) csv += "t" + std::to_string(i) + "," + (i < 3 ? "" : "1.5") + "\n";
  ASSERT_TRUE((*s3)->Write("ceph://" + b + "/tx/part-0.csv", csv).ok());
  auto in = Input("ceph://" + b + "/tx", "tx_id:string,amount:float64");
  in.quality.completeness = 99.9;
  auto r = Validate(in, catalog->get());
  EXPECT_EQ(r.status.code(), codes::kDataCompleteness);
  EXPECT_EQ(r.status.error().message, "non-null 99.70% < 99.90% (3 of 1000 null)");
  EXPECT_EQ(r.rows, 1000);

  dir.Write("out/model.bin", "weights");
  dir.Write("out/metrics/eval.json", "{}");
  ASSERT_TRUE((*s3)->Publish(dir.path() + "/out", "ceph://" + b + "/models/v1").ok());
  auto manifest = (*s3)->ReadAll("ceph://" + b + "/models/v1/_RSL_COMMIT");
  ASSERT_TRUE(manifest.ok());
  EXPECT_NE(std::string((*manifest)->data()).find("\"metrics/eval.json\""), std::string::npos);
  auto listed = (*s3)->List("ceph://" + b + "/models/v1");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);
  auto test = TestDatasource(ds);
  ASSERT_TRUE(test.ok()) << test.error().ToString();
}

// The conditional writes an output root's lease and manifest rely on (docs/engine.md "Two
// runs, one output root"): If-None-Match: * creates only, If-Match replaces only that version.
TEST(S3, ConditionalWritesCreateOnlyOnceAndReplaceOnlyTheVersionRead) {
  auto s3 = NewS3Storage(Config(), "s3");
  std::string uri = "s3://" + Bucket("rsl-conditional") + "/root/.rsl-output/lock";
  (void)s3->Delete(uri);
  auto created = s3->WriteIf(uri, "one", "");
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE(created->empty());
  auto again = s3->WriteIf(uri, "two", "");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, codes::kConflict) << again.error().ToString();
  auto read = s3->ReadTagged(uri);
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read->bytes, "one");
  EXPECT_EQ(read->etag, *created);
  auto wrong = s3->WriteIf(uri, "three", "\"00000000000000000000000000000000\"");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, codes::kConflict) << wrong.error().ToString();
  auto replaced = s3->WriteIf(uri, "four", read->etag);
  ASSERT_TRUE(replaced.ok()) << replaced.error().ToString();
  EXPECT_NE(*replaced, read->etag);
  auto stale = s3->WriteIf(uri, "five", read->etag);  // the version read is gone
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, codes::kConflict);
  auto now = s3->ReadTagged(uri);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->bytes, "four");
  auto missing = s3->WriteIf(uri + "-none", "x", *replaced);  // If-Match on no object
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kConflict) << missing.error().ToString();
  EXPECT_FALSE(s3->Stat(uri + "-none").ok());
  ASSERT_TRUE(s3->Delete(uri).ok());
  EXPECT_EQ(s3->ReadTagged(uri).error().code, codes::kDataSourceNotFound);
}

TEST(S3, BadCredentialsAndDeadEndpointsAreUnreachable) {
  S3Config bad = Config();
  bad.secret_key = "not-the-secret-key";
  auto s3 = NewS3Storage(bad, "s3");
  auto st = s3->Stat("s3://rsl-basic/x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, codes::kDataSourceUnreachable);
  EXPECT_NE(st.error().message.find("HTTP 403"), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().ToString().find("not-the-secret-key"), std::string::npos);
  S3Config dead = Config();
  dead.endpoint = "http://127.0.0.1:1";
  dead.max_retries = 1;
  auto d = NewS3Storage(dead, "s3")->Stat("s3://b/x");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, codes::kDataSourceUnreachable);
  EXPECT_NE(d.error().message.find("after 2 attempts"), std::string::npos) << d.error().message;
}

}  // namespace
}  // namespace rsl::data
