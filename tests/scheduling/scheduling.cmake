# Run by ctest (TEST_INCLUDE_FILES) after gtest_discover_tests has listed each target's
# tests in <target>_TESTS. ctest -j starts the tests of highest COST first; after a run it
# takes the costs it measured (Testing/Temporary/CTestCostData.txt), but a clean clone
# has none, and a minute-long test started last leaves one core idle while it runs. So
# the tests that take tens of seconds say so here (seconds in the release build, about
# the same under the sanitizers): they start first and the short ones fill in beside them.
foreach(flowrt_long_test IN LISTS server_test_TESTS crash_test_TESTS simulation_test_TESTS store_test_TESTS)
  if(flowrt_long_test MATCHES "^ClusterPostgresProcessTest[.]ThreeNodes_")
    set_tests_properties("${flowrt_long_test}" PROPERTIES COST 80)
  elseif(flowrt_long_test MATCHES "^CrashTest[.]")
    set_tests_properties("${flowrt_long_test}" PROPERTIES COST 40)
  elseif(flowrt_long_test MATCHES "^Part/SimulatedSeeds[.]")
    set_tests_properties("${flowrt_long_test}" PROPERTIES COST 25)
  elseif(flowrt_long_test MATCHES "^(Part/ThreadSeeds[.]|ClusterPostgresProcessTest[.]|ClusterPostgresTest[.]AContextParked)")
    set_tests_properties("${flowrt_long_test}" PROPERTIES COST 12)
  endif()
endforeach()
