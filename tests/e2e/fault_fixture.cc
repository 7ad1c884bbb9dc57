#include "fault_fixture.h"

#include <filesystem>
#include <sstream>

#include "backend/local.h"
#include "engine/engine.h"
#include "store/store.h"

namespace rsl::e2e {

namespace fs = std::filesystem;

namespace {

constexpr const char* kImages[] = {"volc/ingest:v1.0", "volc/preprocess-fraud:v1.1",
                                   "volc/train-fraud-pytorch:v2.1", "volc/validate-fraud:v1.0"};
// A run of the small variants ends in seconds; this only bounds a hung run.
constexpr double kRunTimeoutS = 120;

}  // namespace

void FaultFixture::SetUp() {
  state_ = dir_.Sub("state");
  hdfs_root_ = dir_.Sub("hdfs-ns1");
  ceph_root_ = dir_.Sub("ceph-models");
  fs::create_directories(hdfs_root_);
  fs::create_directories(ceph_root_);
  Seedctl({"datasource", "register", "local", "--state-dir", state_, "--name", "hdfs-ns1",
           "--authority", "hdfs://ns1", "--path", hdfs_root_});
  Seedctl({"datasource", "register", "local", "--state-dir", state_, "--name", "ceph-models",
           "--authority", "ceph://models", "--path", ceph_root_});
  for (const char* image : kImages) {
    Seedctl({"env", "register", image, "--state-dir", state_, "--python",
             ExampleDir() + "/image/python3"});
  }
}

CmdResult FaultFixture::Seedctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SeedctlPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  CmdResult r = RunCmd(argv);
  EXPECT_EQ(r.exit_code, 0) << "seedctl " << args[0] << " " << args[1] << ":\n" << r.output;
  return r;
}

bool FaultFixture::Generate(int rows, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {kPython,  ExampleDir() + "/gen_transactions.py",
                                   "--out",  hdfs_root_,
                                   "--rows", std::to_string(rows)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  CmdResult r = RunCmd(argv);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0;
}

std::string FaultFixture::Variant(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = ReadText(ExampleDir() + "/fraud-detect-workload.yaml");
  for (const auto& [from, to] : edits) text = ReplaceOnce(text, from, to);
  // The same directories the local datasources map, as file:// URIs: the faults under test
  // do not depend on the datasource mapping (the demo exercises that).
  text = ReplaceOnce(text, "hdfs://ns1/", "file://" + hdfs_root_ + "/");
  text = ReplaceOnce(text, "ceph://models/", "file://" + ceph_root_ + "/");
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("buildFingerprint:") == std::string::npos) out += line + "\n";
  }
  std::string path = dir_.Sub("variant-" + std::to_string(++variants_) + ".yaml");
  WriteText(path, out);
  return path;
}

Process FaultFixture::StartRun(const std::string& yaml) {
  return Process({SeedctlPath(), "run", "-f", yaml, "--state-dir", state_, "--node-file",
                  ExampleDir() + "/nodes.yaml"},
                 {}, dir_.Sub("run-" + std::to_string(variants_) + ".log"));
}

CmdResult FaultFixture::RunToEnd(const std::string& yaml) {
  auto t0 = Clock::now();
  Process p = StartRun(yaml);
  CmdResult r;
  r.exit_code = p.Wait(kRunTimeoutS);
  r.seconds = SecondsSince(t0);
  r.output = p.Output();
  return r;
}

std::vector<Event> FaultFixture::Events() {
  std::vector<Event> events;
  auto store = store::OpenSqliteStore(state_);
  if (!store.ok()) {
    ADD_FAILURE() << store.error().ToString();
    return events;
  }
  auto runs = (*store)->ListRuns({});
  if (!runs.ok() || runs->size() != 1) {
    ADD_FAILURE() << "expected one run in " << state_;
    return events;
  }
  auto list = (*store)->ListEvents(runs->front().id, 0);
  if (!list.ok()) {
    ADD_FAILURE() << list.error().ToString();
    return events;
  }
  for (const auto& e : *list) events.push_back({e.step, e.reason, e.message, e.time});
  return events;
}

double FaultFixture::AttemptWallSeconds(const std::string& step, int attempt) {
  auto store = store::OpenSqliteStore(state_);
  if (!store.ok()) return -1;
  auto runs = (*store)->ListRuns({});
  if (!runs.ok() || runs->empty()) return -1;
  std::string exit =
      engine::AttemptPath(engine::RunDir(engine::DefaultRunsDir(state_), runs->front().id), step,
                          attempt) +
      ".exit";
  // The exit file, or its record in the supervisor's journal beside it.
  auto record = backend::ReadExitFile(exit, step);
  if (!record.ok()) {
    ADD_FAILURE() << "no exit record " << exit << ": " << record.error().ToString();
    return -1;
  }
  return double(record->usage.wall_ms) / 1000.0;
}

std::string FaultFixture::ReadStepLogs(const std::string& step) {
  auto store = store::OpenSqliteStore(state_);
  if (!store.ok()) return "";
  auto runs = (*store)->ListRuns({});
  if (!runs.ok() || runs->empty()) return "";
  std::string run_dir = engine::RunDir(engine::DefaultRunsDir(state_), runs->front().id);
  std::string logs;
  for (int attempt = 1; attempt <= 10; ++attempt) {
    std::string path = engine::AttemptLogPath(run_dir, step, attempt);
    if (fs::exists(path)) logs += ReadText(path);  // an attempt that printed nothing has none
  }
  return logs;
}

std::string FaultFixture::LastLine(const std::string& text) {
  CmdResult r;
  r.output = text;
  return r.LastLine();
}

}  // namespace rsl::e2e
