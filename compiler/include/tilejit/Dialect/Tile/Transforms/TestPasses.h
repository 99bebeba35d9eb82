// Test passes of the tile dialect's analyses, for tilejit-opt only: each prints
// what an analysis the passes share decided, as remarks a lit test checks.
#ifndef TILEJIT_DIALECT_TILE_TRANSFORMS_TESTPASSES_H
#define TILEJIT_DIALECT_TILE_TRANSFORMS_TESTPASSES_H

namespace tilejit::tile {

/// Registers -test-tile-dot-paths and -test-tile-staged-operands.
void registerTileTestPasses();

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_TRANSFORMS_TESTPASSES_H
