// The `when` language (SPEC.md "pipeline") and cost-policy conditions: literals (numbers,
// 'strings' or "strings", true, false, null), == != < <= > >= && || !, parentheses, len(),
// sum(), min(), max(), and dotted references (status.<step>, output.<step>.metrics.<key>,
// or bare names such as loss_plateau_duration for policies). Parsed once into an AST with
// columns; evaluation is bounded (no loops, no calls but the four built-ins) and never
// executes code.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"

namespace rsl::expr {

inline constexpr size_t kMaxExpressionBytes = 4096;
inline constexpr int kMaxDepth = 64;
//! The tallest expression tree the parser builds: a chain such as `1-1-1-...` or `a && b && ...`
//! grows the tree one level per operator without nesting, and evaluating (and freeing) a tree
//! recurses once per level.
inline constexpr int kMaxHeight = 256;

struct Value;
using List = std::vector<Value>;
struct Value {
  std::variant<std::monostate, bool, double, std::string, List> v;
  bool is_null() const { return v.index() == 0; }
  std::string ToString() const;  //!< for messages: 0.93, 'SUCCEEDED', [1, 2], null
};

//! A reference in an expression: `output.train.metrics.auc` -> {"output","train","metrics","auc"}.
struct Reference {
  std::vector<std::string> parts;
  int column = 0;  //!< 1-based column in the expression text
  std::string ToString() const;
};

//! What evaluation reads. Return nullopt for "unknown reference" (an evaluation error).
class Context {
 public:
  virtual ~Context() = default;
  virtual std::optional<Value> Lookup(const Reference& ref) const = 0;
};

//! What a reference can hold, as far as is known before evaluation (Expr::Check).
struct RefType {
  enum class Kind { kAny, kNull, kBoolean, kNumber, kString, kList };
  Kind kind = Kind::kAny;  //!< kAny: unknown until evaluated (a metric), never a type error
  //! kString with a closed set: every value it can ever have ("SUCCEEDED", "FAILED", ...); a
  //! comparison with a string literal outside it is an error. Empty: any string.
  std::vector<std::string> values;
  std::string noun = "value";  //!< what one of `values` is called in messages: "phase"
  //! The part of `values` it can hold when the expression is evaluated (empty: all of them);
  //! an == that can never hold, or a != that never differs, is an error explaining `why`.
  std::vector<std::string> possible;
  std::string why;  //!< "a step runs only after all its ancestors succeeded"
};

//! The types of references, for Expr::Check.
class TypeContext {
 public:
  virtual ~TypeContext() = default;
  virtual RefType TypeOf(const Reference& ref) const = 0;
};

struct Node;

//! A parsed expression. Cheap to copy (shares its immutable AST).
class Expr {
 public:
  //! Errors: EXPRESSION_INVALID with pos.column (1-based in `text`) and a hint.
  static Result<Expr> Parse(const std::string& text);

  const std::string& text() const { return text_; }
  //! Every reference, in source order.
  const std::vector<Reference>& references() const { return refs_; }
  //! Evaluates to a boolean (a non-boolean result is an error). Errors: EXPRESSION_INVALID.
  Result<bool> EvalBool(const Context& ctx) const;
  Result<Value> Eval(const Context& ctx) const;
  //! Type-checks without evaluating: the operand types of every operator and built-in
  //! (those EvalBool would refuse), a boolean result, and comparisons of a closed-set
  //! reference with a literal (RefType). Stricter than evaluation: a branch that
  //! short-circuiting would skip is checked too. Errors: EXPRESSION_INVALID (the first one
  //! in evaluation order) with pos.column and a hint.
  Status Check(const TypeContext& types) const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
  std::vector<Reference> refs_;
};

}  // namespace rsl::expr
