// The SSD kernels' walk over chunks (SsdChunk.h): each chunk's metadata, its
// sequence's, then its products.
#include "Parts.h"
#include "SsdChunk.h"

namespace tilejit::models {

ChunkTiles ChunkWalk::tilesFor(const std::vector<Value> &loaded) const {
  auto [t0, len] = rows(loaded);
  return loadChunkTiles(g, in, h, p0, t0.to(DType::I64), len, withC);
}

std::vector<Value> ChunkWalk::walk(Value lo, Value hi, std::vector<Value> init,
                                   const ChunkStep &step) const {
  return forRange(lo, hi, 1, init, [&](Value c, std::vector<Value> carried) {
    std::vector<Value> meta = direct(c);
    std::vector<Value> more = indirect(meta);
    meta.insert(meta.end(), more.begin(), more.end());
    return step(c, meta, std::move(carried));
  });
}

} // namespace tilejit::models
