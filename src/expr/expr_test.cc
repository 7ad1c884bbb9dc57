#include "expr/expr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "expr/test_util.h"

namespace rsl::expr {
namespace {

Value Num(double d) { return Value{d}; }
Value Str(std::string s) { return Value{std::move(s)}; }

bool EvalOk(const std::string& text, const MapContext& ctx) {
  auto e = Expr::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().ToString();
  auto r = e->EvalBool(ctx);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().ToString();
  return r.ok() && *r;
}

Error ParseError(const std::string& text) {
  auto e = Expr::Parse(text);
  EXPECT_FALSE(e.ok()) << text;
  return e.ok() ? Error() : e.error();
}

Error EvalError(const std::string& text, const MapContext& ctx) {
  auto e = Expr::Parse(text);
  EXPECT_TRUE(e.ok()) << text;
  if (!e.ok()) return e.error();
  auto r = e->EvalBool(ctx);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? Error() : r.error();
}

TEST(ExprTest, ReferencesInSourceOrderWithColumns) {
  auto e = Expr::Parse("status.train == 'SUCCEEDED' && output.prep-1.metrics.f1 > 0.85");
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  ASSERT_EQ(e->references().size(), 2u);
  EXPECT_EQ(e->references()[0].ToString(), "status.train");
  EXPECT_EQ(e->references()[0].column, 1);
  EXPECT_EQ(e->references()[1].ToString(), "output.prep-1.metrics.f1");
  EXPECT_EQ(e->references()[1].column, 32);
}

TEST(ExprTest, EvaluatesComparisonsAndLogic) {
  MapContext ctx;
  ctx.values["status.train"] = Str("SUCCEEDED");
  ctx.values["output.train.metrics.auc"] = Num(0.93);
  ctx.values["output.train.metrics.losses"] = Value{List{Num(3), Num(1), Num(2)}};
  EXPECT_TRUE(EvalOk("status.train == 'SUCCEEDED'", ctx));
  EXPECT_FALSE(EvalOk("status.train != \"SUCCEEDED\"", ctx));
  EXPECT_TRUE(EvalOk("output.train.metrics.auc > 0.92", ctx));
  EXPECT_FALSE(EvalOk("output.train.metrics.auc > 0.93", ctx));
  EXPECT_TRUE(EvalOk("output.train.metrics.auc >= 0.93", ctx));
  EXPECT_TRUE(EvalOk("!(output.train.metrics.auc < 0.5) && true", ctx));
  EXPECT_TRUE(EvalOk("false || 1 <= 1", ctx));
  EXPECT_TRUE(EvalOk("len(output.train.metrics.losses) == 3", ctx));
  EXPECT_TRUE(EvalOk("sum(output.train.metrics.losses) == 6", ctx));
  EXPECT_TRUE(EvalOk("min(output.train.metrics.losses) == 1 && max(4, 9, -2) == 9", ctx));
  EXPECT_TRUE(EvalOk("len('abc') == 3 && [1, 2] == [1, 2] && null == null", ctx));
  EXPECT_TRUE(EvalOk("'abc' < 'abd' && -1.5e1 < -14", ctx));
  EXPECT_FALSE(EvalOk("status.train == null", ctx));
}

TEST(ExprTest, PlusAndMinusBindAsInCommonLanguages) {
  MapContext ctx;
  ctx.values["output.validate.metrics.acc"] = Num(0.90);
  ctx.values["previous.output.validate.metrics.acc"] = Num(0.96);
  ctx.values["output.train-2.metrics.loss"] = Num(0.25);
  auto value = [&ctx](const std::string& text) {
    auto e = Expr::Parse(text);
    EXPECT_TRUE(e.ok()) << text << ": " << e.error().ToString();
    if (!e.ok()) return std::nan("");
    auto v = e->Eval(ctx);
    EXPECT_TRUE(v.ok() && v->v.index() == 2) << text;
    return v.ok() && v->v.index() == 2 ? std::get<double>(v->v) : std::nan("");
  };
  EXPECT_EQ(value("1 + 2 * 3"), 7);    // * before +
  EXPECT_EQ(value("(1 + 2) * 3"), 9);  // parentheses first
  EXPECT_EQ(value("10 - 4 - 3"), 3);   // left to right: (10 - 4) - 3
  EXPECT_EQ(value("8 / 4 / 2"), 1);
  EXPECT_EQ(value("2 - 3 * 4 + 1"), -9);
  EXPECT_EQ(value("-2 * 3"), -6);
  EXPECT_EQ(value("- 2 - -3"), 1);
  EXPECT_EQ(value("--4"), 4);
  EXPECT_EQ(value("1-2"), -1);                              // a number ends where '-' begins
  EXPECT_EQ(value("-output.train-2.metrics.loss"), -0.25);  // '-' inside a name is the name's
  EXPECT_EQ(value("output.train-2.metrics.loss - 1"), -0.75);
  EXPECT_EQ(value("1e-2 + 1E+1"), 10.01);
  // The alert: accuracy dropped by more than 5 points.
  EXPECT_TRUE(
      EvalOk("previous.output.validate.metrics.acc - output.validate.metrics.acc > 0.05", ctx));
  EXPECT_FALSE(
      EvalOk("output.validate.metrics.acc - previous.output.validate.metrics.acc > -0.05", ctx));
  EXPECT_TRUE(EvalOk("!(1 - 1 > 0) && -1 < 0 && -(1 + 1) == -2", ctx));
  auto neg = Expr::Parse("-x > 0 || -5 < y");
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(neg->references()[0].column, 2);
  EXPECT_EQ(neg->references()[1].column, 16);
}

TEST(ExprTest, PlusAndMinusNeedNumbers) {
  MapContext ctx;
  ctx.values["status.train"] = Str("SUCCEEDED");
  EXPECT_EQ(EvalError("status.train + 1 > 0", ctx).ToString(),
            "EXPRESSION_INVALID: + needs two numbers, got string 'SUCCEEDED' and number 1 at "
            "column 14 (arithmetic is on numbers, e.g. 'x < y * 0.95' or 'x - y > 0.05')");
  EXPECT_EQ(EvalError("1 > -status.train", ctx).ToString(),
            "EXPRESSION_INVALID: - needs a number, got string 'SUCCEEDED' at column 5 (negate "
            "numbers, e.g. '-output.train.metrics.loss > -0.5')");
  EXPECT_EQ(EvalError("true - 1 < 0", ctx).ToString(),
            "EXPRESSION_INVALID: - needs two numbers, got boolean true and number 1 at column 6 "
            "(arithmetic is on numbers, e.g. 'x < y * 0.95' or 'x - y > 0.05')");
  std::string minuses(2000, '-');
  EXPECT_NE(ParseError(minuses + "1 > 0").message.find("nested too deeply"), std::string::npos);
}

TEST(ExprTest, ShortCircuitSkipsTheRightSide) {
  MapContext ctx;
  // The right side refers to an unknown reference; short-circuit never evaluates it.
  EXPECT_FALSE(EvalOk("false && output.x.metrics.y > 1", ctx));
  EXPECT_TRUE(EvalOk("true || output.x.metrics.y > 1", ctx));
}

TEST(ExprTest, ParseErrorsCarryColumns) {
  struct Case {
    std::string text;
    int column;
    std::string message_part;
  };
  const Case cases[] = {
      {"status.train = 'SUCCEEDED'", 14, "unexpected '='"},
      {"status.train == 'SUCCEEDED", 17, "unterminated string"},
      {"a > 1 &", 7, "unexpected '&'"},
      {"a > 1 | b", 7, "unexpected '|'"},
      {"(a > 1", 7, "expected ')'"},
      {"a > ", 5, "expected a value"},
      {"a > 1 b", 7, "after the expression"},
      {"lenn(x) > 1", 1, "unknown function \"lenn\""},
      {"a < b < c", 7, "cannot be chained"},
      {"a.", 3, "expected a name after '.'"},
      {"a > 1 # comment", 7, "unexpected character"},
      {"len(a, b) > 1", 1, "exactly one argument"},
      {"max() > 1", 1, "needs an argument"},
      {"", 1, "empty expression"},
      {"a > 1 +", 8, "expected a value, got end of expression"},
      {"+1 > 0", 1, "expected a value, got '+'"},
      {"a > 1 - * 2", 9, "expected a value, got '*'"},
  };
  for (const auto& c : cases) {
    Error e = ParseError(c.text);
    EXPECT_EQ(e.code, "EXPRESSION_INVALID") << c.text;
    EXPECT_EQ(e.pos.column, c.column) << c.text << ": " << e.message;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.text << ": " << e.message;
  }
  EXPECT_EQ(ParseError("lenn(x) > 1").hint, "did you mean 'len'?");
}

TEST(ExprTest, EvaluationErrorsAreClear) {
  MapContext ctx;
  ctx.values["output.t.metrics.auc"] = Num(0.5);
  ctx.values["output.t.metrics.empty"] = Value{List{}};
  Error unknown = EvalError("output.t.metrics.f1 > 0.8", ctx);
  EXPECT_EQ(unknown.message, "unknown reference output.t.metrics.f1 at column 1");
  Error mixed = EvalError("output.t.metrics.auc == '0.5'", ctx);
  EXPECT_EQ(mixed.message, "cannot compare number 0.5 with string '0.5' at column 22");
  Error not_bool = EvalError("output.t.metrics.auc", ctx);
  EXPECT_NE(not_bool.message.find("not a boolean"), std::string::npos);
  Error and_num = EvalError("output.t.metrics.auc && true", ctx);
  EXPECT_NE(and_num.message.find("&& needs a boolean"), std::string::npos);
  Error empty_min = EvalError("min(output.t.metrics.empty) > 0", ctx);
  EXPECT_NE(empty_min.message.find("empty list"), std::string::npos);
  Error order = EvalError("true < 1", ctx);
  EXPECT_NE(order.message.find("cannot order"), std::string::npos);
}

TEST(ExprTest, InputIsBounded) {
  std::string too_long(kMaxExpressionBytes + 1, ' ');
  EXPECT_EQ(ParseError(too_long).code, "EXPRESSION_INVALID");
  std::string deep(1000, '(');
  Error e = ParseError(deep + "1" + std::string(1000, ')'));
  EXPECT_NE(e.message.find("nested too deeply"), std::string::npos);
  std::string nots(2000, '!');
  EXPECT_NE(ParseError(nots + "true").message.find("nested too deeply"), std::string::npos);
  // Within the limits, nesting works.
  MapContext ctx;
  EXPECT_TRUE(EvalOk(std::string(20, '(') + "1 == 1" + std::string(20, ')'), ctx));
}

// A chain of operators grows the tree one level per operator without any nesting: the
// when fuzzer found `m-m*n/m/C*n/...` (1,908 bytes) overflowing the evaluator's stack. Every
// kind of chain is refused past kMaxHeight levels, at the operator where it got too tall.
TEST(ExprTest, LongChainsOfOperatorsAreBoundedToo) {
  MapContext ctx;
  for (const std::string op : {"-", "+", "*", "/", "&&", "||"}) {
    std::string chain = "1";
    for (int i = 0; i < 1000; ++i) chain += op + "1";  // within kMaxExpressionBytes
    Error e = ParseError(chain + (op == "&&" || op == "||" ? "" : " > 0"));
    EXPECT_EQ(e.code, "EXPRESSION_INVALID") << op;
    EXPECT_NE(e.message.find("expression too long: more than 256 levels of operators"),
              std::string::npos)
        << op << e.message;
    EXPECT_GT(e.pos.column, 1);
  }
  // Chains inside parentheses add up (40 levels of nesting, within kMaxDepth, of 10 each).
  std::string mixed = "1";
  for (int i = 0; i < 40; ++i) mixed = "(" + mixed + "-1-1-1-1-1-1-1-1-1-1)";
  EXPECT_NE(ParseError(mixed + " > 0").message.find("expression too long"), std::string::npos);
  // 200 terms are fine.
  std::string sum = "0";
  for (int i = 0; i < 200; ++i) sum += " + 1";
  EXPECT_TRUE(EvalOk(sum + " == 200", ctx));
}

TEST(ExprTest, ValueToString) {
  EXPECT_EQ(Num(0.93).ToString(), "0.93");
  EXPECT_EQ(Str("SUCCEEDED").ToString(), "'SUCCEEDED'");
  EXPECT_EQ((Value{List{Num(1), Num(2)}}).ToString(), "[1, 2]");
  EXPECT_EQ(Value{}.ToString(), "null");
}

// Types as validation gives them: status.<step> a phase that is always SUCCEEDED when read,
// metrics unknown until the run.
class PhaseTypes : public TypeContext {
 public:
  RefType TypeOf(const Reference& ref) const override {
    if (ref.parts[0] != "status") return RefType{};
    RefType t;
    t.kind = RefType::Kind::kString;
    t.values = {"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "SKIPPED"};
    t.noun = "phase";
    t.possible = {"SUCCEEDED"};
    t.why = "a step runs only after all its ancestors succeeded";
    return t;
  }
};

TEST(ExprTest, CheckFindsBeforeEvaluationWhatEvaluationWouldRefuse) {
  struct Case {
    std::string text;
    std::string error;  // "" = passes
  };
  const std::vector<Case> cases = {
      {"status.a == 'SUCCEEDED'", ""},
      {"status.a != 'FAILED' && output.a.metrics.x > 1", ""},
      {"output.a.metrics.auc", ""},  // a metric may be a boolean
      {"min(output.a.metrics.l) < max(1, 2, output.a.metrics.x) || len([]) == 0", ""},
      {"status.a == null", ""},
      {"status.a > 1",
       "EXPRESSION_INVALID: cannot order string status.a and number 1 at column 10 (< <= > >= "
       "compare two numbers or two strings)"},
      {"len(5) == 1",
       "EXPRESSION_INVALID: len() needs a list or a string, got number 5 at column 1 (len(list) or "
       "len(string))"},
      {"min(1, 'a') == 1",
       "EXPRESSION_INVALID: min() needs numbers, got string 'a' at column 1 (min(list) or min(a, "
       "b, ...) of numbers)"},
      {"sum([1, true]) > 0",
       "EXPRESSION_INVALID: sum() needs numbers, got boolean true at column 1 (sum(list) or sum(a, "
       "b, ...) of numbers)"},
      {"max([]) > 0",
       "EXPRESSION_INVALID: max() of an empty list at column 1 (check len(x) > 0 first)"},
      {"5",
       "EXPRESSION_INVALID: condition is number 5, not a boolean at column 1 (compare it, e.g. "
       "'output.train.metrics.auc > 0.9')"},
      {"len(status.a)",
       "EXPRESSION_INVALID: condition is number len(...), not a boolean at column 1 (compare it, "
       "e.g. 'output.train.metrics.auc > 0.9')"},
      {"output.a.metrics.x - 1 > -output.a.metrics.y + 2 * 3", ""},
      {"status.a - 1 > 0",
       "EXPRESSION_INVALID: - needs numbers, got string status.a at column 10 (arithmetic is on "
       "numbers, e.g. 'x < y * 0.95' or 'x - y > 0.05')"},
      {"-status.a > 0",
       "EXPRESSION_INVALID: - needs a number, got string status.a at column 1 (negate numbers, "
       "e.g. '-output.train.metrics.loss > -0.5')"},
      {"1 + 2",
       "EXPRESSION_INVALID: condition is number result, not a boolean at column 1 (compare it, "
       "e.g. 'output.train.metrics.auc > 0.9')"},
      {"-1 == 'a'",
       "EXPRESSION_INVALID: cannot compare number -1 with string 'a' at column 4 (compare values "
       "of the same type)"},
      {"status.a == 1",
       "EXPRESSION_INVALID: cannot compare string status.a with number 1 at column 10 (compare "
       "values of the same type)"},
      {"!status.a",
       "EXPRESSION_INVALID: ! needs a boolean, got string status.a at column 2 (compare the value, "
       "e.g. 'x > 0.5')"},
      {"true || 1 > 'x'",
       "EXPRESSION_INVALID: cannot order number 1 and string 'x' at column 11 (< <= > >= compare "
       "two numbers or two strings)"},
      {"status.a == 'SUCEEDED'",
       "EXPRESSION_INVALID: unknown phase 'SUCEEDED' for status.a at column 13 (did you mean "
       "'SUCCEEDED'?)"},
      {"'BOGUS' != status.a",
       "EXPRESSION_INVALID: unknown phase 'BOGUS' for status.a at column 1 (phases: PENDING, "
       "RUNNING, SUCCEEDED, FAILED, SKIPPED)"},
      {"status.a == 'FAILED'",
       "EXPRESSION_INVALID: status.a == 'FAILED' can never be true: a step runs only after all its "
       "ancestors succeeded at column 10 (status.a is always 'SUCCEEDED' when this condition is "
       "evaluated; drop the comparison)"},
      {"'SUCCEEDED' != status.a",
       "EXPRESSION_INVALID: status.a != 'SUCCEEDED' can never be true: a step runs only after all "
       "its ancestors succeeded at column 13 (status.a is always 'SUCCEEDED' when this condition "
       "is evaluated; drop the comparison)"},
  };
  for (const auto& c : cases) {
    auto e = Expr::Parse(c.text);
    ASSERT_TRUE(e.ok()) << c.text << ": " << e.error().ToString();
    Status s = e->Check(PhaseTypes());
    EXPECT_EQ(s.ok() ? "" : s.ToString(), c.error) << c.text;
  }
}

}  // namespace
}  // namespace rsl::expr
