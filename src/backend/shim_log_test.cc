// The shim's log masking: a step's secret values never reach its log.
#include "backend/shim_log.h"

#include <gtest/gtest.h>

namespace rsl::shim {
namespace {

TEST(ShimLogTest, MaskReplacesEverySecret) {
  std::string s = "token=hunter2 and hunter2, key=abc";
  Mask(&s, {"hunter2", "", "abc"});
  EXPECT_EQ(s, "token=*** and ***, key=***");
}

}  // namespace
}  // namespace rsl::shim
