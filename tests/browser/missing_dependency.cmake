# Stands in for a browser test whose tools are missing at configure time: fails saying
# what to install, so that a machine without a browser never passes the test silently.
message(FATAL_ERROR "${MESSAGE}")
