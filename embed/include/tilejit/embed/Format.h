// fmt formatters for the embedding API's values: fmt::print("{}\n", error) prints
// "checkpoint: ...", a Status "ok" or its error, a TensorView
// "bf16[3, 2688] on device 0", LoadStatistics its one-line summary. The
// implementation formats its own messages with fmt as well.
#ifndef TILEJIT_EMBED_FORMAT_H
#define TILEJIT_EMBED_FORMAT_H

#include "tilejit/embed/Embed.h"

// GCC 12 at -O2 and above reports a -Wstringop-overflow in fmt 9's own headers
// (a false positive: fmt/core.h's buffer appends, seen through inlining). It is
// silenced for fmt's headers alone, here, rather than for whoever includes them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#include <fmt/format.h>
#include <fmt/ranges.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <>
struct fmt::formatter<tilejit::embed::Error> : fmt::formatter<std::string_view> {
  auto format(const tilejit::embed::Error &error, fmt::format_context &ctx) const {
    return fmt::formatter<std::string_view>::format(error.describe(), ctx);
  }
};

template <>
struct fmt::formatter<tilejit::embed::Status> : fmt::formatter<std::string_view> {
  auto format(const tilejit::embed::Status &status, fmt::format_context &ctx) const {
    return fmt::formatter<std::string_view>::format(status.describe(), ctx);
  }
};

template <>
struct fmt::formatter<tilejit::embed::TensorView> : fmt::formatter<std::string_view> {
  auto format(const tilejit::embed::TensorView &t, fmt::format_context &ctx) const {
    std::string where = t.device == tilejit::embed::kHost
                            ? std::string("the host")
                            : fmt::format("device {}", t.device);
    return fmt::formatter<std::string_view>::format(
        fmt::format("{}[{}] on {}", tilejit::embed::dtypeName(t.dtype),
                    fmt::join(t.shape, ", "), where),
        ctx);
  }
};

template <>
struct fmt::formatter<tilejit::embed::LoadStatistics> : fmt::formatter<std::string_view> {
  auto format(const tilejit::embed::LoadStatistics &s, fmt::format_context &ctx) const {
    return fmt::formatter<std::string_view>::format(s.text, ctx);
  }
};

#endif // TILEJIT_EMBED_FORMAT_H
