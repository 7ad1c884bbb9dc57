// The setup every fault test shares: a fresh state directory prepared as the demo prepares
// the controller's (local datasources for hdfs://ns1 and ceph://models, the four
// environments), the day's data, variants of the example workload, and `seedctl run`.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "e2e_util.h"

namespace rsl::e2e {

//! One event of the run, as the store keeps it (times in ms since the epoch).
struct Event {
  std::string step;
  std::string reason;
  std::string message;
  int64_t time_ms = 0;
};

class FaultFixture : public ::testing::Test {
 protected:
  void SetUp() override;

  //! gen_transactions.py --out <hdfs root> --rows N [extra...]; false (and a failure) if it
  //! did not work.
  bool Generate(int rows, const std::vector<std::string>& extra = {});
  //! The example workload with `edits` (each: replace the first `from` with `to`), without
  //! its buildFingerprint (the pinned digest is for the demo's default data), and with the
  //! input and output URIs as file:// paths to the datasources' directories; written under
  //! the temporary directory, returns the path.
  std::string Variant(const std::vector<std::pair<std::string, std::string>>& edits);
  //! `seedctl run -f yaml --state-dir ... --node-file ...` in the background / to the end.
  Process StartRun(const std::string& yaml);
  CmdResult RunToEnd(const std::string& yaml);
  //! Every event of the (only) run in the state directory, oldest first.
  std::vector<Event> Events();
  //! The wall time rsl-shim recorded for an attempt (its exit record), or -1.
  double AttemptWallSeconds(const std::string& step, int attempt);
  //! The step's captured logs, every attempt concatenated.
  std::string ReadStepLogs(const std::string& step);
  //! A seedctl command against the state directory; fails the test if it does not exit 0.
  CmdResult Seedctl(const std::vector<std::string>& args);

  static std::string LastLine(const std::string& text);

  TempDir dir_;
  std::string state_;
  std::string hdfs_root_;
  std::string ceph_root_;
  int variants_ = 0;
};

}  // namespace rsl::e2e
