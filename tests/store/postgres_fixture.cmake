# Run by ctest (TEST_INCLUDE_FILES) after gtest_discover_tests has added the tests of
# store_test, cli_test and server_test and listed them in <target>_TESTS: those about
# PostgreSQL (named so) need the fixture `postgres`
# (the server tests/CMakeLists.txt starts), the others do not wait for it. The others
# take a core (RESOURCE_GROUPS cpus:1), as every test of the other targets does; the
# ones on the database wait on it and take none (tests/scheduling/scheduling.cmake).
# A benchmark on the database (BenchStoreTest's Postgres case: `flowrt bench` with its
# workers and the server's backend) keeps both cores busy as well as waiting: it needs
# the fixture and takes a core.
foreach(flowrt_pg_test IN LISTS store_test_TESTS cli_test_TESTS server_test_TESTS)
  if(flowrt_pg_test MATCHES "^Stores/BenchStoreTest[.][^ ]*/Postgres")
    set_tests_properties("${flowrt_pg_test}" PROPERTIES FIXTURES_REQUIRED postgres RESOURCE_GROUPS cpus:1)
  elseif(flowrt_pg_test MATCHES "Postgres")
    set_tests_properties("${flowrt_pg_test}" PROPERTIES FIXTURES_REQUIRED postgres)
  else()
    set_tests_properties("${flowrt_pg_test}" PROPERTIES RESOURCE_GROUPS cpus:1)
  endif()
  # The cluster's process tests kill -9 and stop nodes: labelled as the crash tests are,
  # so that the TSan suite leaves them out (scripts/test.sh).
  if(flowrt_pg_test MATCHES "^ClusterPostgresProcessTest[.]")
    set_tests_properties("${flowrt_pg_test}" PROPERTIES LABELS crash)
  endif()
endforeach()
