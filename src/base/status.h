// Expected failures as values. Every error a user can cause carries a stable code (see
// codes.h), the field path it concerns, the source position, the bad value and a hint, and
// renders as `file:line:col: CODE path: message (hint)`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rsl {

//! A place in a source file. line and column are 1-based; 0 means "unknown".
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;

  bool known() const { return line > 0; }
  //! "file:line:col", "file" or "" depending on what is known.
  std::string ToString() const;
};

//! One user-facing error. `code` is one of the stable codes in codes.h.
struct Error {
  std::string code;
  std::string message;
  std::string path;  //!< field path, e.g. spec.pipeline.steps[2].retryPolicy.backoff
  SourcePos pos;
  std::string value;  //!< the offending value, if any (never a secret)
  std::string hint;   //!< a one-line fix, if any

  Error() = default;
  Error(std::string c, std::string msg) : code(std::move(c)), message(std::move(msg)) {}

  Error& At(SourcePos p) {
    pos = std::move(p);
    return *this;
  }
  Error& Path(std::string p) {
    path = std::move(p);
    return *this;
  }
  Error& Value(std::string v) {
    value = std::move(v);
    return *this;
  }
  Error& Hint(std::string h) {
    hint = std::move(h);
    return *this;
  }

  //! `file:line:col: CODE path: message (hint)`; parts that are unknown are left out.
  std::string ToString() const;
};

//! Success, or one Error.
class Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  Error& error() { return *error_; }
  const std::string& code() const;
  std::string ToString() const { return ok() ? "OK" : error_->ToString(); }

 private:
  std::optional<Error> error_;
};

//! A value or an Error.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}             // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status.error())) {}  // REQUIRES: !status.ok()

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error& error() & { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

//! Many errors at once (validation reports all of them, sorted by position).
using Errors = std::vector<Error>;

//! Sorts by (file, line, column), keeping the order of equal positions stable.
void SortByPosition(Errors* errors);

//! An OS error turned into a project error that keeps the path and strerror(errnum).
Error OsError(const std::string& code, const std::string& context, const std::string& path,
              int errnum);

}  // namespace rsl

#define RSL_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::rsl::Status rsl_status_ = (expr);        \
    if (!rsl_status_.ok()) return rsl_status_; \
  } while (0)
