# Run by ctest (TEST_INCLUDE_FILES) after gtest_discover_tests has listed each target's
# tests in <target>_TESTS.
#
# The label `one_thread`: tests whose code runs on the calling thread alone and that take
# seconds under ThreadSanitizer. They are the values nested a million deep (plans/ walks
# them in loops, and the tests build and compare them in loops) and the compiler's memo
# over random call graphs (compiler/ starts no thread). ThreadSanitizer reports races
# between threads, so it has nothing to find in them; scripts/test.sh leaves them out of
# the TSan suite (about 200 s of its test time) and runs them in the release and ASan
# suites. A test that starts a thread or an engine does not belong here.
# Both patterns must match: a renamed test would otherwise drop out of the label unseen.
set(flowrt_one_thread_deep 0)
set(flowrt_one_thread_memo 0)
foreach(flowrt_one_thread_test IN LISTS plans_test_TESTS compiler_test_TESTS)
  if(flowrt_one_thread_test MATCHES "AMillionDeep")
    math(EXPR flowrt_one_thread_deep "${flowrt_one_thread_deep} + 1")
  elseif(flowrt_one_thread_test MATCHES "^CheckMemoTest[.]")
    math(EXPR flowrt_one_thread_memo "${flowrt_one_thread_memo} + 1")
  else()
    continue()
  endif()
  set_tests_properties("${flowrt_one_thread_test}" PROPERTIES LABELS one_thread)
endforeach()
if(flowrt_one_thread_deep EQUAL 0 OR flowrt_one_thread_memo EQUAL 0)
  message(FATAL_ERROR "tests/scheduling/one_thread.cmake: a pattern matched no test (AMillionDeep matched "
                      "${flowrt_one_thread_deep}, ^CheckMemoTest. matched ${flowrt_one_thread_memo}): were they "
                      "renamed? Name them here again")
endif()
