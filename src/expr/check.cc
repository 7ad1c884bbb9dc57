// Expr::Check: the evaluator's type rules (expr.cc) applied to static types, so validation
// finds what evaluation would refuse before any step runs.
#include <algorithm>

#include "base/strings.h"
#include "expr/ast.h"
#include "expr/expr.h"

namespace rsl::expr {
namespace {

using Kind = RefType::Kind;

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNull:
      return "null";
    case Kind::kBoolean:
      return "boolean";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kList:
      return "list";
    case Kind::kAny:
      break;
  }
  return "value";
}

Kind KindOf(const Value& v) {
  static constexpr Kind kByIndex[] = {Kind::kNull, Kind::kBoolean, Kind::kNumber, Kind::kString,
                                      Kind::kList};
  return kByIndex[v.v.index()];
}

// The static type of a subexpression, and what it is for messages.
struct Typed {
  Kind kind = Kind::kAny;
  const Node* node = nullptr;
  const RefType* ref = nullptr;  // set for references
};

class Checker {
 public:
  Checker(const TypeContext& types, const std::vector<Reference>& refs) : refs_(refs) {
    for (const auto& r : refs) ref_types_.push_back(types.TypeOf(r));
  }

  Result<Typed> Infer(const Node& n) {
    Typed t{Kind::kAny, &n, nullptr};
    switch (n.kind) {
      case NodeKind::kLiteral:
        t.kind = KindOf(n.literal);
        return t;
      case NodeKind::kRef:
        t.ref = &ref_types_[n.ref_index];
        t.kind = t.ref->kind;
        return t;
      case NodeKind::kNot:
        RSL_RETURN_IF_ERROR(NeedBool(*n.kids[0], "!"));
        t.kind = Kind::kBoolean;
        return t;
      case NodeKind::kNeg: {
        auto k = Infer(*n.kids[0]);
        if (!k.ok()) return k;
        if (k->kind != Kind::kAny && k->kind != Kind::kNumber) {
          return ExprError(n.column, "- needs a number, got " + Describe(*k),
                           "negate numbers, e.g. '-output.train.metrics.loss > -0.5'");
        }
        t.kind = Kind::kNumber;
        return t;
      }
      case NodeKind::kList:
        for (const auto& kid : n.kids) {
          auto k = Infer(*kid);
          if (!k.ok()) return k;
        }
        t.kind = Kind::kList;
        return t;
      case NodeKind::kCall:
        RSL_RETURN_IF_ERROR(Call(n));
        t.kind = Kind::kNumber;
        return t;
      case NodeKind::kBinary:
        RSL_RETURN_IF_ERROR(Binary(n));
        t.kind = IsArithmetic(n.op) ? Kind::kNumber : Kind::kBoolean;
        return t;
    }
    return t;
  }

  // How a subexpression reads in a message: "number 5", "string status.train", "number len(...)".
  std::string Describe(const Typed& t) const {
    std::string kind = KindName(t.kind);
    switch (t.node->kind) {
      case NodeKind::kLiteral:
        return kind + " " + t.node->literal.ToString();
      case NodeKind::kRef:
        return kind + " " + refs_[t.node->ref_index].ToString();
      case NodeKind::kCall:
        return kind + " " + t.node->fn + "(...)";
      case NodeKind::kList:
        return "list [...]";
      default:
        return kind + " result";
    }
  }

 private:
  Status NeedBool(const Node& n, const std::string& op) {
    auto t = Infer(n);
    if (!t.ok()) return t.status();
    if (t->kind != Kind::kAny && t->kind != Kind::kBoolean) {
      return ExprError(n.column, op + " needs a boolean, got " + Describe(*t),
                       "compare the value, e.g. 'x > 0.5'");
    }
    return Status::Ok();
  }

  Status Binary(const Node& n) {
    if (n.op == Tok::kAnd || n.op == Tok::kOr) {
      const std::string op = n.op == Tok::kAnd ? "&&" : "||";
      RSL_RETURN_IF_ERROR(NeedBool(*n.kids[0], op));
      return NeedBool(*n.kids[1], op);
    }
    auto a = Infer(*n.kids[0]);
    if (!a.ok()) return a.status();
    auto b = Infer(*n.kids[1]);
    if (!b.ok()) return b.status();
    bool known = a->kind != Kind::kAny && b->kind != Kind::kAny;
    if (IsArithmetic(n.op)) {
      for (const Typed* t : {&*a, &*b}) {
        if (t->kind != Kind::kAny && t->kind != Kind::kNumber) {
          return ExprError(
              n.column, std::string(ArithmeticName(n.op)) + " needs numbers, got " + Describe(*t),
              "arithmetic is on numbers, e.g. 'x < y * 0.95' or 'x - y > 0.05'");
        }
      }
      return Status::Ok();
    }
    if (n.op == Tok::kEq || n.op == Tok::kNe) {
      if (known && a->kind != Kind::kNull && b->kind != Kind::kNull && a->kind != b->kind) {
        return ExprError(n.column, "cannot compare " + Describe(*a) + " with " + Describe(*b),
                         "compare values of the same type");
      }
      RSL_RETURN_IF_ERROR(ClosedSet(n, *a, *b));
      return ClosedSet(n, *b, *a);
    }
    bool orderable = a->kind == b->kind && (a->kind == Kind::kNumber || a->kind == Kind::kString);
    if (known && !orderable) {
      return ExprError(n.column, "cannot order " + Describe(*a) + " and " + Describe(*b),
                       "< <= > >= compare two numbers or two strings");
    }
    return Status::Ok();
  }

  // `ref == literal` / `ref != literal` where the reference has a closed set of values.
  Status ClosedSet(const Node& n, const Typed& ref, const Typed& other) {
    if (!ref.ref || ref.ref->values.empty() || other.node->kind != NodeKind::kLiteral ||
        other.kind != Kind::kString) {
      return Status::Ok();
    }
    const RefType& type = *ref.ref;
    const std::string& value = std::get<std::string>(other.node->literal.v);
    const std::string name = refs_[ref.node->ref_index].ToString();
    auto has = [](const std::vector<std::string>& set, const std::string& v) {
      return std::find(set.begin(), set.end(), v) != set.end();
    };
    if (!has(type.values, value)) {
      std::string close = ClosestMatch(value, type.values);
      return ExprError(other.node->column, "unknown " + type.noun + " '" + value + "' for " + name,
                       close.empty() ? type.noun + "s: " + Join(type.values, ", ")
                                     : "did you mean '" + close + "'?");
    }
    if (type.possible.empty()) return Status::Ok();
    bool never = n.op == Tok::kEq ? !has(type.possible, value)
                                  : type.possible.size() == 1 && type.possible[0] == value;
    if (!never) return Status::Ok();
    std::vector<std::string> quoted;
    for (const auto& p : type.possible) quoted.push_back("'" + p + "'");
    return ExprError(
        n.column,
        name + (n.op == Tok::kEq ? " == '" : " != '") + value + "' can never be true: " + type.why,
        name + " is always " + Join(quoted, " or ") +
            " when this condition is evaluated; drop the comparison");
  }

  Status Call(const Node& n) {
    std::vector<Typed> args;
    for (const auto& kid : n.kids) {
      auto t = Infer(*kid);
      if (!t.ok()) return t.status();
      args.push_back(*t);
    }
    if (n.fn == "len") {
      Kind k = args[0].kind;
      if (k != Kind::kAny && k != Kind::kString && k != Kind::kList) {
        return ExprError(n.column, "len() needs a list or a string, got " + Describe(args[0]),
                         "len(list) or len(string)");
      }
      return Status::Ok();
    }
    // sum/min/max: one list (or a value that may be one), or several numbers.
    std::vector<Typed> items = args;
    if (args.size() == 1 && args[0].kind == Kind::kAny) return Status::Ok();
    if (args.size() == 1 && args[0].kind == Kind::kList) {
      if (args[0].node->kind != NodeKind::kList) return Status::Ok();  // contents unknown
      items.clear();
      for (const auto& kid : args[0].node->kids) items.push_back(*Infer(*kid));
      if (items.empty() && n.fn != "sum") {
        return ExprError(n.column, n.fn + "() of an empty list", "check len(x) > 0 first");
      }
    }
    for (const auto& item : items) {
      if (item.kind != Kind::kAny && item.kind != Kind::kNumber) {
        return ExprError(n.column, n.fn + "() needs numbers, got " + Describe(item),
                         n.fn + "(list) or " + n.fn + "(a, b, ...) of numbers");
      }
    }
    return Status::Ok();
  }

  const std::vector<Reference>& refs_;
  std::vector<RefType> ref_types_;
};

}  // namespace

Status Expr::Check(const TypeContext& types) const {
  if (!root_) return ExprError(1, "empty expression");
  Checker checker(types, refs_);
  auto t = checker.Infer(*root_);
  if (!t.ok()) return t.status();
  if (t->kind != Kind::kAny && t->kind != Kind::kBoolean) {
    return ExprError(1, "condition is " + checker.Describe(*t) + ", not a boolean",
                     "compare it, e.g. 'output.train.metrics.auc > 0.9'");
  }
  return Status::Ok();
}

}  // namespace rsl::expr
