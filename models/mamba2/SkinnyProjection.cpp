// The skinny decode projection (Parts.h, projectSkinny): the weight is the mma's
// M side and the few batch rows its N side (8 and up), so a program's weight
// tile is read once for all its rows and streamed through the K loop's
// shared-memory stages, `stages` - 1 K steps in flight ahead of the dots.
#include "Parts.h"
#include "Registration.h"

namespace tilejit::models {

Value projectSkinny(const SkinnyProjection &p, Value m0, Value n0, int64_t bm, int64_t bn,
                    int64_t bk) {
  // The activation rows, transposed into the mma's B operand [bk, bm]; rows
  // past the batch are masked loads that read nothing.
  View input = makeView(p.input, {p.rows, p.k}, {p.k, 1});
  View weight = makeView(p.weight, {p.n, p.k}, {p.k, 1});
  Value acc = forRange(p.kBegin, p.kEnd, bk, {zeros({bn, bm}, DType::F32)},
                       [&](Value kk, std::vector<Value> carried) -> std::vector<Value> {
                         Value a = transpose(load(input, {m0, kk}, {bm, bk}), {1, 0});
                         if (p.inverseScale)
                           a = (a.to(DType::F32) * *p.inverseScale).to(DType::F8E4M3);
                         Value w = load(weight, {n0, kk}, {bn, bk});
                         return {dot(w, a, carried[0])};
                       })[0];
  return transpose(acc, {1, 0});
}

int64_t skinnyRows(int64_t rows) {
  int64_t bm = 8;
  while (bm < rows && bm < 64)
    bm *= 2;
  return bm;
}

KernelConstant projectionSkinny() {
  return {"skinny",
          0,
          "1: tensor cores with the weight as the mma's M side and block_m (>= 8) "
          "batch rows as its N side, the weight read once through `stages` "
          "shared-memory buffers",
          {},
          ConstantRange::flag()};
}

} // namespace tilejit::models
