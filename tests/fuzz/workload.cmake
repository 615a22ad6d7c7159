# Workload fuzzing (included from tests/fuzz/CMakeLists.txt).
#  fuzz_workload_replay: plain C, always built; ctest runs 20000 deterministic
#    mutations of workloads and traces (run it under -DALLOCTRACE_SANITIZE=ON).
#  fuzz_workload: libFuzzer target, only with -DALLOCTRACE_FUZZ=ON and clang:
#    ./fuzz_workload -max_total_time=120 NEW_CORPUS_DIR
add_executable(fuzz_workload_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_workload.c)
target_compile_definitions(fuzz_workload_replay PRIVATE FUZZ_WORKLOAD_MAIN)
target_link_libraries(fuzz_workload_replay PRIVATE atr_cmds atr_testwriter)
atr_tool_flags(fuzz_workload_replay)
add_test(NAME fuzz_workload_replay COMMAND fuzz_workload_replay 20000
  ${CMAKE_SOURCE_DIR}/tests/fixtures/v1_three_threads.wl)

if(ALLOCTRACE_FUZZ)
  file(GLOB ATR_FUZZ_WL_SRC CONFIGURE_DEPENDS
    ${CMAKE_SOURCE_DIR}/src/util/*.c
    ${CMAKE_SOURCE_DIR}/src/format/*.c
    ${CMAKE_SOURCE_DIR}/src/liveset/*.c
    ${CMAKE_SOURCE_DIR}/src/replay/rp_convert.c
    ${CMAKE_SOURCE_DIR}/src/replay/rp_pipe.c)
  add_executable(fuzz_workload ${CMAKE_CURRENT_LIST_DIR}/fuzz_workload.c ${ATR_FUZZ_WL_SRC})
  target_include_directories(fuzz_workload PRIVATE ${CMAKE_SOURCE_DIR}/src
    ${CMAKE_SOURCE_DIR}/src/util ${CMAKE_SOURCE_DIR}/src/format
    ${CMAKE_SOURCE_DIR}/src/platform)
  target_compile_options(fuzz_workload PRIVATE ${ALLOCTRACE_WARNINGS} ${ATR_FUZZ_FLAGS})
  target_link_options(fuzz_workload PRIVATE ${ATR_FUZZ_FLAGS})
  target_link_libraries(fuzz_workload PRIVATE PkgConfig::ZSTD)
endif()
