# `cmake --install`: tilejit's libraries and headers and a CMake package
# (tilejitConfig.cmake, its version file and the exported targets tilejit::*)
# so that another project's find_package(tilejit) finds them (docs/runtime.md,
# "Using tilejit from another CMake project").
include(CMakePackageConfigHelpers)

set(TILEJIT_LIBRARIES TilejitSupport TilejitTileDialect TilejitTileTransforms
  TilejitTileToLLVM TilejitPTXTarget TilejitPipeline TilejitBuilder TilejitInterpreter
  TilejitRuntime TilejitJit TilejitTuning TilejitModels TilejitEmbed)
set(TILEJIT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilejit)

install(TARGETS ${TILEJIT_LIBRARIES} EXPORT tilejitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT tilejitTargets NAMESPACE tilejit:: DESTINATION ${TILEJIT_CMAKE_INSTALL_DIR})

# The public headers of every component, and the compiler's generated ones.
foreach(dir support runtime jit tuning models embed compiler)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/compiler/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h.inc")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tilejitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tilejitConfig.cmake INSTALL_DESTINATION ${TILEJIT_CMAKE_INSTALL_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tilejitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tilejitConfig.cmake
  ${PROJECT_BINARY_DIR}/tilejitConfigVersion.cmake DESTINATION ${TILEJIT_CMAKE_INSTALL_DIR})
