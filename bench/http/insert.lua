-- wrk script: each request inserts an incident (which starts the project's record-triggered
-- flow), with a bearer token when FLOWRT_TOKEN is set, and an Idempotency-Key of its own
-- when FLOWRT_KEYED is set. Reports latency percentiles.
local token = os.getenv("FLOWRT_TOKEN")
local keyed = os.getenv("FLOWRT_KEYED")
local run = tostring(os.time()) .. "-" .. tostring(math.random(1000000000))
local n = 0
request = function()
  n = n + 1
  local headers = {["Content-Type"] = "application/json"}
  if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
  if keyed and keyed ~= "" then headers["Idempotency-Key"] = "insert-" .. run .. "-" .. n end
  local body = string.format('{"number": "INC%d", "priority": %d, "assignment_group": "network"}', n, (n % 4) + 1)
  return wrk.format("POST", "/api/tables/incident/records", headers, body)
end
-- The report every script of bench/http gives (report.lua, beside this one).
done = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")
