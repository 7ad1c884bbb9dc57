#include "expr/lexer.h"

#include <cctype>
#include <cstdlib>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::expr {

Error ExprError(int column, const std::string& message, const std::string& hint) {
  Error e(codes::kExpressionInvalid, message + " at column " + std::to_string(column));
  e.pos.column = column;
  e.hint = hint;
  return e;
}

std::string TokName(Tok kind) {
  switch (kind) {
    case Tok::kNumber:
      return "number";
    case Tok::kString:
      return "string";
    case Tok::kIdent:
      return "name";
    case Tok::kTrue:
      return "'true'";
    case Tok::kFalse:
      return "'false'";
    case Tok::kNull:
      return "'null'";
    case Tok::kEq:
      return "'=='";
    case Tok::kNe:
      return "'!='";
    case Tok::kLt:
      return "'<'";
    case Tok::kLe:
      return "'<='";
    case Tok::kGt:
      return "'>'";
    case Tok::kGe:
      return "'>='";
    case Tok::kAnd:
      return "'&&'";
    case Tok::kOr:
      return "'||'";
    case Tok::kNot:
      return "'!'";
    case Tok::kStar:
      return "'*'";
    case Tok::kSlash:
      return "'/'";
    case Tok::kPlus:
      return "'+'";
    case Tok::kMinus:
      return "'-'";
    case Tok::kLParen:
      return "'('";
    case Tok::kRParen:
      return "')'";
    case Tok::kLBracket:
      return "'['";
    case Tok::kRBracket:
      return "']'";
    case Tok::kComma:
      return "','";
    case Tok::kDot:
      return "'.'";
    case Tok::kEnd:
      return "end of expression";
  }
  return "?";
}

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<std::vector<Token>> Lex(const std::string& text) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = text.size();
  while (true) {
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    Token t;
    t.column = static_cast<int>(i) + 1;
    if (i >= n) {
      t.kind = Tok::kEnd;
      out.push_back(t);
      return out;
    }
    char c = text[i];
    if (IsDigit(c) || (c == '.' && i + 1 < n && IsDigit(text[i + 1]))) {
      size_t start = i;
      while (i < n && (IsDigit(text[i]) || text[i] == '.')) ++i;
      if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        size_t save = i++;
        if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
        if (i < n && IsDigit(text[i])) {
          while (i < n && IsDigit(text[i])) ++i;
        } else {
          i = save;
        }
      }
      t.text = text.substr(start, i - start);
      char* end = nullptr;
      t.number = std::strtod(t.text.c_str(), &end);
      if (end != t.text.c_str() + t.text.size()) {
        return ExprError(t.column, "malformed number " + Quote(t.text));
      }
      if (i < n && IsIdentStart(text[i])) {
        return ExprError(static_cast<int>(i) + 1,
                         "unexpected " + Quote(std::string(1, text[i])) + " after number",
                         "separate tokens with spaces or operators");
      }
      t.kind = Tok::kNumber;
    } else if (IsIdentStart(c)) {
      size_t start = i;
      while (i < n && IsIdentChar(text[i])) ++i;
      t.text = text.substr(start, i - start);
      if (t.text == "true")
        t.kind = Tok::kTrue;
      else if (t.text == "false")
        t.kind = Tok::kFalse;
      else if (t.text == "null")
        t.kind = Tok::kNull;
      else
        t.kind = Tok::kIdent;
    } else if (c == '\'' || c == '"') {
      char quote = c;
      ++i;
      std::string s;
      bool closed = false;
      while (i < n) {
        if (text[i] == '\\' && i + 1 < n) {
          char e = text[i + 1];
          s.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
          i += 2;
          continue;
        }
        if (text[i] == quote) {
          closed = true;
          ++i;
          break;
        }
        s.push_back(text[i++]);
      }
      if (!closed) {
        return ExprError(t.column, "unterminated string", std::string("close it with ") + quote);
      }
      t.kind = Tok::kString;
      t.text = std::move(s);
    } else {
      const char next = i + 1 < n ? text[i + 1] : '\0';
      auto two = [next](char want) { return next == want; };
      ++i;
      switch (c) {
        case '=':
          if (!two('=')) return ExprError(t.column, "unexpected '='", "use '==' to compare");
          t.kind = Tok::kEq;
          ++i;
          break;
        case '!':
          if (two('=')) {
            t.kind = Tok::kNe;
            ++i;
          } else {
            t.kind = Tok::kNot;
          }
          break;
        case '<':
          if (two('=')) {
            t.kind = Tok::kLe;
            ++i;
          } else {
            t.kind = Tok::kLt;
          }
          break;
        case '>':
          if (two('=')) {
            t.kind = Tok::kGe;
            ++i;
          } else {
            t.kind = Tok::kGt;
          }
          break;
        case '*':
          t.kind = Tok::kStar;
          break;
        case '/':
          t.kind = Tok::kSlash;
          break;
        case '+':
          t.kind = Tok::kPlus;
          break;
        case '-':
          t.kind = Tok::kMinus;
          break;
        case '&':
          if (!two('&')) return ExprError(t.column, "unexpected '&'", "use '&&' for 'and'");
          t.kind = Tok::kAnd;
          ++i;
          break;
        case '|':
          if (!two('|')) return ExprError(t.column, "unexpected '|'", "use '||' for 'or'");
          t.kind = Tok::kOr;
          ++i;
          break;
        case '(':
          t.kind = Tok::kLParen;
          break;
        case ')':
          t.kind = Tok::kRParen;
          break;
        case '[':
          t.kind = Tok::kLBracket;
          break;
        case ']':
          t.kind = Tok::kRBracket;
          break;
        case ',':
          t.kind = Tok::kComma;
          break;
        case '.':
          t.kind = Tok::kDot;
          break;
        default: {
          std::string shown = std::isprint(static_cast<unsigned char>(c))
                                  ? std::string(1, c)
                                  : "\\x" + HexEncode(std::string(1, c));
          return ExprError(t.column, "unexpected character " + Quote(shown),
                           "allowed: literals, names, == != < <= > >= && || ! + - * / ( ) [ ] ,");
        }
      }
    }
    out.push_back(std::move(t));
  }
}

}  // namespace rsl::expr
