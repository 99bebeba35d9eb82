# Sanitized configurations (docs/hardening.md). Flags go on every target of the
# configuration; Debian's LLVM/MLIR archives stay uninstrumented, so bugs inside
# them are found only where our instrumented code touches their memory.
#
#   TILEJIT_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer
#                        (`make test-sanitize`, any compiler)
#   TILEJIT_FUZZ=ON      the same plus libFuzzer coverage, and the fuzz targets
#                        of tests/fuzz (`make fuzz`; needs clang)
option(TILEJIT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(TILEJIT_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)

if(TILEJIT_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TILEJIT_FUZZ needs clang (libFuzzer), got ${CMAKE_CXX_COMPILER_ID}")
endif()

if(TILEJIT_SANITIZE OR TILEJIT_FUZZ)
  # vptr is off: it needs the type info of every polymorphic class it sees,
  # including uninstrumented LLVM ones, and adds nothing the tests rely on.
  # No recovery: a UBSan report fails the test (or is a fuzzer crash).
  set(_tilejit_sanitizers -fsanitize=address,undefined -fno-sanitize=vptr
    -fno-sanitize-recover=all)
  # -O1 keeps the stacks readable and builds much faster than -O3; no debug
  # info (symbolized frames come from the symbol table).
  add_compile_options(${_tilejit_sanitizers} -fno-omit-frame-pointer -O1)
  add_link_options(${_tilejit_sanitizers})
  if(TILEJIT_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
