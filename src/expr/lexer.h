// Tokens of the `when` language (expr.h). Internal to the expr layer.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::expr {

enum class Tok {
  kNumber,
  kString,
  kIdent,
  kTrue,
  kFalse,
  kNull,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kNot,
  kStar,   //!< '*' (numbers)
  kSlash,  //!< '/' (numbers)
  kPlus,   //!< '+' (numbers)
  kMinus,  //!< '-' (numbers; binary, or unary before an operand)
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kComma,
  kDot,
  kEnd,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;   //!< identifier name, decoded string, or number spelling
  double number = 0;  //!< kNumber
  int column = 0;     //!< 1-based
};

//! Splits `text` into tokens ending with kEnd. Identifiers are [A-Za-z_][A-Za-z0-9_-]* (step
//! names are DNS-1123 labels): a '-' inside a name belongs to the name, so `a-b` is one name and
//! subtraction after a name needs a space (`a - b`). A '-' that starts a token is kMinus (a
//! negative number is unary minus applied to it). Errors: EXPRESSION_INVALID with pos.column.
Result<std::vector<Token>> Lex(const std::string& text);

//! "'=='", "end of expression", ...: how a token kind reads in messages.
std::string TokName(Tok kind);

//! An EXPRESSION_INVALID error at a 1-based column of the expression.
Error ExprError(int column, const std::string& message, const std::string& hint = "");

}  // namespace rsl::expr
