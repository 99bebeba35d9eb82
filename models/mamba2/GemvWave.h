// The weight-streaming GEMV of the decode projections in pieces (one K group's
// weight loads, their products) and its persistent form, `gemv_programs`:
// P programs per row walk the column tiles, the next tile's loads in flight
// while this tile's last products are summed.
#ifndef TILEJIT_MODELS_MAMBA2_GEMVWAVE_H
#define TILEJIT_MODELS_MAMBA2_GEMVWAVE_H

#include "Parts.h"

#include <utility>
#include <vector>

namespace tilejit::models {

/// One K group of a GEMV's weight tile: each [bn, bk] step with its K offset.
using WeightGroup = std::vector<std::pair<int64_t, Value>>;

/// Reads one activation row of a GEMV (projectRow's operand side) step by step
/// against weight tiles of `bn` rows and K steps of `bk`.
class RowSteps {
public:
  RowSteps(const ProjectionOperands &p, Value row, int64_t bn, int64_t bk);

  /// Issues the loads of K steps [g0, g0 + group * bk) of weight rows
  /// [n0, n0 + bn) (rows past the weight's read zeros).
  WeightGroup loadWeights(Value n0, int64_t g0, int64_t group) const;
  /// `acc` ([bn, bk] f32) plus the products of `weights` with the row.
  Value accumulate(const WeightGroup &weights, Value acc) const;

private:
  const ProjectionOperands &p;
  Value row;
  int64_t bn, bk;
  std::optional<View> input;
  std::optional<Value> inverse;
};

/// What the persistent walk does with a column tile: its first output column
/// and its f32 dot products [bn].
using TileEpilogue = std::function<void(Value n0, Value dots)>;

/// The GEMV of input row `row` over the column tiles t = programId(0),
/// programId(0) + numPrograms(0), ... of an [n, K] weight, `finish` called on
/// each tile's dot products, for a grid of `programs` (or more) programs a
/// row. The first tile's first K group is loaded before the wait (with
/// p.waitAfterFirstWeights), and each tile's last group issues the next
/// tile's first group before its products, so a program keeps its weight
/// loads in flight from tile to tile; within a tile the groups go as
/// projectRow's.
void projectRowTiles(const ProjectionOperands &p, Value row, int64_t n, int64_t bn,
                     int64_t bk, int64_t group, int64_t programs,
                     const TileEpilogue &finish);

/// The constant that selects the persistent GEMV (0: one tile a program).
KernelConstant gemvPrograms();
/// gemv_programs > 0 takes the GEMV form (block_m 1; chunked, direct, skinny
/// and the kernel's other named forms 0) and at most 32 tiles a program of
/// the weight's n rows, the sum of the constants `columns`.
ConstantRule gemvProgramsRule(std::vector<std::string> otherForms,
                              std::vector<std::string> columns);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_GEMVWAVE_H
