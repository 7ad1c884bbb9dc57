#include "runtime/data_hooks.h"

#include <gtest/gtest.h>

#include <chrono>

#include "base/codes.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::Input;
using testing::TempDir;

TEST(DataAdmission, RejectsIncompleteInputFastWithTheEvent) {
  TempDir dir;
  std::string csv = "tx_id,amount\n";
  for (int i = 0; i < 10000; i++)
    csv += "t" + std::to_string(i) + "," + (i % 1111 == 5 ? "" : "2.5") + "\n";
  dir.Write("in/part-0.csv", csv);
  spec::Workload wl;
  wl.name = "fraud";
  wl.data.input = Input(dir.path() + "/in", "tx_id:string,amount:float64");
  wl.data.input->quality.completeness = 99.95;
  engine::RunInfo run;
  run.workload = &wl;
  run.state_dir = dir.path() + "/state";
  runtime::DataAdmissionCheck check(run.state_dir);
  engine::AdmissionReport report;
  auto t0 = std::chrono::steady_clock::now();
  Status st = check.Check(run, &report);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(st.ok());
  EXPECT_LT(secs, 1.0);
  EXPECT_EQ(st.code(), codes::kDataCompleteness);
  EXPECT_EQ(st.error().path, "amount");
  EXPECT_EQ(st.error().message, "non-null 99.91% < 99.95% (9 of 10000 null)");
  EXPECT_EQ(report.event_reason, "DataValidationFailed");
  EXPECT_EQ(report.event_message,
            "DATA_QUALITY_COMPLETENESS_BELOW_THRESHOLD amount: non-null 99.91% < 99.95% (9 of "
            "10000 null)");
  auto j = nlohmann::json::parse(report.report_json);
  EXPECT_EQ(j["rows"], 10000);
  EXPECT_EQ(j["checks"][3]["state"], "failed");
  ASSERT_EQ(report.input_descriptors_json.size(), 1u);
  auto d = nlohmann::json::parse(report.input_descriptors_json[0]);
  EXPECT_EQ(d["uri"], dir.path() + "/in");
  EXPECT_EQ(d["checksum"].get<std::string>().substr(0, 7), "sha256:");
}

TEST(DataAdmission, PassesCleanInputAndSkipsWorkloadsWithoutInput) {
  TempDir dir;
  dir.Write("in.csv", "tx_id,amount\nt1,1\nt2,2\n");
  spec::Workload wl;
  engine::RunInfo run;
  run.workload = &wl;
  runtime::DataAdmissionCheck check(dir.path() + "/state");
  engine::AdmissionReport empty;
  EXPECT_TRUE(check.Check(run, &empty).ok());
  EXPECT_TRUE(empty.report_json.empty());
  wl.data.input = Input(dir.path() + "/in.csv", "tx_id:string,amount:float64");
  wl.data.input->quality.uniqueness = 100;
  engine::AdmissionReport report;
  Status st = check.Check(run, &report);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(report.event_reason.empty());
  EXPECT_EQ(report.event_message.substr(0, 38), "input: 2 rows in 1 file(s), csv, all c");
}

}  // namespace
}  // namespace rsl::data
