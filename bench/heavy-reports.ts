/**
 * Heavy reports against the compiled binary (issue 28 item 3): two clients submit reports at every limit
 * (8 KB text, 500 console messages of 1,000 characters of digits and spaces, 4 KB metadata; ~510 K
 * characters of free text) as fast as the public rate limit lets them (they wait out each 429's
 * Retry-After), while a victim App in another Org submits an ordinary report every 500 ms and polls it
 * until it is sanitized, and a prober GETs /healthz every 20 ms. Prints /healthz latency (p50, p99, max),
 * the victim's submit-to-sanitized latency, what the attackers got through, the backlog left, and the CPU
 * time one heavy report takes to sanitize in this process (the figure that does not depend on the load of
 * a shared machine). Loopback only; bounded by --seconds (default 30) plus a 15 s drain wait.
 * `--multiplier 16` gives every bucket 16 times the tokens: the attackers then get as many heavy reports
 * through as before heavy reports were charged more (16 tokens each), which measures the sanitizing
 * changes alone.
 *
 * Usage: bun run build && bun bench/heavy-reports.ts [--seconds 30] [--multiplier 1]
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { sanitizeReport } from '../src/sanitize/report'

const ROOT = resolve(import.meta.dir, '..')
/** `FIXLOOP_BENCH_BINARY` runs another build (e.g. the commit before a change) under the same load. */
const BINARY = process.env.FIXLOOP_BENCH_BINARY ?? join(ROOT, 'dist', 'fixloop')

/** A report within every limit whose free text is digits and spaces (what made the sanitizer slowest). */
export function heavyReport(seed = 1): { text: string; consoleLogs: { level: string; message: string; ts: number }[]; metadata: Record<string, string> } {
  let s = seed
  const digits = (n: number) => {
    let out = ''
    while (out.length < n) {
      s = (s * 1103515245 + 12345) & 0x7fffffff
      out += s % 10 < 3 ? ' ' : String(s % 10)
    }
    return out
  }
  return {
    text: digits(8192),
    consoleLogs: Array.from({ length: 500 }, (_, i) => ({ level: 'log', message: digits(1000), ts: 1_763_880_000_000 + i })),
    metadata: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, digits(100)])),
  }
}

const quantile = (xs: number[], q: number): number => {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

async function cli(dataDir: string, args: string[]): Promise<Record<string, string>> {
  const p = Bun.spawn([BINARY, ...args, '--data-dir', dataDir, '--json'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
  const out = await new Response(p.stdout).text()
  if ((await p.exited) !== 0) throw new Error(`fixloop ${args.join(' ')}: ${await new Response(p.stderr).text()}`)
  return JSON.parse(out.trim())
}

async function tenant(dataDir: string, name: string): Promise<{ key: string; pub: string }> {
  const org = await cli(dataDir, ['org', 'create', '--name', name])
  const key = await cli(dataDir, ['key', 'create', '--org', org.id, '--name', 'bench'])
  const app = await cli(dataDir, ['app', 'create', '--org', org.id, '--name', `${name} App`])
  return { key: key.key, pub: app.publicKey }
}

async function serve(dataDir: string, multiplier: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  // Real rate limits; the attackers are two client addresses (X-Forwarded-For from a trusted proxy).
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_TRUST_PROXY: '1', FIXLOOP_RATE_LIMIT_MULTIPLIER: String(multiplier) },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    if (await fetch(url + '/healthz').then((r) => r.ok, () => false)) break
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error('fixloop serve did not start')
    await Bun.sleep(50)
  }
  return {
    url,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

export interface AttackFigures {
  healthz: { n: number; p50: number; p99: number; max: number }
  victim: { submitted: number; sanitized: number; p50: number; p99: number; max: number }
  heavy: { accepted: number; limited: number }
  backlogAtEnd: number
}

/**
 * Runs the attack for `seconds` against a fresh binary and data dir; `victimEveryMs` between the
 * victim's reports; each victim report is polled until sanitized for at most `victimWaitMs`.
 */
export async function runAttack(seconds: number, { victimEveryMs = 500, victimWaitMs = 15_000, multiplier = 1 } = {}): Promise<AttackFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-heavy-'))
  const attacker = await tenant(dataDir, 'Attacker')
  const victim = await tenant(dataDir, 'Victim')
  const server = await serve(dataDir, multiplier)
  const until = Date.now() + seconds * 1000
  const body = JSON.stringify(heavyReport())
  const figures: AttackFigures = { healthz: { n: 0, p50: 0, p99: 0, max: 0 }, victim: { submitted: 0, sanitized: 0, p50: 0, p99: 0, max: 0 }, heavy: { accepted: 0, limited: 0 }, backlogAtEnd: 0 }
  try {
    const attack = async (address: string) => {
      while (Date.now() < until) {
        const r = await fetch(server.url + '/v1/feedback', {
          method: 'POST',
          headers: { authorization: `Bearer ${attacker.pub}`, 'content-type': 'application/json', 'x-forwarded-for': address },
          body,
        })
        await r.arrayBuffer()
        if (r.status === 201) figures.heavy.accepted++
        else if (r.status === 429) {
          figures.heavy.limited++
          const wait = Number(r.headers.get('retry-after') ?? 1) * 1000
          await Bun.sleep(Math.max(0, Math.min(wait, until - Date.now())))
        } else throw new Error(`heavy report answered ${r.status}`)
      }
    }
    const healthz: number[] = []
    const probe = async () => {
      while (Date.now() < until) {
        const t0 = performance.now()
        await (await fetch(server.url + '/healthz')).arrayBuffer()
        healthz.push(performance.now() - t0)
        await Bun.sleep(20)
      }
    }
    const latencies: number[] = []
    const one = async (i: number) => {
      const r = await fetch(server.url + '/v1/feedback', {
        method: 'POST',
        headers: { authorization: `Bearer ${victim.pub}`, 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.9' },
        body: JSON.stringify({ text: `Victim report ${i}: checkout fails, call me at +44 20 7946 0958`, consoleLogs: [{ level: 'error', message: 'TypeError: x is undefined', ts: 1 }] }),
      })
      const { id } = (await r.json()) as { id: string }
      const t0 = performance.now()
      figures.victim.submitted++
      while (performance.now() - t0 < victimWaitMs) {
        const g = (await (await fetch(`${server.url}/v1/feedback/${id}`, { headers: { authorization: `Bearer ${victim.key}` } })).json()) as { status: string }
        if (g.status !== 'received' && g.status !== 'sanitizing') {
          latencies.push(performance.now() - t0)
          figures.victim.sanitized++
          return
        }
        await Bun.sleep(25)
      }
    }
    const victimLoop = async () => {
      const pending: Promise<void>[] = []
      for (let i = 0; Date.now() < until; i++) {
        pending.push(one(i))
        await Bun.sleep(victimEveryMs)
      }
      await Promise.all(pending)
    }
    await Promise.all([attack('203.0.113.1'), attack('203.0.113.2'), probe(), victimLoop()])
    const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
    try {
      figures.backlogAtEnd = (db.query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
    } finally {
      db.close()
    }
    figures.healthz = { n: healthz.length, p50: quantile(healthz, 0.5), p99: quantile(healthz, 0.99), max: Math.max(...healthz) }
    figures.victim = { ...figures.victim, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.length ? Math.max(...latencies) : NaN }
    return figures
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** CPU milliseconds this process spends sanitizing one heavy report (best of `rounds`). */
export function sanitizeCpuMs(rounds = 5): number {
  const r = heavyReport()
  const report = { text: r.text, url: null, userAgent: null, consoleLogs: r.consoleLogs, metadata: r.metadata, componentTarget: null }
  const cpu = () => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1000
  }
  let best = Infinity
  for (let i = 0; i < rounds; i++) {
    const t0 = cpu()
    sanitizeReport(report)
    best = Math.min(best, cpu() - t0)
  }
  return best
}

if (import.meta.main) {
  const i = process.argv.indexOf('--seconds')
  const seconds = Math.max(1, Math.min(120, i === -1 ? 30 : Number(process.argv[i + 1])))
  const m = process.argv.indexOf('--multiplier')
  const multiplier = Math.max(0.01, Math.min(1000, m === -1 ? 1 : Number(process.argv[m + 1])))
  const uptime = () => `load average ${loadavg().map((l) => l.toFixed(2)).join(', ')}`
  console.log(`heavy reports, ${seconds} s, rate limits ×${multiplier}, ${uptime()}`)
  console.log(`sanitizing one heavy report: ${sanitizeCpuMs().toFixed(0)} ms CPU (best of 5, this process)`)
  const f = await runAttack(seconds, { multiplier })
  const ms = (x: number) => `${x.toFixed(1)} ms`
  console.log(`/healthz          n=${f.healthz.n}  p50 ${ms(f.healthz.p50)}  p99 ${ms(f.healthz.p99)}  max ${ms(f.healthz.max)}`)
  console.log(`victim sanitized  ${f.victim.sanitized}/${f.victim.submitted}  p50 ${ms(f.victim.p50)}  p99 ${ms(f.victim.p99)}  max ${ms(f.victim.max)}`)
  console.log(`heavy reports     accepted ${f.heavy.accepted}, 429 ${f.heavy.limited}; process jobs left at the end ${f.backlogAtEnd}`)
  console.log(`after: ${uptime()}`)
}
