#include "expr/template.h"

#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "expr/test_util.h"

namespace rsl::expr {
namespace {

TEST(TemplateTest, RendersExpressionsAsJsonSafeText) {
  auto t = Template::Parse(
      R"({"acc": "{{ output.v.metrics.acc }}", "n": {{ n }}, "run": "{{run.id}}", "ok": {{ n > 1 }}})");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  MapContext ctx;
  ctx.values["output.v.metrics.acc"] = Value{0.93};
  ctx.values["n"] = Value{2.0};
  ctx.values["run.id"] = Value{std::string("run-1 \"quoted\"\n")};
  auto out = t->Render(ctx);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(*out, R"({"acc": "0.93", "n": 2, "run": "run-1 \"quoted\"\n", "ok": true})");
  // A string that tries to break out of its JSON string stays inside it.
  auto j = nlohmann::json::parse(*out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["run"], "run-1 \"quoted\"\n");
}

TEST(TemplateTest, JsonSafeTextOfEveryKind) {
  EXPECT_EQ(JsonSafeText(Value{}), "null");
  EXPECT_EQ(JsonSafeText(Value{true}), "true");
  EXPECT_EQ(JsonSafeText(Value{1.5}), "1.5");
  EXPECT_EQ(JsonSafeText(Value{std::string("a\\b\x01")}), "a\\\\b\\u0001");
  EXPECT_EQ(JsonSafeText(Value{List{Value{1.0}, Value{std::string("x")}}}), "[1,\"x\"]");
  EXPECT_EQ(JsonSafeText(Value{std::nan("")}), "null");
}

TEST(TemplateTest, TextWithoutExpressionsIsItself) {
  auto t = Template::Parse("plain {text}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->Render(MapContext()), "plain {text}");
}

TEST(TemplateTest, ErrorsPointAtTheColumn) {
  auto unclosed = Template::Parse("ab {{ run.id ");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_EQ(unclosed.error().code, "EXPRESSION_INVALID");
  EXPECT_EQ(unclosed.error().message, "'{{' is not closed by '}}'");
  EXPECT_EQ(unclosed.error().pos.column, 4);
  auto empty = Template::Parse("{{  }}");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "'{{ }}' holds no expression");
  auto bad = Template::Parse("x {{ a > }}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "EXPRESSION_INVALID");
  EXPECT_GE(bad.error().pos.column, 5);
}

TEST(TemplateTest, UnknownReferenceIsAnError) {
  auto t = Template::Parse("{{ nope.x }}");
  ASSERT_TRUE(t.ok());
  auto out = t->Render(MapContext());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, "EXPRESSION_INVALID");
}

TEST(ArithmeticTest, MultiplyAndDivideNumbersBeforeComparing) {
  MapContext ctx;
  ctx.values["output.v.metrics.acc"] = Value{0.80};
  ctx.values["previous.output.v.metrics.acc"] = Value{0.90};
  ctx.values["status.v"] = Value{std::string("SUCCEEDED")};
  auto drop = Expr::Parse("output.v.metrics.acc < previous.output.v.metrics.acc * 0.95");
  ASSERT_TRUE(drop.ok()) << drop.error().ToString();
  EXPECT_TRUE(*drop->EvalBool(ctx));
  ctx.values["output.v.metrics.acc"] = Value{0.86};
  EXPECT_FALSE(*drop->EvalBool(ctx));
  auto ratio = Expr::Parse("output.v.metrics.acc / previous.output.v.metrics.acc * 100 > 95");
  ASSERT_TRUE(ratio.ok());
  EXPECT_TRUE(*ratio->EvalBool(ctx));  // 0.86 / 0.9 * 100 = 95.6
  auto bad = Expr::Parse("status.v * 2 > 1");
  ASSERT_TRUE(bad.ok());
  auto err = bad->EvalBool(ctx);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message,
            "* needs two numbers, got string 'SUCCEEDED' and number 2 at column 10");
}

}  // namespace
}  // namespace rsl::expr
