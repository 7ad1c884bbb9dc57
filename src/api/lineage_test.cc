#include "api/lineage.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/catalog.h"
#include "data/quality.h"

namespace rsl::api {
namespace {

store::WorkloadVersion Version(const std::string& suffix) {
  store::WorkloadVersion v;
  v.id = "wl-20260101-0000000" + suffix;
  v.name = "fraud";
  v.namespace_ = "risk";
  return v;
}

// A succeeded run of Version(suffix) whose outputs were committed at `uri`.
store::Run CommittedRun(const std::string& suffix, const std::string& uri) {
  store::Run run;
  run.id = "run-20260101-0000000" + suffix;
  run.phase = spec::RunPhase::kSucceeded;
  run.commit_state = store::kCommitCommitted;
  run.committed_uri = uri;
  return run;
}

TEST(LineageTest, HumanBytesAsTheSeedPrints) {
  EXPECT_EQ(HumanBytes(512), "512B");
  EXPECT_EQ(HumanBytes(12'400'000'000), "12.4GB");
  EXPECT_EQ(HumanBytes(245'000'000), "245MB");
  EXPECT_EQ(HumanBytes(-1), "?");
}

TEST(LineageTest, UuidIsStableAndWellFormed) {
  std::string u = UuidFrom("run-20260101-0000000a");
  EXPECT_EQ(u, UuidFrom("run-20260101-0000000a"));
  EXPECT_NE(u, UuidFrom("run-20260101-0000000b"));
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[14], '4');
  EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos);
}

TEST(LineageTest, TextRenderingFollowsTheSeed) {
  auto dir = std::filesystem::temp_directory_path() / ("rsl-lineage-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "in");
  std::ofstream(dir / "in" / "a.csv") << std::string(1500, 'x');
  store::WorkloadVersion v = Version("a");
  store::Run run = CommittedRun("a", "ceph://models/fraud-v2.1.7");
  std::vector<store::Step> steps(3);
  steps[0].name = "ingest";
  steps[0].phase = spec::StepPhase::kSucceeded;
  steps[1].name = "train";
  steps[1].phase = spec::StepPhase::kSucceeded;
  steps[2].name = "validate";
  steps[2].phase = spec::StepPhase::kSkipped;
  std::vector<store::Artifact> artifacts(1);
  artifacts[0].uri = "ceph://models/fraud-v2.1.7/train";
  artifacts[0].bytes = 245'000'000;
  std::vector<store::LineageEdge> edges(1);
  edges[0].relation = "input";
  edges[0].from = "file://" + (dir / "in").string();
  LineageInput in{&v, &run, &steps, &artifacts, &edges, nullptr};
  auto j = LineageJson(in);
  EXPECT_EQ(j["text"],
            "Input: file://" + (dir / "in").string() +
                " (1.5KB)\n→ ingest → train → Output: ceph://models/fraud-v2.1.7 (245MB)\n");
  auto ev = OpenLineageEvent(in, j);
  EXPECT_EQ(ev["eventType"], "COMPLETE");
  EXPECT_EQ(ev["job"]["namespace"], "risk");
  EXPECT_EQ(ev["inputs"][0]["namespace"], "file");
  EXPECT_EQ(ev["outputs"][0]["namespace"], "ceph://models");
  EXPECT_EQ(ev["outputs"][0]["name"], "/fraud-v2.1.7/train");
  EXPECT_EQ(ev["outputs"][0]["outputFacets"]["outputStatistics"]["size"], 245'000'000);
  std::filesystem::remove_all(dir);
}

// A later run replaced the outputs: lineage says so, and names it, instead of their size.
TEST(LineageTest, SupersededOutputsNameTheRunThatReplacedThem) {
  store::WorkloadVersion v = Version("a");
  store::Run run = CommittedRun("a", "/data/scores");
  std::vector<store::Step> steps(1);
  steps[0].name = "score";
  steps[0].phase = spec::StepPhase::kSucceeded;
  std::vector<store::Artifact> artifacts;
  std::vector<store::LineageEdge> edges(1);
  edges[0] = {run.id, "/data/scores", "run-20260101-0000000b", "superseded-by", ""};
  LineageInput in{&v, &run, &steps, &artifacts, &edges, nullptr};
  auto j = LineageJson(in);
  EXPECT_EQ(j["output"]["supersededBy"], "run-20260101-0000000b");
  EXPECT_EQ(j["text"],
            "→ score → Output: /data/scores (superseded by run run-20260101-0000000b)\n");
}

// An input served by a `local` datasource (hdfs://ns1 kept in a local directory): the size
// comes from the DataDescriptor admission measured, not from the URI (which names no local
// path), so lineage shows it instead of "(?)".
TEST(LineageTest, InputSizeOfALocalDatasourceComesFromItsDescriptor) {
  auto dir =
      std::filesystem::temp_directory_path() / ("rsl-lineage-ds-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "ns1" / "in");
  std::ofstream(dir / "ns1" / "in" / "a.csv") << "id\n" << std::string(1500, '7') << "\n";
  auto catalog = data::Catalog::Open((dir / "state").string());
  ASSERT_TRUE(catalog.ok()) << catalog.error().ToString();
  data::Datasource ds;
  ds.name = "ns1";
  ds.kind = "local";
  ds.authority = "hdfs://ns1";
  ds.path = (dir / "ns1").string();
  ASSERT_TRUE((*catalog)->Register(ds).ok());
  spec::DataInput input;
  input.uri = "hdfs://ns1/in";
  input.schema_text = "id:string";
  input.schema = *schema::ParseSchema(input.schema_text);
  data::ValidationReport report = data::Validate(input, catalog->get());
  ASSERT_TRUE(report.status.ok()) << report.ToText();
  store::WorkloadVersion v = Version("c");
  store::Run run = CommittedRun("c", "");
  std::vector<store::Step> steps;
  std::vector<store::Artifact> artifacts;
  std::vector<store::LineageEdge> edges(1);
  edges[0].relation = "input";
  edges[0].from = input.uri;
  edges[0].from_json = report.descriptor.ToJson().dump();
  LineageInput in{&v, &run, &steps, &artifacts, &edges, nullptr};
  auto j = LineageJson(in);
  EXPECT_EQ(j["input"]["bytes"], 1504);
  EXPECT_EQ(j["input"]["descriptor"]["rows"], 1);
  EXPECT_EQ(j["text"].get<std::string>().rfind("Input: hdfs://ns1/in (1.5KB)\n", 0), 0u)
      << j["text"];
  std::filesystem::remove_all(dir);
}

// A `local` datasource publishes ceph://models/... into a local directory: OpenLineage names
// the dataset as the workload wrote it (namespace ceph://models), not the local path.
TEST(LineageTest, OpenLineageNamesOutputsAsWritten) {
  store::WorkloadVersion v = Version("b");
  store::Run run = CommittedRun("b", "/data/ceph-models/fraud-v2.1.7");
  std::vector<store::Step> steps(1);
  steps[0].name = "train";
  steps[0].phase = spec::StepPhase::kSucceeded;
  std::vector<store::Artifact> artifacts(2);
  artifacts[0].uri = "file:///data/ceph-models/fraud-v2.1.7/train";
  artifacts[0].bytes = 10;
  artifacts[1].uri = "/data/ceph-models/fraud-v2.1.70/other";  // not under the output
  artifacts[1].bytes = 10;
  std::vector<store::LineageEdge> edges;
  spec::Workload w;
  w.data.output = spec::DataOutput{};
  w.data.output->uri = "ceph://models/fraud-v2.1.7/";
  LineageInput in{&v, &run, &steps, &artifacts, &edges, &w};
  auto ev = OpenLineageEvent(in, LineageJson(in));
  ASSERT_EQ(ev["outputs"].size(), 2u) << ev.dump();
  EXPECT_EQ(ev["outputs"][0]["namespace"], "ceph://models");
  EXPECT_EQ(ev["outputs"][0]["name"], "/fraud-v2.1.7/train");
  EXPECT_EQ(ev["outputs"][1]["namespace"], "file");
  EXPECT_EQ(ev["outputs"][1]["name"], "/data/ceph-models/fraud-v2.1.70/other");
}

}  // namespace
}  // namespace rsl::api
