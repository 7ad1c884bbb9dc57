#include "base/status.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl {

TEST(StatusTest, RendersEveryKnownPart) {
  Error e(codes::kSpecInvalid, "unknown step 'trian'");
  e.At({"workload.yaml", 41, 9})
      .Path("spec.pipeline.steps[2].dependsOn")
      .Hint("did you mean 'train'?");
  EXPECT_EQ(e.ToString(),
            "workload.yaml:41:9: SPEC_INVALID spec.pipeline.steps[2].dependsOn: unknown step "
            "'trian' (did you mean 'train'?)");
}

TEST(StatusTest, LeavesOutUnknownParts) {
  Error e(codes::kNotFound, "no such workload");
  EXPECT_EQ(e.ToString(), "NOT_FOUND: no such workload");
  Status s = e;
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), "NOT_FOUND");
  EXPECT_EQ(Status().code(), "OK");
}

TEST(StatusTest, SortsByPositionStably) {
  Errors errs;
  errs.push_back(Error("A", "a").At({"f", 3, 1}));
  errs.push_back(Error("B", "b").At({"f", 1, 5}));
  errs.push_back(Error("C", "c").At({"f", 1, 2}));
  errs.push_back(Error("D", "d").At({"f", 1, 2}));
  SortByPosition(&errs);
  EXPECT_EQ(errs[0].code, "C");
  EXPECT_EQ(errs[1].code, "D");
  EXPECT_EQ(errs[2].code, "B");
  EXPECT_EQ(errs[3].code, "A");
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> r = 5;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  Result<int> bad = Error(codes::kIoError, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "IO_ERROR");
}

}  // namespace rsl
