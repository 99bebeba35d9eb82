# TILEJIT_BUILD_ID: the name the JIT's disk cache keys and the tuning database's
# entries give the compiler, and `tilejit --version` prints. It is a hash of what
# decides the code the compiler emits, never of the commit: the toolchain (the
# C++ compiler and its version, LLVM's version) and the content of every source,
# header, ODS file and CMake list of support/, compiler/ and jit/ (a kernel's own
# body is keyed separately, by its IR). So two builds of the same compiler
# sources agree wherever they are made: the static bundle run on a GPU host and
# `make run` here, whatever the commits around them, and a tuning database
# exported by one is used by the other. Editing or adding one of those files
# reconfigures the build, so the id is never stale.
set(_tilejit_id_text
  "toolchain ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, LLVM ${LLVM_PACKAGE_VERSION}\n")
set(_tilejit_id_files)
foreach(dir support compiler jit)
  foreach(pattern *.cpp *.h *.td CMakeLists.txt)
    file(GLOB_RECURSE _files CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
      ${PROJECT_SOURCE_DIR}/${dir}/${pattern})
    list(APPEND _tilejit_id_files ${_files})
  endforeach()
endforeach()
list(SORT _tilejit_id_files)
foreach(file ${_tilejit_id_files})
  file(SHA256 ${PROJECT_SOURCE_DIR}/${file} _hash)
  string(APPEND _tilejit_id_text "${file} ${_hash}\n")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${file})
endforeach()
list(LENGTH _tilejit_id_files _count)
string(SHA256 _tilejit_id "${_tilejit_id_text}")
string(SUBSTRING "${_tilejit_id}" 0 16 TILEJIT_BUILD_ID)
message(STATUS "tilejit build id: ${TILEJIT_BUILD_ID} (${_count} compiler files, "
  "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, LLVM ${LLVM_PACKAGE_VERSION})")
