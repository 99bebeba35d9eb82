// The embedding API's errors as values: Error (a kind and a message that carries
// the numbers that disagree), Status (success or an Error) and Result<T> (a T or
// an Error). Nothing in tilejit::embed throws or aborts. Standard C++ only; the
// fmt formatters are in Format.h.
#ifndef TILEJIT_EMBED_RESULT_H
#define TILEJIT_EMBED_RESULT_H

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tilejit::embed {

/// What kind of mistake or failure an Error reports.
enum class ErrorKind {
  InvalidArgument, ///< a value the caller passed (a shape, a layer count, a slot)
  Checkpoint, ///< a checkpoint that cannot be loaded (missing, malformed, unsupported)
  Device,     ///< the GPU or its driver (none present, out of memory, a CUDA error)
  Run,        ///< a step that failed while running on the interpreter
};

/// "invalid argument", "checkpoint", "device", "run".
const char *errorKindName(ErrorKind kind);

/// A failure: its kind and a message naming what was asked and what was found.
class Error {
public:
  Error(ErrorKind kind, std::string message)
      : errorKind(kind), text(std::move(message)) {}
  ErrorKind kind() const { return errorKind; }
  const std::string &message() const { return text; }
  /// "<kind>: <message>", the form Format.h prints.
  std::string describe() const;

private:
  ErrorKind errorKind;
  std::string text;
};

/// Success, or the Error that prevented it.
class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  Status(Error error) : failure(std::move(error)) {}
  bool ok() const { return !failure; }
  explicit operator bool() const { return ok(); }
  /// The failure; only when !ok().
  const Error &error() const { return *failure; }
  /// "ok" or Error::describe().
  std::string describe() const { return ok() ? "ok" : failure->describe(); }

private:
  std::optional<Error> failure;
};

/// A T, or the Error that prevented making one.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : content(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : content(std::in_place_index<1>, std::move(error)) {}
  bool ok() const { return content.index() == 0; }
  explicit operator bool() const { return ok(); }
  /// The value; only when ok().
  T &value() & { return std::get<0>(content); }
  const T &value() const & { return std::get<0>(content); }
  T &&value() && { return std::get<0>(std::move(content)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  /// The failure; only when !ok().
  const Error &error() const { return std::get<1>(content); }
  Status status() const { return ok() ? Status() : Status(error()); }

private:
  std::variant<T, Error> content;
};

} // namespace tilejit::embed

#endif // TILEJIT_EMBED_RESULT_H
