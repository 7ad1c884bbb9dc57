#include "cli/table.h"

#include <gtest/gtest.h>

namespace rsl::cli {

TEST(TableTest, AlignsColumnsLikeKubectl) {
  Table t({"NAME", "PHASE", "AGE"});
  t.AddRow({"ingest", "SUCCEEDED", "2m"});
  t.AddRow({"train-long-name", "RUNNING", ""});
  EXPECT_EQ(t.Render(),
            "NAME             PHASE      AGE\n"
            "ingest           SUCCEEDED  2m\n"
            "train-long-name  RUNNING\n");
}

}  // namespace rsl::cli
