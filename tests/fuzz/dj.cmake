# dj/malloc reader fuzzing (included from tests/fuzz/CMakeLists.txt).
#  fuzz_dj_replay: plain C, always built; ctest runs truncations of two seeds
#    and 5000 deterministic mutations (each also translated or converted, and
#    the result verified: the slow part under ASan) (run it under -DALLOCTRACE_SANITIZE=ON).
#  fuzz_dj: libFuzzer target, only with -DALLOCTRACE_FUZZ=ON and clang:
#    ./fuzz_dj -max_total_time=120 NEW_CORPUS_DIR
add_executable(fuzz_dj_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_dj.c)
target_compile_definitions(fuzz_dj_replay PRIVATE FUZZ_DJ_MAIN)
target_link_libraries(fuzz_dj_replay PRIVATE atr_cmds)
atr_tool_flags(fuzz_dj_replay)
add_test(NAME fuzz_dj_replay COMMAND fuzz_dj_replay 5000)

if(ALLOCTRACE_FUZZ)
  file(GLOB ATR_FUZZ_DJ_SRC CONFIGURE_DEPENDS
    ${CMAKE_SOURCE_DIR}/src/util/*.c
    ${CMAKE_SOURCE_DIR}/src/format/*.c
    ${CMAKE_SOURCE_DIR}/src/replay/rp_convert.c)
  add_executable(fuzz_dj ${CMAKE_CURRENT_LIST_DIR}/fuzz_dj.c ${ATR_FUZZ_DJ_SRC})
  target_include_directories(fuzz_dj PRIVATE ${CMAKE_SOURCE_DIR}/src
    ${CMAKE_SOURCE_DIR}/src/util ${CMAKE_SOURCE_DIR}/src/format)
  target_compile_options(fuzz_dj PRIVATE ${ALLOCTRACE_WARNINGS} ${ATR_FUZZ_FLAGS})
  target_link_options(fuzz_dj PRIVATE ${ATR_FUZZ_FLAGS})
endif()
