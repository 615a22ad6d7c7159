# atr_case_tests(PREFIX RUNNER [TIMEOUT s] [LABEL l] [SKIP_RETURN_CODE rc] [SKIP case...])
#
# Each test runner keeps its one list of cases; CMake asks it
# (`RUNNER --list`) and adds one test PREFIX.<case> per case, run as
# `RUNNER --build <build dir> <case>`, so `ctest -R prefix.case` names what
# failed and a new case needs no CMake edit.  SKIP leaves out cases that
# need extra arguments (registered by hand next to the call); SKIP_RETURN_CODE
# is the exit status that means "skipped" (77: a missing server).
function(atr_case_tests prefix runner)
  cmake_parse_arguments(A "" "TIMEOUT;LABEL;SKIP_RETURN_CODE" "SKIP" ${ARGN})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${runner})
  execute_process(COMMAND ${ATR_PY3} ${runner} --list
    OUTPUT_VARIABLE cases OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR cases STREQUAL "")
    message(FATAL_ERROR "${runner} --list failed")
  endif()
  string(REPLACE "\n" ";" cases "${cases}")
  foreach(c ${cases})
    if(c IN_LIST A_SKIP)
      continue()
    endif()
    add_test(NAME ${prefix}.${c} COMMAND ${ATR_PY3} ${runner} --build ${CMAKE_BINARY_DIR} ${c})
    if(A_TIMEOUT)
      set_tests_properties(${prefix}.${c} PROPERTIES TIMEOUT ${A_TIMEOUT})
    endif()
    if(A_SKIP_RETURN_CODE)
      set_tests_properties(${prefix}.${c} PROPERTIES SKIP_RETURN_CODE ${A_SKIP_RETURN_CODE})
    endif()
    if(A_LABEL)
      set_tests_properties(${prefix}.${c} PROPERTIES LABELS ${A_LABEL})
    endif()
  endforeach()
endfunction()
