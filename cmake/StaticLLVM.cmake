# Portable build: every LLVM/MLIR library comes from Debian's static archives.
# MLIR targets already link static archives; they reach LLVM through the imported
# target `LLVM` (libLLVM.so). Point that target at a generated linker script that
# lists every static LLVM component instead, so only libc/libm/libz/libzstd stay
# dynamic.
execute_process(COMMAND ${LLVM_TOOLS_BINARY_DIR}/llvm-config --link-static --libfiles all
  OUTPUT_VARIABLE _llvm_static_libs OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(_llvm_static_libs UNIX_COMMAND "${_llvm_static_libs}")
list(FILTER _llvm_static_libs EXCLUDE REGEX "Polly")
string(JOIN " " _group ${_llvm_static_libs})
set(_script "${PROJECT_BINARY_DIR}/libLLVM-static.ld")
file(WRITE "${_script}" "GROUP ( ${_group} )\n")
foreach(cfg RELEASE RELWITHDEBINFO DEBUG MINSIZEREL NOCONFIG)
  set_target_properties(LLVM PROPERTIES IMPORTED_LOCATION_${cfg} "${_script}")
endforeach()
# With a soname the link line names the script by its path; IMPORTED_NO_SONAME would
# turn it into -llibLLVM-static.ld, which ld cannot find.
set_property(TARGET LLVM PROPERTY IMPORTED_NO_SONAME FALSE)
set_property(TARGET LLVM APPEND PROPERTY INTERFACE_LINK_LIBRARIES z zstd rt dl pthread m)
add_link_options(-static-libstdc++ -static-libgcc)
