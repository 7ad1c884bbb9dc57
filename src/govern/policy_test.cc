#include "govern/policy.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"
#include "govern/test_util.h"
#include "govern/webhook.h"

namespace rsl::govern {
namespace {

using nlohmann::json;

TEST(PolicyParse, SeedPolicy) {
  auto text = ReadFile(kTestdata + "cost-policy.yaml");
  ASSERT_TRUE(text.ok());
  PolicyParse p = ParsePolicy(*text, "cost-policy.yaml");
  ASSERT_TRUE(p.ok()) << p.errors[0].ToString();
  EXPECT_EQ(p.policy.name, "cost-policy");
  ASSERT_EQ(p.policy.rules.size(), 2u);
  const PolicyRule& r = p.policy.rules[0];
  EXPECT_EQ(r.name, "high-cost-fallback");
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].kind, PolicyAction::Kind::kScaleDown);
  EXPECT_EQ(r.actions[0].replicas, 1);
  EXPECT_EQ(r.actions[1].kind, PolicyAction::Kind::kNotify);
  EXPECT_EQ(r.actions[1].webhook, "finance_team");
  EXPECT_EQ(p.policy.rules[1].actions[0].kind, PolicyAction::Kind::kStop);
  EXPECT_TRUE(p.policy.rules[1].actions[0].as_success);
  EXPECT_EQ(p.policy.webhooks["finance_team"].retries, 2);
  EXPECT_DOUBLE_EQ(p.policy.gpu_util_window_s, 300);
}

TEST(PolicyParse, ErrorsWithPlaceAndHint) {
  struct Case {
    const char* yaml;
    const char* want;
  };
  const Case cases[] = {
      {"rules:\n- name: a\n  condition: \"loss_plateau_duraton > 5\"\n  action: stop\n",
       "p.yaml:3:15: EXPRESSION_INVALID rules[0].condition: unknown metric "
       "\"loss_plateau_duraton\" (did you mean \"loss_plateau_duration\"?)"},
      {"rules:\n- name: a\n  condition: \"gpu_util_avg <\"\n  action: stop\n",
       "p.yaml:3:29: EXPRESSION_INVALID rules[0].condition:"},
      {"rules:\n- name: a\n  condition: \"loss > 1\"\n  action: notify_finanse_team\n"
       "notify: {finance_team: \"http://x\"}\n",
       "p.yaml:4:11: SPEC_INVALID rules[0].action: action \"notify_finanse_team\" names no "
       "webhook in `notify` (did you mean notify_finance_team?)"},
      {"rules:\n- name: a\n  condition: \"loss > 1\"\n  action: stp\n",
       "p.yaml:4:11: SPEC_INVALID rules[0].action: unknown action \"stp\" (did you mean "
       "\"stop\"?)"},
      {"rules: []\n", "p.yaml:1:8: SPEC_INVALID rules: a policy needs at least one rule"},
      {"rule:\n- name: a\n",
       "p.yaml:1:1: SPEC_INVALID rule: unknown field \"rule\" (did you mean \"rules\"?)"},
      {"rules:\n- name: a\n  action: stop\n",
       "p.yaml:2:3: SPEC_INVALID rules[0].condition: missing condition"},
      {"rules:\n- {name: {a: 1}, condition: \"loss > 1\", action: stop}\n",
       "p.yaml:2:10: SPEC_INVALID: unexpected value: bad conversion"},
      {"rules:\n- {name: a, condition: \"loss > 1\", action: notify_x}\nnotify: {x: ftp://h}\n",
       "p.yaml:3:13: SPEC_INVALID notify.x.url: webhook url must be http:// or https://"},
  };
  for (const auto& c : cases) {
    PolicyParse p = ParsePolicy(c.yaml, "p.yaml");
    ASSERT_FALSE(p.ok()) << c.yaml;
    EXPECT_TRUE(StartsWith(p.errors[0].ToString(), c.want)) << p.errors[0].ToString();
  }
}

TEST(MetricsWindow, PlateauAndAverage) {
  MetricsWindow w(0.01, 10);
  w.Feed(R"({"loss": 1.0, "gpu_util": 0.5, "ts": 100})", 0);
  w.Feed(R"({"loss": 0.9, "gpu_util": 50, "ts": 101})", 0);     // percent -> 0.5
  w.Feed(R"({"loss": 0.895, "gpu_util": 0.2, "ts": 105})", 0);  // within tolerance
  w.Feed("not json", 0);
  w.Feed(R"({"loss": 0.899, "gpu_util": 0.2, "ts": 112})", 0);
  auto s = w.Snapshot(113);
  EXPECT_DOUBLE_EQ(s["loss_plateau_duration"], 12);  // since ts 101
  EXPECT_DOUBLE_EQ(s["best_loss"], 0.9);
  EXPECT_DOUBLE_EQ(s["loss"], 0.899);
  EXPECT_DOUBLE_EQ(s["gpu_util_avg"], 0.2);  // window 10 s: ts 105 and 112
  EXPECT_DOUBLE_EQ(s["step_elapsed"], 13);
  EXPECT_EQ(w.malformed_lines(), 1);
  PolicyParse p = ParsePolicy(
      "rules:\n- {name: r, condition: \"loss_plateau_duration > 10 && gpu_util_avg < 0.3 && "
      "metrics.gpu_util < 1\", action: stop}\n",
      "p.yaml");
  ASSERT_TRUE(p.ok()) << p.errors[0].ToString();
  EXPECT_TRUE(ConditionHolds(p.policy.rules[0], s, w.latest(), nullptr));
  EXPECT_FALSE(ConditionHolds(p.policy.rules[0], w.Snapshot(110), w.latest(), nullptr));
  MetricsWindow empty(0.01, 10);
  std::string why;
  EXPECT_FALSE(ConditionHolds(p.policy.rules[0], empty.Snapshot(1), empty.latest(), &why));
}

TEST(Webhook, GivesUpAfterRetriesWithoutLeakingCredentials) {
  WebhookResult r;
  // Port 9 (discard) on loopback: nothing listens in the test environment.
  Status st = PostJson("http://user:secret@127.0.0.1:9/x", "{}", 1, &r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(st.error().message.find("secret"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("http://***@127.0.0.1:9/x"), std::string::npos);
}

}  // namespace
}  // namespace rsl::govern
