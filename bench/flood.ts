/**
 * A public App under a bot flood (issue 27 item 4), against the compiled binary on loopback.
 *
 * Two floods, each 10,000 junk submissions from 200 client addresses (X-Forwarded-For behind a trusted
 * proxy, FIXLOOP_TRUST_PROXY=1; 50 per address, under the 60-a-minute rate limit) mixed at random with 100
 * real reports from 100 other addresses:
 *   A. against an App with proofOfWork 'normal': most junk comes from a bot that does not run JavaScript
 *      (no proof of work: refused), a bounded part (--solving) from a bot that solves every challenge (at
 *      the raised flood difficulty) with and without widget signals (honeypot filled, a form sent in
 *      under a second); the real reports come from the widget (solved, honest signals);
 *   B. the same flood against an App with proofOfWork 'off': only the spam score stands between the junk
 *      and the inbox.
 * Prints per flood: junk refused / filed as spam / in the inbox (not spam), real reports caught as spam,
 * req/s; then the server's CPU per submission with and without proof of work (same reports; /proc CPU
 * ticks of the server process, processing drained), the verification alone in-process, and the time
 * Chromium spends solving at each difficulty (the widget's own Worker code, and the main-thread fallback).
 *
 * Usage: bun run build && bun bench/flood.ts [--junk 10000] [--addresses 200] [--real 100] [--solving 150]
 *        [--cpu-reports 250] [--cpu-apps 4] [--browser-solves 12] [--phases flood,cpu,browser] (flood = pow,off)
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { launchBrowser } from '../test/browser'
import { freePort, waitReady } from './cluster-services'

const ROOT = resolve(import.meta.dir, '..')
const BINARY = process.env.FIXLOOP_BENCH_BINARY ?? join(ROOT, 'dist', 'fixloop')
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : def
}
const JUNK = arg('junk', 10_000)
const ADDRESSES = arg('addresses', 200)
const REAL = arg('real', 100)
const SOLVING = arg('solving', 150)
/** At most ~290: challenges + submissions of the 'normal' App must stay under its flood threshold (600 a minute). */
const CPU_REPORTS = arg('cpu-reports', 250)
const CPU_APPS = arg('cpu-apps', 4)
const BROWSER_SOLVES = arg('browser-solves', 12)
/** Which parts run (default all): flood, cpu, browser. */
const PHASES = (process.argv.includes('--phases') ? process.argv[process.argv.indexOf('--phases') + 1] : 'flood,cpu,browser').split(',')
const CONCURRENCY = 24
const PROOF = 'x-fixloop-proof-of-work'

// ---------------------------------------------------------------------------------------------------------
// The server and its tenants

async function cli(dataDir: string, args: string[]): Promise<Record<string, any>> {
  const p = Bun.spawn([BINARY, ...args, '--data-dir', dataDir, '--json'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
  const out = await new Response(p.stdout).text()
  if ((await p.exited) !== 0) throw new Error(`fixloop ${args.join(' ')}: ${await new Response(p.stderr).text()}`)
  return JSON.parse(out.trim())
}

interface Tenant {
  orgId: string
  key: string
  apps: Record<string, { id: string; pub: string }>
}

async function tenant(dataDir: string, apps: Record<string, string>): Promise<Tenant> {
  const org = await cli(dataDir, ['org', 'create', '--name', 'Flood Co'])
  const key = await cli(dataDir, ['key', 'create', '--org', org.id, '--name', 'bench'])
  const out: Tenant = { orgId: org.id, key: key.key, apps: {} }
  for (const [name, level] of Object.entries(apps)) {
    const app = await cli(dataDir, ['app', 'create', '--org', org.id, '--name', name, '--proof-of-work', level])
    out.apps[name] = { id: app.id, pub: app.publicKey }
  }
  return out
}

async function serve(dataDir: string): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_TRUST_PROXY: '1' },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  await waitReady(url, proc)
  return {
    url,
    pid: proc.pid,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** CPU seconds (user + system) the process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  let total = 0
  for (const task of [`/proc/${pid}/stat`]) {
    const fields = readFileSync(task, 'utf8').split(') ')[1].split(' ')
    // Fields 14 and 15 (utime, stime) of stat(5), counted from the state field (3): indexes 11 and 12. Threads included.
    total += (Number(fields[11]) + Number(fields[12])) / 100
  }
  return total
}

// ---------------------------------------------------------------------------------------------------------
// Proof of work, as a script solves it (docs/widget.md "Backend scripts in public mode")

interface Challenge {
  algorithm: string
  challenge: string
  maxnumber: number
  salt: string
  signature: string
}

async function getChallenge(base: string, pub: string, address: string): Promise<{ required: boolean; challenge: Challenge | null }> {
  const r = await fetch(`${base}/v1/widget/challenge`, { headers: { authorization: `Bearer ${pub}`, 'x-forwarded-for': address } })
  if (r.status !== 200) throw new Error(`challenge answered ${r.status}: ${await r.text()}`)
  return r.json() as Promise<{ required: boolean; challenge: Challenge | null }>
}

let hashesDone = 0
let solveMs = 0
/** The number, by brute force from 0 (node:crypto, the salt's state copied per candidate). */
function solve(c: Challenge): number {
  const t0 = performance.now()
  const base = createHash('sha256').update(c.salt)
  for (let n = 0; n <= c.maxnumber; n++) {
    if (base.copy().update(String(n)).digest('hex') === c.challenge) {
      hashesDone += n + 1
      solveMs += performance.now() - t0
      return n
    }
  }
  throw new Error('no solution')
}

function proofHeader(c: Challenge, number: number): string {
  return Buffer.from(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number, salt: c.salt, signature: c.signature })).toString('base64')
}

/** Fetches a challenge as `address` and solves it; {} when the App asks for none. */
async function proofFor(base: string, pub: string, address: string): Promise<{ headers: Record<string, string>; maxnumber: number }> {
  const { required, challenge } = await getChallenge(base, pub, address)
  if (!required || !challenge) return { headers: {}, maxnumber: 0 }
  return { headers: { [PROOF]: proofHeader(challenge, solve(challenge)) }, maxnumber: challenge.maxnumber }
}

// ---------------------------------------------------------------------------------------------------------
// The reports

/** A small seeded generator, so every run sends the same flood. */
function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 0x100000000
  }
}
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]

const AREAS = ['checkout page', 'login form', 'search results', 'profile settings', 'invoice download', 'date picker on the booking form', 'shopping cart', 'notification bell', 'dark mode', 'avatar upload', 'password reset mail', 'store locator map', 'CSV export of orders', 'language switcher', 'billing page', 'coupon field', 'order history', 'two-factor setup', 'address autocomplete', 'subscription cancel flow']
const SYMPTOMS = [
  'the button stays grey and nothing happens when I click it',
  'I get a blank white page after about ten seconds',
  'the total shows the wrong currency (USD instead of EUR)',
  'it says "Something went wrong" with no details',
  'the spinner never stops',
  'my changes are lost after I press Save',
  'the text overlaps the footer on my phone',
  'it logs me out every time',
  'the dropdown closes before I can pick anything',
  'the page scrolls back to the top while I type',
  'the PDF that downloads is empty (0 bytes)',
  'dates are shown one day off',
  'I was charged twice for the same order',
  'the error message is in German although my language is English',
  'the image is rotated sideways after uploading',
]
const CONTEXTS = ['on Firefox 128 on Windows', 'on my iPhone (Safari)', 'since yesterday’s update', 'only when I am logged in with Google', 'on the second try', 'with an ad blocker on', 'on a slow train connection', 'after I changed my email address', 'in the mobile app’s web view', '']
const EXTRAS = [
  'Steps: open the page, fill in the form, press the button.',
  'It worked fine last week.',
  'Order number 48213 if that helps.',
  'I tried clearing the cache, same thing.',
  'Screenshot attached.',
  'See https://shop.example.com/orders/48213 for the order.',
  'My colleague has the same problem.',
  'Please fix this soon, I cannot finish my purchase.',
  '',
]

function realReport(i: number): { text: string; url: string; consoleLogs?: unknown[] } {
  const r = rng(1000 + i)
  const area = pick(r, AREAS)
  const symptom = pick(r, SYMPTOMS)
  const context = pick(r, CONTEXTS)
  const openings = [`On the ${area}, ${symptom}${context ? ' ' + context : ''}.`, `${area[0].toUpperCase() + area.slice(1)}: ${symptom}.${context ? ` Happens ${context}.` : ''}`, `Hi, when I use the ${area} ${symptom}${context ? ', ' + context : ''}.`]
  const text = `${pick(r, openings)} ${pick(r, EXTRAS)} ${pick(r, EXTRAS)}`.replace(/\s+/g, ' ').trim()
  const logs = r() < 0.4 ? [{ level: 'error', message: `TypeError: Cannot read properties of undefined (reading '${pick(r, ['total', 'id', 'items', 'user'])}')`, ts: 1_764_000_000_000 + i }] : undefined
  return { text, url: `https://shop.example.com/${area.split(' ')[0]}`, ...(logs ? { consoleLogs: logs } : {}) }
}

const PRODUCTS = ['replica watches', 'cheap viagra', 'casino bonus', 'crypto trading signals', 'SEO backlinks', 'essay writing service', 'weight loss pills', 'forex robot', 'Instagram followers', 'payday loans']
const DOMAINS = ['best-deal-shop.top', 'cheap-pills.xyz', 'win-big-casino.bet', 'seo-rank-boost.ru', 'free-followers.click', 'loans-now.biz']
const JUNK_TEMPLATES = [
  (p: string, d: string, n: number) => `Buy ${p} online at https://${d}/?ref=${n} best price guaranteed!!! https://${d}/shop`,
  (p: string, d: string) => `Hello admin, I found a problem on your site. Visit https://${d} for ${p} – limited offer, 80% off. https://${d}/deal`,
  (p: string, d: string, n: number) => `${p.toUpperCase()} ${p.toUpperCase()} discount code FREE${n % 97} at https://${d}`,
  (p: string, d: string) => `Great website! Check out my page about ${p}: https://${d} https://${d}/blog https://${d}/promo`,
  (p: string, d: string, n: number) => `Earn $${(n % 50) * 100} per day with ${p}. Click here: https://${d}/join`,
  (p: string, d: string) => `[url=https://${d}]${p}[/url] [url=https://${d}/buy]order ${p} now[/url]`,
]

function junkReport(i: number): { text: string; url?: string } {
  const r = rng(50_000 + i)
  const text = pick(r, JUNK_TEMPLATES)(pick(r, PRODUCTS), pick(r, DOMAINS), Math.floor(r() * 10_000))
  return r() < 0.5 ? { text, url: `https://${pick(r, DOMAINS)}/` } : { text }
}

type JunkKind = 'no_proof' | 'proof' | 'proof_honeypot' | 'proof_fast' | 'plain' | 'honeypot' | 'fast'

interface Job {
  real: boolean
  index: number
  address: string
  kind?: JunkKind
}

/** Junk from `ADDRESSES` addresses (10.x) and real reports from `REAL` other ones (172.16.x), shuffled. */
function jobs(withProof: boolean): Job[] {
  const r = rng(withProof ? 7 : 8)
  const list: Job[] = []
  const solvingEvery = SOLVING > 0 ? Math.max(1, Math.floor(JUNK / SOLVING)) : Infinity
  for (let i = 0; i < JUNK; i++) {
    const address = `10.${20 + (i % ADDRESSES >> 8)}.${(i % ADDRESSES) & 255}.7`
    let kind: JunkKind
    if (withProof) {
      const solving = i % solvingEvery === 0 && Math.floor(i / solvingEvery) < SOLVING
      kind = !solving ? 'no_proof' : (['proof', 'proof_honeypot', 'proof_fast'] as const)[Math.floor(i / solvingEvery) % 3]
    } else kind = r() < 0.6 ? 'plain' : r() < 0.5 ? 'honeypot' : 'fast'
    list.push({ real: false, index: i, address, kind })
  }
  for (let i = 0; i < REAL; i++) list.push({ real: true, index: i, address: `172.16.${i >> 8}.${(i & 255) + 1}` })
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1))
    ;[list[i], list[j]] = [list[j], list[i]]
  }
  return list
}

interface Outcome {
  job: Job
  status: number
  code?: string
  id?: string
  maxnumber?: number
}

async function submit(base: string, pub: string, job: Job, withProof: boolean): Promise<Outcome> {
  const r = rng(90_000 + job.index + (job.real ? 1e6 : 0))
  let body: Record<string, unknown>
  const headers: Record<string, string> = { authorization: `Bearer ${pub}`, 'content-type': 'application/json', 'x-forwarded-for': job.address }
  let maxnumber: number | undefined
  const wantsProof = withProof && (job.real || job.kind !== 'no_proof')
  if (wantsProof) {
    const proof = await proofFor(base, pub, job.address)
    Object.assign(headers, proof.headers)
    maxnumber = proof.maxnumber
  }
  if (job.real) {
    // The widget: a person spends 15 s to 3 min on the form; the honeypot stays empty.
    body = { ...realReport(job.index), userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0', viewport: { w: 1280, h: 800, dpr: 1 }, clientSignals: { formMs: Math.round(15_000 + r() * 165_000) } }
  } else {
    body = junkReport(job.index)
    if (job.kind === 'proof_honeypot' || job.kind === 'honeypot') body.clientSignals = { honeypot: 'https://best-deal-shop.top', formMs: Math.round(200 + r() * 700) }
    if (job.kind === 'proof_fast' || job.kind === 'fast') body.clientSignals = { formMs: Math.round(40 + r() * 800) }
  }
  const res = await fetch(`${base}/v1/feedback`, { method: 'POST', headers, body: JSON.stringify(body) })
  const out = (await res.json().catch(() => ({}))) as any
  return { job, status: res.status, code: out?.error?.code, id: out?.id, maxnumber }
}

async function pool<T, R>(items: T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++
        results[i] = await fn(items[i])
      }
    }),
  )
  return results
}

/** GET with the sk key, waiting out a 429's Retry-After (bounded). */
async function getJson(url: string, key: string): Promise<any> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const r = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
    if (r.status === 429) {
      await Bun.sleep(1000 * Number(r.headers.get('retry-after') ?? 1))
      continue
    }
    if (r.status !== 200) throw new Error(`GET ${url} answered ${r.status}: ${await r.text()}`)
    return r.json()
  }
  throw new Error(`GET ${url}: still rate limited`)
}

/** Every report of the App with its spam mark (spam=include), duplicates too; bounded paging. */
async function classify(base: string, t: Tenant, appId: string): Promise<Map<string, { spam: boolean; status: string; duplicateOfId: string | null }>> {
  const out = new Map<string, { spam: boolean; status: string; duplicateOfId: string | null }>()
  let cursor: string | undefined
  for (let page = 0; page < 1000; page++) {
    const q = new URLSearchParams({ appId, includeDuplicates: 'true', spam: 'include', limit: '100', ...(cursor ? { cursor } : {}) })
    const body = await getJson(`${base}/v1/feedback?${q}`, t.key)
    for (const item of body.data) out.set(item.id, { spam: !!item.spam, status: item.status, duplicateOfId: item.duplicateOfId ?? null })
    cursor = body.nextCursor
    if (!cursor) break
  }
  return out
}

/** Waits until no report of the App is still being received or sanitized (bounded); spam waits in `received` unprocessed by design. */
async function drain(base: string, t: Tenant, appId: string, maxMs = 180_000): Promise<void> {
  const deadline = Date.now() + maxMs
  while (Date.now() < deadline) {
    const all = await classify(base, t, appId)
    if (![...all.values()].some((v) => !v.spam && (v.status === 'received' || v.status === 'sanitizing'))) return
    await Bun.sleep(1000)
  }
  console.warn(`  (processing not drained after ${maxMs / 1000} s)`)
}

/** The default list (what a person's inbox shows: leads, spam hidden), counted; bounded paging. */
async function inboxCount(base: string, t: Tenant, appId: string): Promise<Set<string>> {
  const ids = new Set<string>()
  let cursor: string | undefined
  for (let page = 0; page < 1000; page++) {
    const q = new URLSearchParams({ appId, limit: '100', ...(cursor ? { cursor } : {}) })
    const body = await getJson(`${base}/v1/feedback?${q}`, t.key)
    for (const item of body.data) ids.add(item.id)
    cursor = body.nextCursor
    if (!cursor) break
  }
  return ids
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(2)} %` : '—')
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

async function flood(base: string, t: Tenant, appName: string, withProof: boolean): Promise<void> {
  const app = t.apps[appName]
  const list = jobs(withProof)
  hashesDone = 0
  solveMs = 0
  const t0 = performance.now()
  const outcomes = await pool(list, CONCURRENCY, (job) => submit(base, app.pub, job, withProof))
  const seconds = (performance.now() - t0) / 1000
  await drain(base, t, app.id)
  const marks = await classify(base, t, app.id)
  const inbox = await inboxCount(base, t, app.id)
  const junk = outcomes.filter((o) => !o.job.real)
  const real = outcomes.filter((o) => o.job.real)
  const stored = (o: Outcome) => o.status === 201 && o.id && marks.has(o.id)
  const junkStored = junk.filter(stored)
  const junkNotSpam = junkStored.filter((o) => !marks.get(o.id!)!.spam)
  const junkInInbox = junk.filter((o) => o.id && inbox.has(o.id))
  const realCaught = real.filter((o) => o.id && marks.get(o.id)?.spam)
  const realRefused = real.filter((o) => o.status !== 201)
  console.log(`\n${withProof ? 'A' : 'B'}. ${JUNK} junk from ${ADDRESSES} addresses + ${REAL} real, App proofOfWork ${withProof ? "'normal'" : "'off'"}: ${(outcomes.length / seconds).toFixed(0)} req/s (${seconds.toFixed(1)} s, ${CONCURRENCY} in flight)`)
  const byKind = new Map<string, Outcome[]>()
  for (const o of junk) byKind.set(o.job.kind!, [...(byKind.get(o.job.kind!) ?? []), o])
  for (const [kind, os] of byKind) {
    const codes = new Map<string, number>()
    for (const o of os) codes.set(o.status === 201 ? '201' : `${o.status} ${o.code}`, (codes.get(o.status === 201 ? '201' : `${o.status} ${o.code}`) ?? 0) + 1)
    const spam = os.filter((o) => o.id && marks.get(o.id)?.spam).length
    const notSpam = os.filter((o) => o.id && marks.has(o.id) && !marks.get(o.id)!.spam).length
    console.log(`  junk ${kind.padEnd(15)} ${String(os.length).padStart(5)}: ${[...codes].map(([c, n]) => `${c} ×${n}`).join(', ')}; stored as spam ${spam}, stored NOT spam ${notSpam}`)
  }
  console.log(`  junk stored, not spam:     ${junkNotSpam.length} of ${junk.length} (${pct(junkNotSpam.length, junk.length)}); of them leads in the inbox list: ${junkInInbox.length}`)
  console.log(`  real caught as spam:       ${realCaught.length} of ${real.length} (${pct(realCaught.length, real.length)}); real refused: ${realRefused.length}${realRefused.length ? ` (${realRefused.map((o) => `${o.status} ${o.code}`).join(', ')})` : ''}`)
  console.log(`  inbox list (leads, not spam): ${inbox.size} reports, of which real ${real.filter((o) => o.id && inbox.has(o.id)).length}`)
  if (withProof) {
    const realMax = real.map((o) => o.maxnumber ?? 0)
    const junkMax = junk.filter((o) => o.maxnumber).map((o) => o.maxnumber!)
    console.log(`  difficulty (maxnumber) met: real median ${quantile(realMax, 0.5)}, solving bots median ${junkMax.length ? quantile(junkMax, 0.5) : '—'}`)
    console.log(`  the bench's own solving (node:crypto): ${hashesDone.toLocaleString('en')} hashes, ${(solveMs / 1000).toFixed(1)} s`)
  }
  if (realCaught.length) {
    const detail = await getJson(`${base}/v1/feedback/${realCaught[0].id}`, t.key)
    console.log(`  e.g. a real report caught: ${JSON.stringify(detail.spam)} — "${String(detail.text).slice(0, 100)}"`)
  }
  if (junkNotSpam.length) {
    const detail = await getJson(`${base}/v1/feedback/${junkNotSpam[0].id}`, t.key)
    console.log(`  e.g. junk let through (${junkNotSpam[0].job.kind}): spam ${JSON.stringify(detail.spam)} — "${String(detail.text).slice(0, 100)}"`)
  }
}

/**
 * Server CPU per submission: the same ordinary reports against 'off' Apps and (solved beforehand) against
 * 'normal' Apps, CPU_REPORTS per App and CPU_APPS Apps per side, so no App or address reaches the flood
 * thresholds (the solutions must stay good enough). Processing is drained before each reading, so both
 * sides include the same sanitizing and clustering; the sides alternate (off, normal, off, normal, …).
 */
async function cpuCost(base: string, pid: number, t: Tenant): Promise<void> {
  const N = CPU_REPORTS
  const body = (i: number) => JSON.stringify({ text: `CPU probe ${i}: the ${AREAS[i % AREAS.length]} fails ${CONTEXTS[i % CONTEXTS.length]}`, clientSignals: { formMs: 30_000 } })
  const address = (i: number) => `192.168.${(i >> 3) & 255}.${(i & 7) + 1}` // 8 per address
  const run = async (appName: string, proofs?: string[]) => {
    const app = t.apps[appName]
    await drain(base, t, app.id)
    const before = cpuSeconds(pid)
    const t0 = performance.now()
    const statuses = await pool(Array.from({ length: N }, (_, i) => i), 8, async (i) => {
      const headers: Record<string, string> = { authorization: `Bearer ${app.pub}`, 'content-type': 'application/json', 'x-forwarded-for': address(i) }
      if (proofs) headers[PROOF] = proofs[i]
      const r = await fetch(`${base}/v1/feedback`, { method: 'POST', headers, body: proofs ? body(i) : JSON.stringify({ text: JSON.parse(body(i)).text }) })
      await r.arrayBuffer()
      return r.status
    })
    const wall = (performance.now() - t0) / 1000
    await drain(base, t, app.id)
    return { cpu: cpuSeconds(pid) - before, wall, ok: statuses.filter((s) => s === 201).length }
  }
  const sum = { off: { cpu: 0, wall: 0, ok: 0 }, on: { cpu: 0, wall: 0, ok: 0 } }
  let issueCpu = 0
  for (let k = 0; k < CPU_APPS; k++) {
    // Challenges for this 'normal' App, fetched and solved before the clock starts (their issuing is measured apart).
    const app = t.apps[`cpu_normal_${k}`]
    const challenges: Challenge[] = []
    const c0 = cpuSeconds(pid)
    for (let i = 0; i < N; i++) challenges.push((await getChallenge(base, app.pub, address(i))).challenge!)
    issueCpu += cpuSeconds(pid) - c0
    const proofs = challenges.map((c) => proofHeader(c, solve(c)))
    for (const [side, r] of [['off', await run(`cpu_off_${k}`)], ['on', await run(`cpu_normal_${k}`, proofs)]] as const) {
      sum[side].cpu += r.cpu
      sum[side].wall += r.wall
      sum[side].ok += r.ok
    }
  }
  const total = N * CPU_APPS
  const ms = (cpu: number) => ((1000 * cpu) / total).toFixed(3)
  console.log(`\nServer CPU per submission (${total} reports per side over ${CPU_APPS} Apps, processing included, /proc ticks of 10 ms):`)
  console.log(`  proofOfWork off (spec client, never scored): ${ms(sum.off.cpu)} ms CPU, ${(total / sum.off.wall).toFixed(0)} req/s, ${sum.off.ok} × 201`)
  console.log(`  proofOfWork normal (verified, claimed, scored): ${ms(sum.on.cpu)} ms CPU, ${(total / sum.on.wall).toFixed(0)} req/s, ${sum.on.ok} × 201 (difference ${((1000 * (sum.on.cpu - sum.off.cpu)) / total).toFixed(3)} ms)`)
  console.log(`  issuing a challenge (GET /v1/widget/challenge): ${ms(issueCpu)} ms CPU each (HTTP included)`)
}

/** Chromium solving challenges of each difficulty with the widget's own code: in its Worker, and on the main thread in slices. */
async function browserSolves(base: string, t: Tenant): Promise<void> {
  const build = async (entry: string) => {
    const r = await Bun.build({ entrypoints: [join(ROOT, entry)], target: 'browser', format: 'iife', minify: true, define: { __POW_WORKER__: '""' } })
    if (!r.success) throw new AggregateError(r.logs)
    return r.outputs[0].text()
  }
  const workerCode = await build('widget/src/pow/worker.ts')
  const solveCode = await build('bench/flood-main-thread.ts')
  const browser = await launchBrowser()
  try {
    const page = await (await browser.newContext()).newPage()
    await page.goto(`${base}/healthz`)
    await page.evaluate(solveCode)
    console.log(`\nChromium (${(await browser.version())}) solving, ${BROWSER_SOLVES} challenges per row (fresh challenge each; ms from start to answer):`)
    for (const level of ['normal', 'high']) {
      const app = t.apps[`browser_${level}`]
      for (const where of ['worker', 'main thread (12 ms slices)']) {
        const times: number[] = []
        let max = 0
        for (let i = 0; i < BROWSER_SOLVES; i++) {
          const { challenge } = await getChallenge(base, app.pub, `100.64.${i}.${where.length}`)
          max = challenge!.maxnumber
          const ms = await page.evaluate(
            async ([code, c, inWorker]) => {
              const t0 = performance.now()
              let n: number
              if (inWorker) {
                const url = URL.createObjectURL(new Blob([code as string], { type: 'text/javascript' }))
                const w = new Worker(url)
                n = await new Promise<number>((res) => {
                  w.onmessage = (e) => res(e.data)
                  w.postMessage(c)
                })
                w.terminate()
              } else n = await (window as any).__flSolveInSlices(c)
              if (n < 0) throw new Error('no solution')
              return performance.now() - t0
            },
            [workerCode, challenge, where === 'worker'] as const,
          )
          times.push(ms)
        }
        console.log(`  ${level.padEnd(6)} (maxnumber ${max.toLocaleString('en')}) ${where.padEnd(27)} median ${quantile(times, 0.5).toFixed(0)} ms, p95 ${quantile(times, 0.95).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms`)
      }
    }
  } finally {
    await browser.close()
  }
}

async function main(): Promise<void> {
  console.log(`flood bench: ${new Date().toISOString()}, load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-flood-'))
  const t = await tenant(dataDir, { flood_normal: 'normal', flood_off: 'off', ...Object.fromEntries(Array.from({ length: CPU_APPS }, (_, k) => [[`cpu_off_${k}`, 'off'], [`cpu_normal_${k}`, 'normal']]).flat()), browser_normal: 'normal', browser_high: 'high' })
  const server = await serve(dataDir)
  try {
    if (PHASES.includes('flood') || PHASES.includes('pow')) await flood(server.url, t, 'flood_normal', true)
    if (PHASES.includes('flood') || PHASES.includes('off')) await flood(server.url, t, 'flood_off', false)
    if (PHASES.includes('cpu')) await cpuCost(server.url, server.pid, t)
    if (PHASES.includes('browser')) await browserSolves(server.url, t)
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(`\nuptime: ${Bun.spawnSync(['uptime']).stdout.toString().trim()}`)
}

await main()
