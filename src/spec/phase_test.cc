#include "spec/phase.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/codes.h"

namespace rsl::spec {
namespace {

// Every value names itself uniquely and parses back to itself.
template <typename E, typename ParseFn>
void ExpectRoundTrip(E last, ParseFn parse) {
  std::set<std::string> seen;
  for (int i = 0; i <= int(last); ++i) {
    E e = static_cast<E>(i);
    std::string name = Name(e);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
    auto back = parse(name);
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(*back, e) << name;
  }
}

TEST(PhaseTest, EveryValueRoundTrips) {
  ExpectRoundTrip(RunPhase::kRejected, ParseRunPhase);
  ExpectRoundTrip(StepPhase::kCancelled, ParseStepPhase);
  ExpectRoundTrip(AttemptPhase::kExited, ParseAttemptPhase);
  ExpectRoundTrip(EventReason::kRolledBack, ParseEventReason);
  ExpectRoundTrip(EventReason::kReplicaRestarted, ParseEventReason);
  ExpectRoundTrip(EventReason::kSuperseded, ParseEventReason);
  ExpectRoundTrip(NodeState::kDown, ParseNodeState);
}

TEST(PhaseTest, NamesAreTheStoredStrings) {
  // The on-disk and API strings: changing one breaks existing state directories.
  EXPECT_STREQ(Name(RunPhase::kPending), "PENDING");
  EXPECT_STREQ(Name(RunPhase::kTimedOut), "TIMED_OUT");
  EXPECT_STREQ(Name(RunPhase::kRejected), "REJECTED");
  EXPECT_STREQ(Name(StepPhase::kRetrying), "RETRYING");
  EXPECT_STREQ(Name(StepPhase::kSkipped), "SKIPPED");
  EXPECT_STREQ(Name(AttemptPhase::kLaunching), "launching");
  EXPECT_STREQ(Name(AttemptPhase::kExited), "exited");
  EXPECT_STREQ(Name(EventReason::kOomKilled), "OOMKilled");
  EXPECT_STREQ(Name(EventReason::kCancelled), "Cancelled");
  EXPECT_STREQ(Name(NodeState::kReady), "Ready");
  EXPECT_STREQ(Name(NodeState::kNotReady), "NotReady");
}

TEST(PhaseTest, UnknownNamesAreErrors) {
  auto run = ParseRunPhase("RETRYING");  // a step phase, not a run phase
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, codes::kInvalidArgument);
  EXPECT_EQ(run.error().message, "unknown run phase 'RETRYING'");
  EXPECT_EQ(run.error().value, "RETRYING");
  EXPECT_EQ(run.error().hint,
            "one of PENDING, RUNNING, SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, REJECTED");
  EXPECT_FALSE(ParseStepPhase("succeeded").ok());  // names are case-sensitive
  EXPECT_FALSE(ParseStepPhase("").ok());
  EXPECT_FALSE(ParseAttemptPhase("running").ok());
  EXPECT_EQ(ParseEventReason("Exploded").error().message, "unknown event reason 'Exploded'");
  EXPECT_EQ(ParseNodeState("Sleeping").error().code, codes::kInvalidArgument);
}

TEST(PhaseTest, Terminal) {
  EXPECT_FALSE(IsTerminal(RunPhase::kPending));
  EXPECT_FALSE(IsTerminal(RunPhase::kRunning));
  EXPECT_TRUE(IsTerminal(RunPhase::kRejected));
  EXPECT_TRUE(IsTerminal(RunPhase::kCancelled));
  EXPECT_FALSE(IsTerminal(StepPhase::kRetrying));
  EXPECT_TRUE(IsTerminal(StepPhase::kSkipped));
  EXPECT_TRUE(IsTerminal(StepPhase::kTimedOut));
}

}  // namespace
}  // namespace rsl::spec
