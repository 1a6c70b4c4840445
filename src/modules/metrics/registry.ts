/**
 * The metrics registry behind GET /metrics: collectors are functions run at scrape time that return
 * metric families; rendering follows the Prometheus text exposition format 0.0.4. Other modules add their
 * own (e.g. webhook deliveries by outcome) with `registry.add(collector)`; nothing runs per request here.
 */
export type MetricType = 'counter' | 'gauge' | 'histogram'

export interface Sample {
  /** Suffix appended to the family name (`_bucket`, `_sum`, `_count` for histograms), usually ''. */
  suffix?: string
  labels?: Record<string, string>
  value: number
}

export interface MetricFamily {
  name: string
  help: string
  type: MetricType
  samples: Sample[]
}

/** May read the database (a promise): every collector of a scrape runs at once; one that fails is left out (`render`). */
export type Collector = () => MetricFamily[] | Promise<MetricFamily[]>

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

export function renderFamilies(families: MetricFamily[]): string {
  const lines: string[] = []
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`)
    for (const s of f.samples) {
      const labels = s.labels ? Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`) : []
      lines.push(`${f.name}${s.suffix ?? ''}${labels.length ? `{${labels.join(',')}}` : ''} ${formatValue(s.value)}`)
    }
  }
  return lines.join('\n') + '\n'
}

export class MetricsRegistry {
  private readonly collectors: Collector[] = []

  add(collector: Collector): void {
    this.collectors.push(collector)
  }

  /**
   * Every collector's families. One that fails (the database away) is left out and counted in
   * `fixloop_metrics_collectors_failed`, so the scrape still answers with the rest: this node's request
   * counters and process gauges are what shows an outage while it lasts.
   */
  async render(): Promise<string> {
    const results = await Promise.allSettled(this.collectors.map(async (c) => c()))
    const families = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []))
    const failed = results.filter((r) => r.status === 'rejected').length
    families.push({ name: 'fixloop_metrics_collectors_failed', help: 'Collectors of this scrape that could not read their figures (the database away): their families are missing from it.', type: 'gauge', samples: [{ value: failed }] })
    return renderFamilies(families)
  }
}
