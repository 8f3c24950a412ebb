// The sanitizers' run-time options for every executable of a sanitizer build (linked in by
// the top-level CMakeLists.txt when FLOWRT_SANITIZE is set). Each sanitizer asks for these
// at start-up; an environment variable of the same name (ASAN_OPTIONS, ...) still adds to
// or overrides them. Compiled in, they hold for every test and every program a test runs,
// however it is started.
extern "C" {

// Leaks are errors; any report stops the program (so a test fails, never just prints).
const char* __asan_default_options() { return "detect_leaks=1:abort_on_error=1"; }

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

#ifdef FLOWRT_TSAN_SUPPRESSIONS
const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" FLOWRT_TSAN_SUPPRESSIONS;
}
#endif

}  // extern "C"
