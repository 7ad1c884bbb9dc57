// The WebHDFS driver against recorded namenode responses (tests/data/webhdfs/) replayed by an
// in-test HTTP server: a standby namenode that answers StandbyException and an active one that
// serves GETFILESTATUS/LISTSTATUS and redirects OPEN to a "datanode" path, as Hadoop does.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "base/codes.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "base/strings.h"
#include "data/catalog.h"
#include "data/quality.h"
#include "data/remote.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

const std::string kDir = RSL_SOURCE_DIR "/tests/data/webhdfs/";

class FakeNamenodes : public ::testing::Test {
 protected:
  void SetUp() override {
    standby_.Get(R"(/webhdfs/v1/.*)", [](const httplib::Request&, httplib::Response& res) {
      res.status = 403;
      res.set_content(*ReadFile(kDir + "standby.json"), "application/json");
    });
    active_.Get(R"(/webhdfs/v1(/.*))", [this](const httplib::Request& req, httplib::Response& res) {
      std::string op = req.get_param_value("op");
      std::string path = req.matches[1];
      std::string name = path.substr(1);
      for (auto& c : name) c = c == '/' ? '_' : c;
      requests_++;
      if (op == "OPEN") {  // the namenode redirects reads to a datanode
        res.status = 307;
        res.set_header("Location", "http://127.0.0.1:" + std::to_string(active_port_) +
                                       "/datanode/" + name +
                                       "?offset=" + req.get_param_value("offset"));
        return;
      }
      auto body = ReadFile(kDir + op + "_" + name + ".json");
      if (!body.ok()) body = ReadFile(kDir + op + "_missing.json");
      if (!body.ok()) body = ReadFile(kDir + "GETFILESTATUS_missing.json");
      res.status = body->find("RemoteException") != std::string::npos ? 404 : 200;
      res.set_content(*body, "application/json");
    });
    active_.Get(R"(/datanode/(.*))", [](const httplib::Request& req, httplib::Response& res) {
      auto body = ReadFile(kDir + "OPEN_" + std::string(req.matches[1]) + ".data");
      if (!body.ok()) {
        res.status = 404;
        return;
      }
      res.set_content(body->substr(std::stoul(req.get_param_value("offset"))),
                      "application/octet-stream");
    });
    standby_port_ = standby_.bind_to_any_port("127.0.0.1");
    active_port_ = active_.bind_to_any_port("127.0.0.1");
    threads_.emplace_back([this] { standby_.listen_after_bind(); });
    threads_.emplace_back([this] { active_.listen_after_bind(); });
    while (!standby_.is_running() || !active_.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ds_.name = "hdfs-prod";
    ds_.kind = "hdfs";
    ds_.namenodes = {"ns1:8020", "ns2:8020"};
    ds_.webhdfs_url = "http://127.0.0.1:" + std::to_string(standby_port_) +
                      ",http://127.0.0.1:" + std::to_string(active_port_);
  }
  void TearDown() override {
    standby_.stop();
    active_.stop();
    for (auto& t : threads_) t.join();
  }

  httplib::Server standby_, active_;
  int standby_port_ = 0, active_port_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<int> requests_{0};
  Datasource ds_;
};

TEST_F(FakeNamenodes, ListsPastTheStandbyAndReadsThroughTheRedirect) {
  auto hdfs = NewWebHdfsStorage(ds_);
  auto list = hdfs->List("hdfs://ns1/raw/tx");
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  ASSERT_EQ(list->size(), 1u);  // _SUCCESS skipped
  EXPECT_EQ((*list)[0].uri, "hdfs://ns1/raw/tx/day=15/part-00000.csv");
  EXPECT_EQ((*list)[0].size, 69);
  EXPECT_EQ((*list)[0].mtime_ms, 1718445600300);
  EXPECT_EQ((*list)[0].partitions.at("day"), "15");
  auto range = hdfs->ReadRange("hdfs://ns1/raw/tx/day=15/part-00000.csv", 6, -1);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->substr(0, 6), "amount");
  auto missing = hdfs->Stat("hdfs://ns1/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kDataSourceNotFound);
  EXPECT_NE(missing.error().message.find("FileNotFoundException"), std::string::npos);
}

// The validation clock, pinned at `now_ms` (each Validate reads it once, at its start).
Env* ClockAt(int64_t now_ms) {
  static FakeClockEnv env;
  env.SetNowMs(now_ms);
  return &env;
}

TEST_F(FakeNamenodes, ValidatesAnHdfsInputThroughTheCatalog) {
  testing::TempDir dir;
  auto catalog = Catalog::Open(dir.path());
  ASSERT_TRUE(catalog.ok());
  ASSERT_TRUE((*catalog)->Register(ds_).ok());
  auto in = testing::Input("hdfs://ns1/raw/tx", "tx_id:string,amount:float64,ts:timestamp");
  in.quality.completeness = 90;
  ValidateOptions opt;
  opt.env = ClockAt(1718445600000 + 60000);
  auto r = Validate(in, catalog->get(), opt);
  EXPECT_EQ(r.status.code(), codes::kDataCompleteness);
  EXPECT_EQ(r.status.error().message, "non-null 50.00% < 90.00% (1 of 2 null)");
  EXPECT_EQ(r.fields[2].max.value(), 1718445600000000.0);  // ts: ISO text -> micros
  auto test = TestDatasource(ds_);
  ASSERT_FALSE(test.ok());  // the recordings have no GETFILESTATUS of "/"
  EXPECT_EQ(test.error().code, codes::kDataSourceNotFound);
}

TEST(WebHdfs, NoNamenodeAnswering) {
  Datasource ds;
  ds.kind = "hdfs";
  ds.namenodes = {"127.0.0.1:8020"};
  ds.webhdfs_url = "http://127.0.0.1:1";
  auto r = NewWebHdfsStorage(ds)->Stat("hdfs://ns1/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kDataSourceUnreachable);
  EXPECT_TRUE(StartsWith(r.error().message, "no namenode answered: http://127.0.0.1:1: "));
}

}  // namespace
}  // namespace rsl::data
