# Network stream reader fuzzing (docs/NET_FORMAT.md; included from
# tests/fuzz/CMakeLists.txt).
#  fuzz_net_replay: plain C, always built; ctest runs the built-in streams,
#    their truncations and 20000 deterministic mutations, each fed whole and
#    in pieces (run it under -DALLOCTRACE_SANITIZE=ON).
#  fuzz_net: libFuzzer target, only with -DALLOCTRACE_FUZZ=ON and clang:
#    ./fuzz_net -max_total_time=120 NEW_CORPUS_DIR
add_executable(fuzz_net_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_net.c)
target_compile_definitions(fuzz_net_replay PRIVATE FUZZ_NET_MAIN)
target_link_libraries(fuzz_net_replay PRIVATE atr_format)
atr_tool_flags(fuzz_net_replay)
add_test(NAME fuzz_net_replay COMMAND fuzz_net_replay 10000)

if(ALLOCTRACE_FUZZ)
  file(GLOB ATR_FUZZ_NET_SRC CONFIGURE_DEPENDS
    ${CMAKE_SOURCE_DIR}/src/util/*.c
    ${CMAKE_SOURCE_DIR}/src/format/*.c)
  add_executable(fuzz_net ${CMAKE_CURRENT_LIST_DIR}/fuzz_net.c ${ATR_FUZZ_NET_SRC})
  target_include_directories(fuzz_net PRIVATE ${CMAKE_SOURCE_DIR}/src
    ${CMAKE_SOURCE_DIR}/src/util ${CMAKE_SOURCE_DIR}/src/format)
  target_compile_options(fuzz_net PRIVATE ${ALLOCTRACE_WARNINGS} ${ATR_FUZZ_FLAGS})
  target_link_options(fuzz_net PRIVATE ${ATR_FUZZ_FLAGS})
  target_link_libraries(fuzz_net PRIVATE PkgConfig::ZSTD)
endif()
