// Text templates over the `when` language: "acc {{ output.validate.metrics.acc }}" is literal
// text with expressions between {{ and }}, each evaluated and rendered as JSON-safe text
// (postProcess webhook bodies: a string's content JSON-escaped without its quotes, so that
// `"{{ x }}"` stays one valid JSON string; numbers, booleans, null and lists as JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "expr/expr.h"

namespace rsl::expr {

//! Templates above this size are refused (a webhook body is a small JSON document).
inline constexpr size_t kMaxTemplateBytes = 64 * 1024;

class Template {
 public:
  //! Errors: EXPRESSION_INVALID with pos.column (1-based byte offset in `text`) for an
  //! unterminated {{, an empty {{ }}, or an expression that does not parse.
  static Result<Template> Parse(const std::string& text);

  struct Part {
    std::string literal;       //!< text before the expression
    std::optional<Expr> expr;  //!< none for the trailing literal
    int column = 0;            //!< 1-based column of the expression's first byte in the text
  };
  const std::vector<Part>& parts() const { return parts_; }
  //! Renders every expression with `ctx`. A reference that `ctx` does not know is an error
  //! (EXPRESSION_INVALID).
  Result<std::string> Render(const Context& ctx) const;

 private:
  std::vector<Part> parts_;
};

//! The JSON-safe text of a value: strings JSON-escaped without quotes, the rest as JSON.
std::string JsonSafeText(const Value& v);

}  // namespace rsl::expr
