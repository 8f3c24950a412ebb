-- wrk script: each request reads one context's record, GET /api/contexts/ctx-N with N drawn
-- at random from 1..FLOWRT_CONTEXTS (contexts that have ended), with a bearer token when
-- FLOWRT_TOKEN is set. Reports latency percentiles and the answers that were not 200.
local token = os.getenv("FLOWRT_TOKEN")
local contexts = tonumber(os.getenv("FLOWRT_CONTEXTS") or "1")
local headers = {}
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/api/contexts/ctx-" .. math.random(contexts), headers)
end
local not_ok = 0
response = function(status, headers, body)
  if status ~= 200 then not_ok = not_ok + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d\nerrors %d\nseconds %.3f\nrequests_per_s %.0f\n", summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.duration / 1e6, summary.requests / (summary.duration / 1e6)))
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("latency_p%s_ms %.3f\n", tostring(p), latency:percentile(p) / 1000))
  end
end
