"""Pass/fail counting for the project's Python checks (tests/schema/check_schemas.py,
tests/api/check_openapi.py): each check is counted, each failure kept with its message,
and report() prints the failures and 'N passed, M failed' and gives the exit status."""


class Checks:
    """Counts checks; not thread-safe (a check script runs on one thread)."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failures = []

    def check(self, ok, message):
        """Counts `ok` as a pass, or keeps `message` as a failure; returns `ok`."""
        if ok:
            self.passed += 1
        else:
            self.failures.append(message)
        return ok

    def fail(self, message):
        self.failures.append(message)

    def report(self, summary=None):
        """Prints every failure, the summary line if any, and the counts; returns the exit
        status: 1 if any check failed, else 0."""
        for f in self.failures:
            print(f"{self.name}: FAIL: {f}")
        if summary:
            print(f"{self.name}: {summary}")
        print(f"{self.passed} passed, {len(self.failures)} failed")
        return 1 if self.failures else 0
