-- What the wrk scripts of bench/http report once a run is done (wrk's `done`): requests,
-- errors (connection errors, timeouts, and answers of 400 or more), duration, rate and
-- latency percentiles, one "name value" line each. Loaded by each script with dofile.
return function(summary, latency, requests)
  io.write(string.format("requests %d\nerrors %d\nseconds %.3f\nrequests_per_s %.0f\n", summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.duration / 1e6, summary.requests / (summary.duration / 1e6)))
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("latency_p%s_ms %.3f\n", tostring(p), latency:percentile(p) / 1000))
  end
end
