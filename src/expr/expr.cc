#include "expr/expr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/codes.h"
#include "base/strings.h"
#include "expr/ast.h"
#include "expr/lexer.h"

namespace rsl::expr {

// ---- values ---------------------------------------------------------------------------------

namespace {

std::string FormatNumber(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", d);
  return buf;
}

}  // namespace

const char* TypeName(const Value& v) {
  switch (v.v.index()) {
    case 0:
      return "null";
    case 1:
      return "boolean";
    case 2:
      return "number";
    case 3:
      return "string";
    default:
      return "list";
  }
}

std::string Value::ToString() const {
  switch (v.index()) {
    case 0:
      return "null";
    case 1:
      return std::get<bool>(v) ? "true" : "false";
    case 2:
      return FormatNumber(std::get<double>(v));
    case 3:
      return "'" + std::get<std::string>(v) + "'";
    default: {
      std::string s = "[";
      const auto& list = std::get<List>(v);
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) s += ", ";
        if (i == 8) {  // keep messages one line even for long metric lists
          s += "... (" + std::to_string(list.size()) + " items)";
          break;
        }
        s += list[i].ToString();
      }
      return s + "]";
    }
  }
}

std::string Reference::ToString() const { return Join(parts, "."); }

// ---- AST ------------------------------------------------------------------------------------

namespace {

const char* const kBuiltins[] = {"len", "sum", "min", "max"};

}  // namespace

bool IsComparison(Tok t) {
  return t == Tok::kEq || t == Tok::kNe || t == Tok::kLt || t == Tok::kLe || t == Tok::kGt ||
         t == Tok::kGe;
}

bool IsArithmetic(Tok t) {
  return t == Tok::kPlus || t == Tok::kMinus || t == Tok::kStar || t == Tok::kSlash;
}

const char* ArithmeticName(Tok t) {
  switch (t) {
    case Tok::kPlus:
      return "+";
    case Tok::kMinus:
      return "-";
    case Tok::kStar:
      return "*";
    default:
      return "/";
  }
}

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, std::vector<Reference>* refs)
      : toks_(std::move(toks)), refs_(refs) {}

  Result<std::unique_ptr<Node>> ParseAll() {
    auto root = Or(0);
    if (!root.ok()) return root;
    if (Peek().kind != Tok::kEnd) {
      return ExprError(Peek().column, "unexpected " + Describe(Peek()) + " after the expression",
                       "join conditions with && or ||");
    }
    return root;
  }

 private:
  const Token& Peek() const { return toks_[pos_]; }
  const Token& Next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  static std::string Describe(const Token& t) {
    if (t.kind == Tok::kIdent) return "name " + Quote(t.text);
    if (t.kind == Tok::kNumber) return "number " + t.text;
    if (t.kind == Tok::kString) return "string '" + t.text + "'";
    return TokName(t.kind);
  }

  Status Deeper(int depth, int column) const {
    if (depth > kMaxDepth) {
      return ExprError(
          column,
          "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)",
          "simplify the expression");
    }
    return Status::Ok();
  }

  using NodeResult = Result<std::unique_ptr<Node>>;

  // Sets `n`'s height from its kids'; a tree taller than kMaxHeight is refused (the nesting
  // depth does not bound a long chain of operators: see kMaxHeight).
  static Status Grow(Node* n) {
    int h = 0;
    for (const auto& k : n->kids) h = std::max(h, k->height);
    n->height = h + 1;
    if (n->height > kMaxHeight) {
      return ExprError(
          n->column,
          "expression too long: more than " + std::to_string(kMaxHeight) + " levels of operators",
          "split the condition, or add many values with sum([...])");
    }
    return Status::Ok();
  }

  NodeResult Binary(int depth, Tok op, NodeResult (Parser::*sub)(int)) {
    auto left = (this->*sub)(depth);
    if (!left.ok()) return left;
    std::unique_ptr<Node> node = std::move(left).value();
    while (Peek().kind == op) {
      int column = Next().column;
      auto right = (this->*sub)(depth);
      if (!right.ok()) return right;
      auto parent = std::make_unique<Node>();
      parent->kind = NodeKind::kBinary;
      parent->op = op;
      parent->column = column;
      parent->kids.push_back(std::move(node));
      parent->kids.push_back(std::move(right).value());
      RSL_RETURN_IF_ERROR(Grow(parent.get()));
      node = std::move(parent);
    }
    return node;
  }

  NodeResult Or(int depth) {
    RSL_RETURN_IF_ERROR(Deeper(depth, Peek().column));
    return Binary(depth, Tok::kOr, &Parser::And);
  }
  NodeResult And(int depth) { return Binary(depth, Tok::kAnd, &Parser::Compare); }

  // One left-associative level of arithmetic: operands from `sub`, operators `a` or `b`.
  NodeResult Arithmetic(int depth, Tok a, Tok b, NodeResult (Parser::*sub)(int)) {
    auto left = (this->*sub)(depth);
    if (!left.ok()) return left;
    std::unique_ptr<Node> node = std::move(left).value();
    while (Peek().kind == a || Peek().kind == b) {
      Token op = Next();
      auto right = (this->*sub)(depth);
      if (!right.ok()) return right;
      auto parent = std::make_unique<Node>();
      parent->kind = NodeKind::kBinary;
      parent->op = op.kind;
      parent->column = op.column;
      parent->kids.push_back(std::move(node));
      parent->kids.push_back(std::move(right).value());
      RSL_RETURN_IF_ERROR(Grow(parent.get()));
      node = std::move(parent);
    }
    return node;
  }

  // a + b - c, then a * b / c: left to right, * and / binding tighter than + and -, both
  // tighter than comparisons (as in C, Python and JavaScript).
  NodeResult Sum(int depth) { return Arithmetic(depth, Tok::kPlus, Tok::kMinus, &Parser::Product); }
  NodeResult Product(int depth) {
    return Arithmetic(depth, Tok::kStar, Tok::kSlash, &Parser::Unary);
  }

  NodeResult Compare(int depth) {
    auto left = Sum(depth);
    if (!left.ok() || !IsComparison(Peek().kind)) return left;
    Token op = Next();
    auto right = Sum(depth);
    if (!right.ok()) return right;
    if (IsComparison(Peek().kind)) {
      return ExprError(Peek().column, "comparisons cannot be chained",
                       "write 'a < b && b < c' instead of 'a < b < c'");
    }
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::kBinary;
    node->op = op.kind;
    node->column = op.column;
    node->kids.push_back(std::move(left).value());
    node->kids.push_back(std::move(right).value());
    RSL_RETURN_IF_ERROR(Grow(node.get()));
    return node;
  }

  NodeResult Unary(int depth) {
    RSL_RETURN_IF_ERROR(Deeper(depth, Peek().column));
    if (Peek().kind == Tok::kNot) {
      int column = Next().column;
      auto operand = Unary(depth + 1);
      if (!operand.ok()) return operand;
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::kNot;
      node->column = column;
      node->kids.push_back(std::move(operand).value());
      RSL_RETURN_IF_ERROR(Grow(node.get()));
      return node;
    }
    if (Peek().kind == Tok::kMinus) {
      int column = Next().column;
      auto operand = Unary(depth + 1);
      if (!operand.ok()) return operand;
      std::unique_ptr<Node> inner = std::move(operand).value();
      // -5 stays a literal (so messages and the checker read "number -5"), placed at the '-'.
      if (inner->kind == NodeKind::kLiteral && inner->literal.v.index() == 2) {
        inner->literal.v = -std::get<double>(inner->literal.v);
        inner->column = column;
        return inner;
      }
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::kNeg;
      node->column = column;
      node->kids.push_back(std::move(inner));
      RSL_RETURN_IF_ERROR(Grow(node.get()));
      return node;
    }
    return Primary(depth);
  }

  // Comma-separated expressions up to `close`; the opening token is already consumed.
  Status Items(int depth, Tok close, Node* node) {
    if (Peek().kind == close) {
      Next();
      return Status::Ok();
    }
    while (true) {
      auto item = Or(depth + 1);
      if (!item.ok()) return item.status();
      node->kids.push_back(std::move(item).value());
      const Token& t = Next();
      if (t.kind == close) return Status::Ok();
      if (t.kind != Tok::kComma) {
        return ExprError(t.column, "expected ',' or " + TokName(close) + ", got " + Describe(t));
      }
    }
  }

  NodeResult Primary(int depth) {
    Token t = Next();
    auto node = std::make_unique<Node>();
    node->column = t.column;
    switch (t.kind) {
      case Tok::kNumber:
        node->literal.v = t.number;
        return node;
      case Tok::kString:
        node->literal.v = t.text;
        return node;
      case Tok::kTrue:
        node->literal.v = true;
        return node;
      case Tok::kFalse:
        node->literal.v = false;
        return node;
      case Tok::kNull:
        return node;
      case Tok::kLParen: {
        auto inner = Or(depth + 1);
        if (!inner.ok()) return inner;
        const Token& close = Next();
        if (close.kind != Tok::kRParen) {
          return ExprError(close.column, "expected ')', got " + Describe(close),
                           "close the parenthesis opened at column " + std::to_string(t.column));
        }
        return inner;
      }
      case Tok::kLBracket: {
        node->kind = NodeKind::kList;
        RSL_RETURN_IF_ERROR(Items(depth, Tok::kRBracket, node.get()));
        RSL_RETURN_IF_ERROR(Grow(node.get()));
        return node;
      }
      case Tok::kIdent:
        if (Peek().kind == Tok::kLParen) return Call(depth, t, std::move(node));
        return Ref(t, std::move(node));
      default:
        return ExprError(t.column, "expected a value, got " + Describe(t),
                         "a value is a literal, a reference such as status.train, or a call");
    }
  }

  NodeResult Call(int depth, const Token& name, std::unique_ptr<Node> node) {
    std::vector<std::string> builtins(std::begin(kBuiltins), std::end(kBuiltins));
    bool known = false;
    for (const auto& b : builtins) known = known || b == name.text;
    if (!known) {
      std::string close = ClosestMatch(name.text, builtins);
      return ExprError(
          name.column, "unknown function " + Quote(name.text),
          close.empty() ? "functions: len, sum, min, max" : "did you mean '" + close + "'?");
    }
    Next();  // '('
    node->kind = NodeKind::kCall;
    node->fn = name.text;
    RSL_RETURN_IF_ERROR(Items(depth, Tok::kRParen, node.get()));
    if (node->kids.empty()) {
      return ExprError(name.column, name.text + "() needs an argument",
                       name.text + "(list) or " + name.text + "(a, b, ...)");
    }
    if (node->fn == "len" && node->kids.size() != 1) {
      return ExprError(name.column, "len() takes exactly one argument", "len(list) or len(string)");
    }
    RSL_RETURN_IF_ERROR(Grow(node.get()));
    return node;
  }

  NodeResult Ref(const Token& first, std::unique_ptr<Node> node) {
    Reference ref;
    ref.column = first.column;
    ref.parts.push_back(first.text);
    while (Peek().kind == Tok::kDot) {
      Next();
      const Token& part = Next();
      if (part.kind != Tok::kIdent && part.kind != Tok::kNumber && part.kind != Tok::kTrue &&
          part.kind != Tok::kFalse && part.kind != Tok::kNull) {
        return ExprError(part.column, "expected a name after '.', got " + Describe(part));
      }
      ref.parts.push_back(part.text);
    }
    node->kind = NodeKind::kRef;
    node->ref_index = refs_->size();
    refs_->push_back(std::move(ref));
    return node;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::vector<Reference>* refs_;
};

// ---- evaluation -----------------------------------------------------------------------------

Error TypeError(const Node& node, const std::string& message, const std::string& hint = "") {
  return ExprError(node.column, message, hint);
}

class Evaluator {
 public:
  Evaluator(const Context& ctx, const std::vector<Reference>& refs) : ctx_(ctx), refs_(refs) {}

  Result<Value> Eval(const Node& node) {
    switch (node.kind) {
      case NodeKind::kLiteral:
        return node.literal;
      case NodeKind::kRef: {
        const Reference& ref = refs_[node.ref_index];
        auto v = ctx_.Lookup(ref);
        if (!v) {
          return TypeError(node, "unknown reference " + ref.ToString(),
                           "references are status.<step> and output.<step>.metrics.<key>");
        }
        return *v;
      }
      case NodeKind::kNot: {
        auto b = Bool(*node.kids[0], "!");
        if (!b.ok()) return b.error();
        return Value{!*b};
      }
      case NodeKind::kNeg: {
        auto v = Eval(*node.kids[0]);
        if (!v.ok()) return v;
        if (v->v.index() != 2) {
          return TypeError(
              node, "- needs a number, got " + std::string(TypeName(*v)) + " " + v->ToString(),
              "negate numbers, e.g. '-output.train.metrics.loss > -0.5'");
        }
        return Value{-std::get<double>(v->v)};
      }
      case NodeKind::kList: {
        List list;
        for (const auto& kid : node.kids) {
          auto v = Eval(*kid);
          if (!v.ok()) return v;
          list.push_back(std::move(v).value());
        }
        return Value{std::move(list)};
      }
      case NodeKind::kCall:
        return Call(node);
      case NodeKind::kBinary:
        return BinaryOp(node);
    }
    return TypeError(node, "internal: unknown node");
  }

 private:
  Result<bool> Bool(const Node& node, const std::string& op) {
    auto v = Eval(node);
    if (!v.ok()) return v.error();
    if (v->v.index() != 1) {
      return TypeError(node, op + " needs a boolean, got " + TypeName(*v) + " " + v->ToString(),
                       "compare the value, e.g. 'x > 0.5'");
    }
    return std::get<bool>(v->v);
  }

  Result<Value> BinaryOp(const Node& node) {
    if (node.op == Tok::kAnd || node.op == Tok::kOr) {
      const std::string op = node.op == Tok::kAnd ? "&&" : "||";
      auto left = Bool(*node.kids[0], op);
      if (!left.ok()) return left.error();
      if (node.op == Tok::kAnd && !*left) return Value{false};
      if (node.op == Tok::kOr && *left) return Value{true};
      auto right = Bool(*node.kids[1], op);
      if (!right.ok()) return right.error();
      return Value{*right};
    }
    auto left = Eval(*node.kids[0]);
    if (!left.ok()) return left;
    auto right = Eval(*node.kids[1]);
    if (!right.ok()) return right;
    const Value& a = *left;
    const Value& b = *right;
    if (IsArithmetic(node.op)) {
      if (a.v.index() != 2 || b.v.index() != 2) {
        return TypeError(node,
                         std::string(ArithmeticName(node.op)) + " needs two numbers, got " +
                             TypeName(a) + " " + a.ToString() + " and " + TypeName(b) + " " +
                             b.ToString(),
                         "arithmetic is on numbers, e.g. 'x < y * 0.95' or 'x - y > 0.05'");
      }
      double x = std::get<double>(a.v), y = std::get<double>(b.v);
      switch (node.op) {
        case Tok::kPlus:
          return Value{x + y};
        case Tok::kMinus:
          return Value{x - y};
        case Tok::kStar:
          return Value{x * y};
        default:
          return Value{x / y};  // x / 0: inf, or nan (never ordered)
      }
    }
    if (node.op == Tok::kEq || node.op == Tok::kNe) {
      bool eq;
      if (a.is_null() || b.is_null()) {
        eq = a.is_null() && b.is_null();
      } else if (a.v.index() != b.v.index()) {
        return TypeError(node,
                         std::string("cannot compare ") + TypeName(a) + " " + a.ToString() +
                             " with " + TypeName(b) + " " + b.ToString(),
                         "compare values of the same type");
      } else {
        eq = Equal(a, b);
      }
      return Value{node.op == Tok::kEq ? eq : !eq};
    }
    int cmp;
    if (a.v.index() == 2 && b.v.index() == 2) {
      double x = std::get<double>(a.v), y = std::get<double>(b.v);
      if (std::isnan(x) || std::isnan(y)) return Value{false};
      cmp = x < y ? -1 : x > y ? 1 : 0;
    } else if (a.v.index() == 3 && b.v.index() == 3) {
      int c = std::get<std::string>(a.v).compare(std::get<std::string>(b.v));
      cmp = c < 0 ? -1 : c > 0 ? 1 : 0;
    } else {
      return TypeError(node,
                       std::string("cannot order ") + TypeName(a) + " " + a.ToString() + " and " +
                           TypeName(b) + " " + b.ToString(),
                       "< <= > >= compare two numbers or two strings");
    }
    switch (node.op) {
      case Tok::kLt:
        return Value{cmp < 0};
      case Tok::kLe:
        return Value{cmp <= 0};
      case Tok::kGt:
        return Value{cmp > 0};
      default:
        return Value{cmp >= 0};
    }
  }

  static bool Equal(const Value& a, const Value& b) {
    if (a.v.index() != b.v.index()) return false;
    switch (a.v.index()) {
      case 0:
        return true;
      case 1:
        return std::get<bool>(a.v) == std::get<bool>(b.v);
      case 2:
        return std::get<double>(a.v) == std::get<double>(b.v);
      case 3:
        return std::get<std::string>(a.v) == std::get<std::string>(b.v);
      default: {
        const auto& x = std::get<List>(a.v);
        const auto& y = std::get<List>(b.v);
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
          if (!Equal(x[i], y[i])) return false;
        }
        return true;
      }
    }
  }

  Result<Value> Call(const Node& node) {
    std::vector<Value> args;
    for (const auto& kid : node.kids) {
      auto v = Eval(*kid);
      if (!v.ok()) return v;
      args.push_back(std::move(v).value());
    }
    if (node.fn == "len") {
      const Value& v = args[0];
      if (v.v.index() == 3) return Value{static_cast<double>(std::get<std::string>(v.v).size())};
      if (v.v.index() == 4) return Value{static_cast<double>(std::get<List>(v.v).size())};
      return TypeError(node, std::string("len() needs a list or a string, got ") + TypeName(v) +
                                 " " + v.ToString());
    }
    // sum/min/max: one list argument, or several numbers.
    List items = args.size() == 1 && args[0].v.index() == 4 ? std::get<List>(args[0].v) : args;
    if (items.empty() && node.fn != "sum") {
      return TypeError(node, node.fn + "() of an empty list", "check len(x) > 0 first");
    }
    double acc = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].v.index() != 2) {
        return TypeError(node, node.fn + "() needs numbers, got " + TypeName(items[i]) + " " +
                                   items[i].ToString());
      }
      double x = std::get<double>(items[i].v);
      if (node.fn == "sum")
        acc += x;
      else if (i == 0)
        acc = x;
      else if (node.fn == "min")
        acc = std::min(acc, x);
      else
        acc = std::max(acc, x);
    }
    return Value{acc};
  }

  const Context& ctx_;
  const std::vector<Reference>& refs_;
};

}  // namespace

Result<Expr> Expr::Parse(const std::string& text) {
  if (text.size() > kMaxExpressionBytes) {
    return ExprError(static_cast<int>(kMaxExpressionBytes) + 1,
                     "expression longer than " + std::to_string(kMaxExpressionBytes) + " bytes",
                     "split the condition or compute it in a step's metrics");
  }
  auto toks = Lex(text);
  if (!toks.ok()) return toks.error();
  if (toks->size() == 1) return ExprError(1, "empty expression", "write a condition or drop it");
  Expr e;
  e.text_ = text;
  Parser parser(std::move(toks).value(), &e.refs_);
  auto root = parser.ParseAll();
  if (!root.ok()) return root.error();
  e.root_ = std::shared_ptr<const Node>(std::move(root).value());
  return e;
}

Result<Value> Expr::Eval(const Context& ctx) const {
  if (!root_) return ExprError(1, "empty expression");
  Evaluator ev(ctx, refs_);
  return ev.Eval(*root_);
}

Result<bool> Expr::EvalBool(const Context& ctx) const {
  auto v = Eval(ctx);
  if (!v.ok()) return v.error();
  if (v->v.index() != 1) {
    return ExprError(
        1,
        std::string("condition is a ") + TypeName(*v) + " (" + v->ToString() + "), not a boolean",
        "compare it, e.g. 'output.train.metrics.auc > 0.9'");
  }
  return std::get<bool>(v->v);
}

}  // namespace rsl::expr
