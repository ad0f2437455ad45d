# Precompiled headers (RDMAK8S_PCH, on in the clang presets asan and tsan): most of a translation
# unit's compile time here is nlohmann/json, gRPC/protobuf and gtest/gmock, parsed and their
# templates instantiated again in every one of ~250 TUs. Three PCHs, each built once and reused
# by every target of its kind (REUSE_FROM), carry them:
#
#   rdmak8s_pch       the product's heavy third-party headers: every library (-fPIC)
#   rdmak8s_exe_pch   the same for every other executable (binaries, tools: -fPIE)
#   rdmak8s_test_pch  the same plus gtest/gmock: every target made by rdmak8s_add_test (-fPIE)
#
# (clang refuses a PCH built -fPIC in a -fPIE compile, and CMAKE_POSITION_INDEPENDENT_CODE gives
# libraries the one and executables the other.)
# Only headers no target's own macros change go in (spdlog, which SPDLOG_ACTIVE_LEVEL configures,
# stays out): clang refuses a PCH whose macros differ from the TU's, and a header compiled under
# other macros than the TU's would change its meaning silently. The g++ presets (default,
# release) build without: through a PCH, g++ 12 at -O2 reports -Warray-bounds and
# -Wstringop-overflow inside libstdc++'s own headers (dcb_codec.cc's std::string, which it keeps
# quiet about at -O2 without one), and -Werror makes that a failed build. They also keep a
# missing #include failing.
set(RDMAK8S_PCH_HEADERS
  $<$<COMPILE_LANGUAGE:CXX>:<nlohmann/json.hpp$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<grpcpp/grpcpp.h$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<string$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<vector$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<map$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<functional$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<filesystem$<ANGLE-R>>)
set(RDMAK8S_TEST_PCH_HEADERS ${RDMAK8S_PCH_HEADERS}
  $<$<COMPILE_LANGUAGE:CXX>:<gtest/gtest.h$<ANGLE-R>>
  $<$<COMPILE_LANGUAGE:CXX>:<gmock/gmock.h$<ANGLE-R>>)

# Every target in <dir> and below.
function(rdmak8s_targets_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    rdmak8s_targets_under(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Called once, after every target exists. The generated protobuf libraries (built with -w, their
# headers are the PCH's own) and targets without C++ sources keep compiling as they are.
function(rdmak8s_apply_pch)
  if(NOT RDMAK8S_PCH)
    return()
  endif()
  foreach(pch rdmak8s_pch rdmak8s_exe_pch rdmak8s_test_pch)
    add_library(${pch} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cc)
  endforeach()
  target_precompile_headers(rdmak8s_pch PRIVATE ${RDMAK8S_PCH_HEADERS})
  target_precompile_headers(rdmak8s_exe_pch PRIVATE ${RDMAK8S_PCH_HEADERS})
  target_link_libraries(rdmak8s_test_pch PRIVATE GTest::gmock)
  target_precompile_headers(rdmak8s_test_pch PRIVATE ${RDMAK8S_TEST_PCH_HEADERS})
  foreach(pch rdmak8s_exe_pch rdmak8s_test_pch)
    set_target_properties(${pch} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${pch} PRIVATE -fPIE)
  endforeach()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # No build time in the PCH, so ccache can key what uses it (scripts/test.sh's sloppiness).
    foreach(pch rdmak8s_pch rdmak8s_exe_pch rdmak8s_test_pch)
      target_compile_options(${pch} PRIVATE -Xclang -fno-pch-timestamp)
    endforeach()
  endif()

  rdmak8s_targets_under(${PROJECT_SOURCE_DIR} targets)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$"
       OR t MATCHES "^rdmak8s_(exe_|test_)?pch$|_proto$")
      continue()
    endif()
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.(cc|cpp)$")
    if(NOT sources)
      continue()
    endif()
    get_target_property(is_test ${t} RDMAK8S_TEST)
    if(is_test)
      target_precompile_headers(${t} REUSE_FROM rdmak8s_test_pch)
    elseif(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${t} REUSE_FROM rdmak8s_exe_pch)
    else()
      target_precompile_headers(${t} REUSE_FROM rdmak8s_pch)
    endif()
  endforeach()
endfunction()
