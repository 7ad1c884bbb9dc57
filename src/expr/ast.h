// The parsed form of an expression (expr.h), shared by the evaluator (expr.cc) and the static
// checker (check.cc). Internal to the expr layer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "expr/expr.h"
#include "expr/lexer.h"

namespace rsl::expr {

//! kNeg: unary minus of a number (kids[0]).
enum class NodeKind { kLiteral, kRef, kNot, kNeg, kBinary, kCall, kList };

struct Node {
  NodeKind kind = NodeKind::kLiteral;
  int column = 0;        //!< 1-based; an operator's own column for kBinary
  Value literal;         //!< kLiteral
  size_t ref_index = 0;  //!< kRef: index into Expr::references()
  Tok op = Tok::kEnd;    //!< kBinary
  std::string fn;        //!< kCall: len, sum, min or max
  std::vector<std::unique_ptr<Node>> kids;
  int height = 1;  //!< levels from here down (the parser keeps it <= kMaxHeight)
};

//! "null", "boolean", "number", "string" or "list": how a value's type reads in messages.
const char* TypeName(const Value& v);

//! == != < <= > >=
bool IsComparison(Tok t);

//! + - * / (between numbers)
bool IsArithmetic(Tok t);

//! "+", "-", "*" or "/" for an arithmetic operator.
const char* ArithmeticName(Tok t);

}  // namespace rsl::expr
