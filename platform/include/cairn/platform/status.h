// Status and Result<T>: how every cairn layer below transport reports errors.
//
// No exceptions cross a cairn API. A call that can fail returns a Status (or a
// Result<T> carrying either a value or a non-OK Status). An OK Status holds no
// allocation, so the success path costs one integer compare.
//
// Thread-safety: Status and Result are values; distinct objects may be used
// from distinct threads freely, one object needs external synchronisation.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cairn {

// The error classes callers branch on. The message carries the detail for
// humans (which file, which record, which limit).
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong; retrying it will not help
  kNotFound,            // a named thing (file, table, record) does not exist
  kAlreadyExists,       // creating a thing that exists
  kCorruption,          // stored bytes fail a check (CRC, format, bounds)
  kIOError,             // the OS refused an operation (errno in the message)
  kBusy,                // another holder has it (file lock, writer connection)
  kResourceExhausted,   // a configured limit or the disk is full
  kFailedPrecondition,  // the object is in the wrong state for the call
  kTimedOut,            // a deadline passed before the operation completed
  kUnavailable,         // a peer (broker, tty) is not reachable right now
  kPermissionDenied,    // the caller lacks the right (token scope, file mode)
  kInternal,            // a broken invariant inside cairn: a bug
};

// Human-readable name of a code, e.g. "Corruption".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : state_(code == StatusCode::kOk ? nullptr
                                       : std::make_shared<const State>(State{code, std::move(message)})) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status TimedOut(std::string m) { return {StatusCode::kTimedOut, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The detail message; empty for OK.
  const std::string& message() const;
  bool Is(StatusCode c) const { return code() == c; }

  // "Corruption: log/000003.log offset 4096: bad CRC" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  // Shared so that copying an error is cheap; errors are immutable.
  std::shared_ptr<const State> state_;
};

// Either a T or a non-OK Status. Accessing value() of an error is a bug
// (asserts in debug builds).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result constructed from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cairn

// Evaluates a Status expression and returns it from the enclosing function if
// it is not OK.
#define CAIRN_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::cairn::Status cairn_status_ = (expr);        \
    if (!cairn_status_.ok()) return cairn_status_; \
  } while (0)

#define CAIRN_CONCAT_INNER_(a, b) a##b
#define CAIRN_CONCAT_(a, b) CAIRN_CONCAT_INNER_(a, b)

// `CAIRN_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result's value
// or returns the Result's Status from the enclosing function.
#define CAIRN_ASSIGN_OR_RETURN(lhs, expr) \
  CAIRN_ASSIGN_OR_RETURN_IMPL_(CAIRN_CONCAT_(cairn_result_, __LINE__), lhs, expr)
#define CAIRN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
