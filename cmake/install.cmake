# What `cmake --install` puts in a prefix, for programs and tests that embed flowrt:
#
#   include/flowrt/...                 the public headers (include/ of the source tree, its
#                                      links resolved); docs/ARCHITECTURE.md lists them
#   lib/libflowrt_*.a                  the libraries (static)
#   lib/cmake/flowrt/                  flowrtConfig.cmake, its version file and the exported
#                                      targets: flowrt::flowrt (the engine) and
#                                      flowrt::testing (the GoogleTest fixture and matchers)
#   lib/pkgconfig/flowrt.pc            for pkg-config (static libraries: use --static)
#   bin/flowrt                         the command, when built
#   share/flowrt/schemas/              the JSON Schemas of what users write (definitions,
#                                      events-file lines, config.json), for editors and
#                                      validators (docs/SPEC.md, "JSON Schemas")
#
# Components: headers, libraries, cli, schemas (`cmake --install DIR --component headers`).
include(CMakePackageConfigHelpers)

set(FLOWRT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/flowrt")

# ---- Headers: every file under include/flowrt, links installed as the files they name.
file(GLOB_RECURSE _flowrt_public_headers CONFIGURE_DEPENDS LIST_DIRECTORIES false
     RELATIVE "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}/include/flowrt/*.h")
foreach(_header IN LISTS _flowrt_public_headers)
  file(REAL_PATH "${PROJECT_SOURCE_DIR}/include/${_header}" _real)
  get_filename_component(_dir "${_header}" DIRECTORY)
  get_filename_component(_name "${_header}" NAME)
  install(FILES "${_real}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/${_dir}" RENAME "${_name}" COMPONENT headers)
endforeach()

# ---- Libraries and their targets. flowrt::flowrt is flowrt_runtime; the other libraries
# are its parts (flowrt::plans, ...), linked through it.
set_target_properties(flowrt_plans PROPERTIES EXPORT_NAME plans)
set_target_properties(flowrt_compiler PROPERTIES EXPORT_NAME compiler)
set_target_properties(flowrt_triggers PROPERTIES EXPORT_NAME triggers)
set_target_properties(flowrt_actions PROPERTIES EXPORT_NAME actions)
install(TARGETS flowrt_plans flowrt_compiler flowrt_triggers flowrt_actions flowrt_runtime
        EXPORT flowrtTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT libraries
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT libraries)
install(EXPORT flowrtTargets NAMESPACE flowrt:: DESTINATION "${FLOWRT_CMAKE_DIR}" COMPONENT libraries)
if(TARGET flowrt_testing)
  install(TARGETS flowrt_testing EXPORT flowrtTestingTargets COMPONENT libraries)
  install(EXPORT flowrtTestingTargets NAMESPACE flowrt:: DESTINATION "${FLOWRT_CMAKE_DIR}" COMPONENT libraries)
endif()

set(FLOWRT_SCHEMAS_DIR "${CMAKE_INSTALL_DATADIR}/flowrt/schemas")
configure_package_config_file(cmake/flowrtConfig.cmake.in "${PROJECT_BINARY_DIR}/flowrtConfig.cmake"
                              INSTALL_DESTINATION "${FLOWRT_CMAKE_DIR}" PATH_VARS FLOWRT_SCHEMAS_DIR)
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/flowrtConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/flowrtConfig.cmake" "${PROJECT_BINARY_DIR}/flowrtConfigVersion.cmake"
        DESTINATION "${FLOWRT_CMAKE_DIR}" COMPONENT libraries)

# ---- pkg-config. Paths relative to the .pc file, so an installed tree can be moved.
file(RELATIVE_PATH FLOWRT_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" FLOWRT_PC_TO_PREFIX "${FLOWRT_PC_TO_PREFIX}")
configure_file(cmake/flowrt.pc.in "${PROJECT_BINARY_DIR}/flowrt.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/flowrt.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT libraries)

# ---- The command.
if(TARGET flowrt)
  install(TARGETS flowrt RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cli)
endif()

# ---- The JSON Schemas.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/schemas/" DESTINATION "${CMAKE_INSTALL_DATADIR}/flowrt/schemas"
        COMPONENT schemas FILES_MATCHING PATTERN "*.schema.json")
