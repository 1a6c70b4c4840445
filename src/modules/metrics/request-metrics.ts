/**
 * Request counts by route and status and a latency histogram by route, kept in plain maps: one map
 * lookup, one array scan over 12 bucket bounds and three additions per request (this is on the hot path).
 * Routes are Elysia's route patterns (`/v1/feedback/:id`), so the label set stays small; a request that
 * matched no route counts as route="unmatched".
 */
import type { MetricFamily } from './registry'

export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]

interface RouteStats {
  method: string
  route: string
  byStatus: Map<number, number>
  buckets: number[]
  sum: number
  count: number
}

export class RequestMetrics {
  private readonly routes = new Map<string, RouteStats>()

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = method + ' ' + route
    let s = this.routes.get(key)
    if (!s) {
      s = { method, route, byStatus: new Map(), buckets: new Array(LATENCY_BUCKETS.length).fill(0), sum: 0, count: 0 }
      this.routes.set(key, s)
    }
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1)
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= LATENCY_BUCKETS[i]) {
        s.buckets[i]++
        break
      }
    }
    s.sum += seconds
    s.count++
  }

  collect(): MetricFamily[] {
    const requests: MetricFamily = { name: 'fixloop_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status.', type: 'counter', samples: [] }
    const latency: MetricFamily = { name: 'fixloop_http_request_duration_seconds', help: 'Time from receiving a request to its handler result, by method and route pattern.', type: 'histogram', samples: [] }
    for (const s of this.routes.values()) {
      const base = { method: s.method, route: s.route }
      for (const [status, n] of s.byStatus) requests.samples.push({ labels: { ...base, status: String(status) }, value: n })
      let cumulative = 0
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]
        latency.samples.push({ suffix: '_bucket', labels: { ...base, le: String(le) }, value: cumulative })
      })
      latency.samples.push({ suffix: '_bucket', labels: { ...base, le: '+Inf' }, value: s.count })
      latency.samples.push({ suffix: '_sum', labels: base, value: s.sum })
      latency.samples.push({ suffix: '_count', labels: base, value: s.count })
    }
    return [requests, latency]
  }
}
