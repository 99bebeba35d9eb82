// The SSD kernels' walk over chunks (SsdChunk.h): a chunk's loads issued ahead
// of its products (its own scalars two steps early, its sequence's and its tiles
// one), so that they wait on memory while the chunks before compute instead of
// after them (docs/models.md, the chunked SSD).
#include "Parts.h"
#include "SsdChunk.h"

namespace tilejit::models {

Value loadIf(Value ptr, Value valid, double other) {
  return valid.valid() ? load(ptr, valid, other) : load(ptr);
}

ChunkTiles ChunkWalk::tiles(const std::vector<Value> &m, bool xDt, bool bc) const {
  auto [t0, len] = rows(m);
  return loadChunkTiles(g, in, h, p0, t0.to(DType::I64), len, withC, xDt, bc);
}

std::vector<Value> ChunkWalk::complete(std::vector<Value> v, Value valid) const {
  std::vector<Value> more = indirect(v, valid);
  v.insert(v.end(), more.begin(), more.end());
  if (ahead < WalkAhead::XDt)
    return v;
  ChunkTiles t = tiles(v, /*xDt=*/true, /*bc=*/ahead == WalkAhead::Tiles);
  for (Value tile : {t.x, t.b, t.cm, t.dt})
    if (tile.valid())
      v.push_back(tile);
  return v;
}

ChunkTiles ChunkWalk::tilesFor(const std::vector<Value> &loaded) const {
  if (ahead < WalkAhead::XDt)
    return tiles(loaded, true, true);
  // The carried tiles in complete()'s order: x, B and C with all tiles, dt.
  ChunkTiles t;
  size_t i = metaCount;
  t.x = loaded[i++];
  if (ahead == WalkAhead::Tiles) {
    t.b = loaded[i++];
    if (withC)
      t.cm = loaded[i++];
  } else {
    ChunkTiles bc = tiles(loaded, /*xDt=*/false, /*bc=*/true);
    t.b = bc.b, t.cm = bc.cm;
  }
  t.dt = loaded[i];
  return t;
}

std::vector<Value> ChunkWalk::walk(Value lo, Value hi, std::vector<Value> init,
                                   const ChunkStep &step) const {
  if (ahead == WalkAhead::None)
    return forRange(lo, hi, 1, init, [&](Value c, std::vector<Value> carried) {
      return step(c, complete(direct(c, Value()), Value()), std::move(carried));
    });
  // Carried: the state, chunk c + 1's direct scalars, chunk c's loads.
  const size_t state = init.size();
  std::vector<Value> second = direct(lo + 1, lo + 1 < hi);
  std::vector<Value> first = complete(direct(lo, lo < hi), lo < hi);
  const size_t directCount = second.size();
  init.insert(init.end(), second.begin(), second.end());
  init.insert(init.end(), first.begin(), first.end());
  std::vector<Value> out =
      forRange(lo, hi, 1, init, [&](Value c, std::vector<Value> carried) {
        const std::vector<Value> next(carried.begin() + state,
                                      carried.begin() + state + directCount);
        const std::vector<Value> loaded(carried.begin() + state + directCount,
                                        carried.end());
        carried.resize(state);
        std::vector<Value> afterNext = direct(c + 2, c + 2 < hi);
        std::vector<Value> nextLoads = complete(next, c + 1 < hi);
        std::vector<Value> result = step(c, loaded, std::move(carried));
        result.insert(result.end(), afterNext.begin(), afterNext.end());
        result.insert(result.end(), nextLoads.begin(), nextLoads.end());
        return result;
      });
  out.resize(state);
  return out;
}

KernelConstant walkAheadConstant() {
  return {"walk_ahead",
          int64_t(WalkAhead::None),
          "how far ahead the walk over chunks issues a chunk's loads, carried as loop "
          "values: 0 none, 1 its metadata (chunk_seq, chunk_begin/end and the "
          "sequence's cu_seqlens, slot, init), 2 its metadata, x and dt, 3 its metadata "
          "and all its tiles (x, B, C, dt); the outputs are the same bits",
          {},
          ConstantRange::between(0, 3)};
}

} // namespace tilejit::models
