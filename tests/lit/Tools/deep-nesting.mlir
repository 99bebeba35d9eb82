// IR nested deeper than MLIR's recursion takes (issue #33): the parser, the
// verifier and the printer recurse once per level, and 20,000 nested modules
// (or attribute lists) overflowed the stack. tilejit-opt refuses such input
// unparsed, naming the place; 200 levels still parse (the counterfactual).
//
// RUN: %python -c "print('module {' * 20000 + '}' * 20000)" > %t.modules.mlir
// RUN: not tilejit-opt %t.modules.mlir 2>&1 | FileCheck %s --check-prefix=MODULES
// MODULES: tilejit-opt: error: {{.*}}modules.mlir: [1:2055, byte=2055]: IR nests deeper than 256 levels
//
// RUN: %python -c "print('\"a.b\"() {x = ' + '[' * 20000 + ']' * 20000 + '} : () -> ()')" > %t.attrs.mlir
// RUN: not tilejit-opt --allow-unregistered-dialect %t.attrs.mlir 2>&1 | FileCheck %s --check-prefix=ATTRS
// ATTRS: tilejit-opt: error: {{.*}}attrs.mlir: [1:268, byte=268]: IR nests deeper than 256 levels
//
// Brackets inside strings and comments, and the arrow of a function type, do not count.
// RUN: %python -c "print('// ' + '(' * 1000 + '\n\"a.b\"() {s = \"' + '[' * 1000 + '\"} : () -> ()')" > %t.text.mlir
// RUN: tilejit-opt --allow-unregistered-dialect %t.text.mlir | FileCheck %s --check-prefix=TEXT
// TEXT: "a.b"() {s = "{{\[\[\[}}
//
// RUN: %python -c "print('module {' * 200 + '}' * 200)" > %t.shallow.mlir
// RUN: tilejit-opt %t.shallow.mlir | FileCheck %s --check-prefix=SHALLOW
// SHALLOW: module {
