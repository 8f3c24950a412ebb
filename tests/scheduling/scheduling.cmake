# How ctest -j schedules the tests. Run by ctest (TEST_INCLUDE_FILES) after
# gtest_discover_tests has listed each target's tests in <target>_TESTS.
#
# Costs. ctest -j starts the tests of highest COST first; after a run it takes the costs
# it measured (Testing/Temporary/CTestCostData.txt), but a clean clone has none, and a
# minute-long test started last leaves one core idle while it runs. So the tests that take
# tens of seconds say so here (seconds in the release build, about the same under the
# sanitizers): they start first and the short ones fill in beside them.
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

# Cores. Every test takes one slot of the resource `cpus` (RESOURCE_GROUPS cpus:1: the
# gtest targets from flowrt_test, the tests added by hand where they are added), but for
# the tests on the PostgreSQL test server, whose time is the database's round trips,
# fsyncs and leases: the cluster's seeded fault runs take 80 s of real time and 8 s of
# CPU. They take none, so they run beside the busy ones instead of holding a core idle.
# server_test, store_test and cli_test hold both kinds; the one place that tells them
# apart (by name, "Postgres") gives the fixture to one and the slot to the other, and
# both to a benchmark on the database, which is busy as well as waiting
# (tests/store/postgres_fixture.cmake). ctest allocates resources only when given a
# resource specification: scripts/test.sh gives one with a slot per core and runs twice
# as many tests at a time, so at most one busy test per core runs, and the waiting ones in
# the other places. A plain `ctest -j N` ignores the groups and runs N tests of any kind
# at a time, as before. Scheduling.EveryTestTakesACore_ButTheOnesWaitingOnTheDatabase
# (check_resources.py) holds the rule.
