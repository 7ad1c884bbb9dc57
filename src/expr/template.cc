#include "expr/template.h"

#include <cmath>
#include <cstdio>

#include "base/codes.h"

namespace rsl::expr {
namespace {

void AppendEscaped(const std::string& s, std::string* out) {
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(char(c));
        }
    }
  }
}

void AppendJson(const Value& v, bool quote_strings, std::string* out) {
  switch (v.v.index()) {
    case 0:
      *out += "null";
      break;
    case 1:
      *out += std::get<bool>(v.v) ? "true" : "false";
      break;
    case 2: {
      double d = std::get<double>(v.v);
      if (!std::isfinite(d)) {
        *out += "null";  // JSON has no NaN or infinity
      } else {
        *out += v.ToString();
      }
      break;
    }
    case 3:
      if (quote_strings) out->push_back('"');
      AppendEscaped(std::get<std::string>(v.v), out);
      if (quote_strings) out->push_back('"');
      break;
    default: {
      const auto& list = std::get<List>(v.v);
      out->push_back('[');
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) out->push_back(',');
        AppendJson(list[i], true, out);
      }
      out->push_back(']');
    }
  }
}

}  // namespace

std::string JsonSafeText(const Value& v) {
  std::string out;
  AppendJson(v, /*quote_strings=*/false, &out);
  return out;
}

Result<Template> Template::Parse(const std::string& text) {
  if (text.size() > kMaxTemplateBytes) {
    return Error(codes::kExpressionInvalid, "the template is " + std::to_string(text.size()) +
                                                " bytes, more than the limit of " +
                                                std::to_string(kMaxTemplateBytes))
        .Hint("send less: a webhook body is a small JSON document");
  }
  Template t;
  size_t at = 0;
  while (true) {
    size_t open = text.find("{{", at);
    if (open == std::string::npos) {
      t.parts_.push_back({text.substr(at), std::nullopt, 0});
      return t;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      Error e(codes::kExpressionInvalid, "'{{' is not closed by '}}'");
      e.pos.column = int(open) + 1;
      return e.Hint("write {{ expression }}, e.g. {{ run.id }}");
    }
    std::string inner = text.substr(open + 2, close - open - 2);
    size_t first = inner.find_first_not_of(" \t\n\r");
    if (first == std::string::npos) {
      Error e(codes::kExpressionInvalid, "'{{ }}' holds no expression");
      e.pos.column = int(open) + 1;
      return e.Hint("e.g. {{ output.validate.metrics.acc }}");
    }
    auto expr = Expr::Parse(inner);
    if (!expr.ok()) {
      Error e = expr.error();
      e.pos.column = int(open) + 2 + std::max(e.pos.column, 1);
      return e;
    }
    Part p;
    p.literal = text.substr(at, open - at);
    p.expr = *expr;
    p.column = int(open) + 3 + int(first);
    t.parts_.push_back(std::move(p));
    at = close + 2;
  }
}

Result<std::string> Template::Render(const Context& ctx) const {
  std::string out;
  for (const auto& p : parts_) {
    out += p.literal;
    if (!p.expr) continue;
    auto v = p.expr->Eval(ctx);
    if (!v.ok()) return v.error();
    out += JsonSafeText(*v);
  }
  return out;
}

}  // namespace rsl::expr
