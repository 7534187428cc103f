# Install rules: included at the end of the top-level CMakeLists.txt, once
# every target exists. `cmake --install build --prefix DIR` (or
# `make install PREFIX=DIR`) produces:
#
#   bin/udiagd  bin/udiag
#   lib/libudiag.so -> libudiag.so.0 -> libudiag.so.<version>
#   include/udiag/*.h
#   lib/pkgconfig/udiag.pc
#   lib/cmake/udiag/{udiagConfig,udiagConfigVersion,udiagTargets*}.cmake
#
# Each part is guarded with if(TARGET ...), so the tree configures while some
# targets are still being written.

include(CMakePackageConfigHelpers)

set(UDIAG_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/udiag" CACHE STRING
    "Where udiagConfig.cmake is installed, relative to the prefix")
set(UDIAG_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig" CACHE STRING
    "Where udiag.pc is installed, relative to the prefix")

# Every target defined in `dir` and the directories below it.
function(_udiag_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _udiag_collect_targets("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# --- Programs: the executables whose file name is udiagd or udiag ----------
# The CLI's target cannot be called `udiag` (that is the library), so the
# programs are found by their output name, whatever their target is called.
_udiag_collect_targets("${PROJECT_SOURCE_DIR}" _udiag_all_targets)
set(_udiag_programs "")
foreach(_t IN LISTS _udiag_all_targets)
  get_target_property(_type ${_t} TYPE)
  if(NOT _type STREQUAL "EXECUTABLE")
    continue()
  endif()
  get_target_property(_name ${_t} OUTPUT_NAME)
  if(NOT _name)
    set(_name ${_t})
  endif()
  if(_name STREQUAL "udiagd" OR _name STREQUAL "udiag")
    list(APPEND _udiag_programs ${_t})
  endif()
endforeach()
foreach(_t IN LISTS _udiag_programs)
  get_target_property(_rpath ${_t} INSTALL_RPATH)
  if(NOT _rpath)
    # Finds an installed libudiag.so beside the program, wherever the prefix is.
    set_target_properties(${_t} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
  install(TARGETS ${_t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()

# --- Public headers -------------------------------------------------------
if(EXISTS "${PROJECT_SOURCE_DIR}/include/udiag")
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/udiag"
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING
          PATTERN "*.h" PATTERN "*.hh" PATTERN "*.hpp" PATTERN "*.hxx" PATTERN "*.inc" PATTERN "*.ipp")
endif()

# --- The library, its pkg-config file and its CMake package ---------------
if(TARGET udiag)
  if(NOT TARGET udiag::udiag)
    add_library(udiag::udiag ALIAS udiag)
  endif()

  # libudiag.so -> libudiag.so.<major> -> libudiag.so.<version>, unless the
  # library's own CMakeLists already chose.
  get_target_property(_v udiag VERSION)
  if(NOT _v)
    set_target_properties(udiag PROPERTIES VERSION ${PROJECT_VERSION})
  endif()
  get_target_property(_v udiag SOVERSION)
  if(NOT _v)
    set_target_properties(udiag PROPERTIES SOVERSION ${PROJECT_VERSION_MAJOR})
  endif()

  # Paths in the source or build tree are only valid while building: export
  # them as BUILD_INTERFACE, so installed users see only ${prefix}/include.
  get_target_property(_inc udiag INTERFACE_INCLUDE_DIRECTORIES)
  if(_inc)
    set(_new_inc "")
    foreach(_d IN LISTS _inc)
      set(_in_tree FALSE)
      if(IS_ABSOLUTE "${_d}")
        cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${_d}" NORMALIZE _in_src)
        cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${_d}" NORMALIZE _in_bin)
        if(_in_src OR _in_bin)
          set(_in_tree TRUE)
        endif()
      endif()
      if(_in_tree)
        list(APPEND _new_inc "$<BUILD_INTERFACE:${_d}>")
      else()
        list(APPEND _new_inc "${_d}")
      endif()
    endforeach()
    set_target_properties(udiag PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new_inc}")
  endif()

  # Internal (non-imported) targets in the link interface are not installed:
  # keep them for the build tree only. Imported ones (fmt::fmt, Threads) stay
  # and are found again by udiagConfig.cmake.
  set(UDIAG_CONFIG_DEPENDENCIES "find_dependency(Threads)")
  get_target_property(_libs udiag INTERFACE_LINK_LIBRARIES)
  if(_libs)
    set(_new_libs "")
    foreach(_l IN LISTS _libs)
      set(_name "${_l}")
      set(_link_only FALSE)
      if(_l MATCHES "^\\$<LINK_ONLY:([^>]+)>$")
        set(_name "${CMAKE_MATCH_1}")
        set(_link_only TRUE)
      endif()
      if(TARGET "${_name}" AND NOT _name STREQUAL "udiag")
        get_target_property(_imported "${_name}" IMPORTED)
        if(NOT _imported)
          list(APPEND _new_libs "$<BUILD_INTERFACE:${_name}>")
          continue()
        endif()
      endif()
      if(_name MATCHES "^fmt::" AND NOT UDIAG_CONFIG_DEPENDENCIES MATCHES "fmt")
        string(APPEND UDIAG_CONFIG_DEPENDENCIES "\nfind_dependency(fmt)")
      endif()
      if(_name MATCHES "^CLI11::" AND NOT UDIAG_CONFIG_DEPENDENCIES MATCHES "CLI11")
        string(APPEND UDIAG_CONFIG_DEPENDENCIES "\nfind_dependency(CLI11)")
      endif()
      list(APPEND _new_libs "${_l}")
    endforeach()
    set_target_properties(udiag PROPERTIES INTERFACE_LINK_LIBRARIES "${_new_libs}")
  endif()

  # ${prefix}/include for installed users, unless the target already says so.
  set(_udiag_includes INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  if(_inc MATCHES "INSTALL_INTERFACE")
    set(_udiag_includes "")
  endif()
  install(TARGETS udiag EXPORT udiagTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          ${_udiag_includes})
  install(EXPORT udiagTargets
          NAMESPACE udiag::
          FILE udiagTargets.cmake
          DESTINATION ${UDIAG_INSTALL_CMAKEDIR})

  configure_package_config_file(
    "${CMAKE_CURRENT_LIST_DIR}/udiagConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/cmake/udiagConfig.cmake"
    INSTALL_DESTINATION ${UDIAG_INSTALL_CMAKEDIR})
  write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/cmake/udiagConfigVersion.cmake"
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)  # 0.x: a minor bump may break the ABI
  install(FILES "${PROJECT_BINARY_DIR}/cmake/udiagConfig.cmake"
                "${PROJECT_BINARY_DIR}/cmake/udiagConfigVersion.cmake"
          DESTINATION ${UDIAG_INSTALL_CMAKEDIR})

  # udiag.pc: the prefix is only known at install time (`cmake --install
  # --prefix DIR` overrides CMAKE_INSTALL_PREFIX), so the file is made then.
  foreach(_kind LIB INCLUDE)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}DIR}")
      set(UDIAG_PC_${_kind}DIR "${CMAKE_INSTALL_${_kind}DIR}")
    else()
      set(UDIAG_PC_${_kind}DIR "\${prefix}/${CMAKE_INSTALL_${_kind}DIR}")
    endif()
  endforeach()
  set(UDIAG_PC_PREFIX "@UDIAG_PC_PREFIX@")  # filled in at install time
  configure_file("${CMAKE_CURRENT_LIST_DIR}/udiag.pc.in" "${PROJECT_BINARY_DIR}/cmake/udiag.pc.tmpl" @ONLY)
  install(CODE "
    set(UDIAG_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${PROJECT_BINARY_DIR}/cmake/udiag.pc.tmpl\" \"${PROJECT_BINARY_DIR}/cmake/udiag.pc\" @ONLY)
  ")
  install(FILES "${PROJECT_BINARY_DIR}/cmake/udiag.pc" DESTINATION ${UDIAG_INSTALL_PKGCONFIGDIR})
endif()
