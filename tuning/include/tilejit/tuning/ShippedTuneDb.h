// The tuning database shipped with tilejit: tunedb/h200.tune.json, compiled into
// the library so every program finds it the same way (the CLI run from any
// directory, the static bundle on a GPU host, an embedding program, Python).
// A runtime uses it while the database it is configured with does not exist.
#ifndef TILEJIT_TUNING_SHIPPEDTUNEDB_H
#define TILEJIT_TUNING_SHIPPEDTUNEDB_H

#include "tilejit/tuning/TuneDb.h"

namespace tilejit::tuning {

/// How messages name it: "tunedb/h200.tune.json (shipped with tilejit)".
llvm::StringRef shippedTuneDbName();
/// Its entries. Errors: none for the file as built (a test parses it), but a
/// bad edit of the JSON would be reported with the name above.
llvm::Expected<TuneDb> shippedTuneDb();

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_SHIPPEDTUNEDB_H
