-- wrk script: each request reads one context's record, GET /api/contexts/ctx-N with N drawn
-- at random from 1..FLOWRT_CONTEXTS (contexts that have ended), with a bearer token when
-- FLOWRT_TOKEN is set. Reports latency percentiles; an answer of 400 or more (a context
-- not found) counts as an error.
local token = os.getenv("FLOWRT_TOKEN")
local contexts = tonumber(os.getenv("FLOWRT_CONTEXTS") or "1")
local headers = {}
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/api/contexts/ctx-" .. math.random(contexts), headers)
end
-- The report every script of bench/http gives (report.lua, beside this one).
done = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")
