-- Shared by the wrk scripts: prints one machine-readable line when the run ends, parsed by report.ts.
-- Latencies are in microseconds; "non2xx" counts responses that were not 2xx/3xx (wrk's status errors).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"non2xx":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
