-- wrk script for bench/serve.sh: POSTs the log named by FF_BENCH_LOG to /api/diagnose and
-- counts answers that are not 200 or do not name the expected verdict.
local f = assert(io.open(os.getenv("FF_BENCH_LOG"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "text/plain"
local expected = '"verdict": "' .. (os.getenv("FF_BENCH_VERDICT") or "failed") .. '"'
local wrong = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, expected, 1, true) then wrong = wrong + 1 end
end
function done(summary, latency, requests)
  io.write(string.format("wrong answers: %d (of this thread's share; non-2xx: %d)\n", wrong, summary.errors.status))
end
