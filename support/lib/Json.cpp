// parseJson: a linear scan for nesting depth and duplicate keys (strings are
// skipped whole, so brackets inside them do not count), then llvm::json::parse.
#include "tilejit/support/Json.h"
#include "TextPosition.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <vector>

namespace tilejit::support {
namespace {

/// One open array or object; an object remembers its keys.
struct Frame {
  bool isObject;
  llvm::StringSet<> keys;
};

/// The decoded text of the string literal text[begin, end] (quotes included).
std::optional<std::string> decodeString(llvm::StringRef literal) {
  if (!literal.contains('\\'))
    return literal.drop_front().drop_back().str();
  auto value = llvm::json::parse(literal);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  std::optional<llvm::StringRef> s = value->getAsString();
  return s ? std::optional<std::string>(s->str()) : std::nullopt;
}

llvm::Error scan(llvm::StringRef text, unsigned maxDepth) {
  std::vector<Frame> stack;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < n && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      if (end >= n)
        return llvm::Error::success(); // unterminated: the parser says so
      size_t next = text.find_first_not_of(" \t\r\n", end + 1);
      if (!stack.empty() && stack.back().isObject && next < n && text[next] == ':') {
        // Undecodable keys are left to the parser's message.
        if (auto key = decodeString(text.slice(i, end + 1)))
          if (!stack.back().keys.insert(*key).second)
            return errorAt(text, i, "duplicate key \"" + *key + "\" in one object");
      }
      i = end;
    } else if (c == '[' || c == '{') {
      if (stack.size() >= maxDepth)
        return errorAt(
            text, i,
            llvm::formatv("arrays and objects nest deeper than {0} levels", maxDepth));
      stack.push_back({c == '{', {}});
    } else if ((c == ']' || c == '}') && !stack.empty()) {
      stack.pop_back();
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text, unsigned maxDepth) {
  if (llvm::Error err = scan(text, maxDepth))
    return std::move(err);
  return llvm::json::parse(text);
}

const char *jsonKindName(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return "a boolean";
  case llvm::json::Value::Number:
    return "a number";
  case llvm::json::Value::String:
    return "a string";
  case llvm::json::Value::Array:
    return "an array";
  case llvm::json::Value::Object:
    return "an object";
  }
  return "a JSON value";
}

} // namespace tilejit::support
