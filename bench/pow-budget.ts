/**
 * A bot that does everything the widget does (solves the proof of work, sends honest-looking
 * clientSignals: honeypot empty, a form open for 20-80 s, a fresh text each time, no links) against a
 * public App with `proofOfWork: normal`, and real users reporting meanwhile (issue: "a bot that sends the
 * widget's signals is never caught"). Bounded: one binary on 127.0.0.1, `--seconds` of flood.
 *
 * Prints: junk reports that reached the inbox (stored, not spam), what each cost the bot (its solving
 * time, one core, node:crypto's SHA-256), the hour-equivalent (junk per hour at the rate measured over the
 * run, and at the rate of its last third, once every address spent its free report budget), and the real
 * users' solving time (median, p95; their extra time is the difference between two binaries).
 *
 * Usage: bun run build && bun bench/pow-budget.ts [--seconds 90] [--addresses 10] [--users 20]
 *        FIXLOOP_BENCH_BINARY=<an older dist/fixloop> bun bench/pow-budget.ts …   (the "before")
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { powHeaderOf, solvePowChallenge, type PowChallenge } from '../src/abuse/pow'
import { freePort, waitReady } from './cluster-services'

const ROOT = resolve(import.meta.dir, '..')
const BINARY = process.env.FIXLOOP_BENCH_BINARY ?? join(ROOT, 'dist', 'fixloop')
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : def
}
const SECONDS = arg('seconds', 90)
const ADDRESSES = arg('addresses', 10)
const USERS = arg('users', 20)

async function cli(dataDir: string, args: string[]): Promise<Record<string, any>> {
  const p = Bun.spawn([BINARY, ...args, '--data-dir', dataDir, '--json'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
  const out = await new Response(p.stdout).text()
  if ((await p.exited) !== 0) throw new Error(`fixloop ${args.join(' ')}: ${await new Response(p.stderr).text()}`)
  return JSON.parse(out.trim())
}

const WORDS = 'page button cart order login profile search filter image upload payment total checkout address email menu header footer slow broken blank error wrong missing twice crash freeze scroll mobile desktop safari chrome firefox'.split(' ')
let seq = 0
/** A fresh, link-free, report-like text: no template or site repeats, so only the budget can tell. */
function junkText(): string {
  const w = () => WORDS[Math.floor(Math.random() * WORDS.length)]
  return `The ${w()} ${w()} is ${w()} when I open the ${w()} ${w()} (${++seq}); also ${w()} ${w()} ${w()}.`
}

interface Sent {
  status: number
  solveMs: number
  /** SHA-256 computed to solve (number + 1 per challenge): the cost, whatever the machine's load. */
  hashes: number
  maxnumber: number
}

/** The widget's solving rate the issue measured (~80 ms for a `normal` challenge, ~50,000 hashes): hashes → ms. */
const REFERENCE_HASHES_PER_MS = 50_000 / 80
const asMs = (hashes: number) => Math.round(hashes / REFERENCE_HASHES_PER_MS)

/** One report as the widget sends it: challenge, solve (timed), submit; a solution made too easy meanwhile is solved again. */
async function report(base: string, pub: string, address: string, text: string): Promise<Sent> {
  let solveMs = 0
  let hashes = 0
  for (let attempt = 0; attempt < 3; attempt++) {
    const c = await fetch(`${base}/v1/widget/challenge`, { headers: { authorization: `Bearer ${pub}`, 'x-forwarded-for': address } })
    if (c.status !== 200) return { status: c.status, solveMs, hashes, maxnumber: 0 }
    const challenge = ((await c.json()) as { challenge: PowChallenge }).challenge
    const t0 = performance.now()
    const number = solvePowChallenge(challenge)!
    solveMs += performance.now() - t0
    hashes += number + 1
    const r = await fetch(`${base}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pub}`, 'content-type': 'application/json', 'x-forwarded-for': address, 'x-fixloop-proof-of-work': powHeaderOf(challenge, number) },
      body: JSON.stringify({ text, clientSignals: { honeypot: '', formMs: 20_000 + Math.floor(Math.random() * 60_000) } }),
    })
    const body = (await r.json()) as { error?: { details?: { reason?: string } } }
    if (r.status === 403 && body.error?.details?.reason === 'too_easy') continue
    return { status: r.status, solveMs, hashes, maxnumber: challenge.maxnumber }
  }
  return { status: 403, solveMs, hashes, maxnumber: 0 }
}

async function inboxCount(base: string, key: string): Promise<number> {
  let n = 0
  let cursor = ''
  for (;;) {
    const r = (await (await fetch(`${base}/v1/feedback?limit=100&includeDuplicates=true${cursor}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: unknown[]; nextCursor: string | null }
    n += r.data.length
    if (!r.nextCursor) return n
    cursor = `&cursor=${r.nextCursor}`
  }
}

const lastThirdAccepted = (xs: Sent[]) => xs.filter((x) => x.status === 201).length
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))] ?? 0

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-pow-budget-'))
  const port = await freePort()
  try {
    const org = await cli(dataDir, ['org', 'create', '--name', 'Budget Co'])
    const key = (await cli(dataDir, ['key', 'create', '--org', org.id, '--name', 'bench'])).key
    const bots = await cli(dataDir, ['app', 'create', '--org', org.id, '--name', 'Shop', '--proof-of-work', 'normal'])
    const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_TRUST_PROXY: '1' },
      stdout: 'ignore',
      stderr: 'inherit',
    })
    const base = `http://127.0.0.1:${port}`
    await waitReady(base, proc)
    console.log(`binary ${BINARY}; ${SECONDS} s of flood from ${ADDRESSES} bot addresses, ${USERS} real users; load average ${loadavg()[0].toFixed(2)}`)

    const start = performance.now()
    const end = start + SECONDS * 1000
    const bot: (Sent & { at: number })[] = []
    const users: Sent[] = []
    // Real users: one every SECONDS / USERS seconds, each from its own address, while the bot floods.
    const realUsers = (async () => {
      for (let u = 0; u < USERS; u++) {
        await Bun.sleep(Math.max(0, start + (u * SECONDS * 1000) / USERS - performance.now()))
        users.push(await report(base, bots.publicKey, `198.51.100.${u + 1}`, `Checkout: the pay button does nothing on step ${u} (user ${u})`))
      }
    })()
    // The bot: one core, round robin over its addresses, as fast as it can solve.
    for (let i = 0; performance.now() < end; i++) {
      const s = await report(base, bots.publicKey, `203.0.113.${(i % ADDRESSES) + 1}`, junkText())
      bot.push({ ...s, at: performance.now() - start })
    }
    await realUsers
    const elapsed = (performance.now() - start) / 1000

    const accepted = bot.filter((b) => b.status === 201)
    const lastThird = accepted.filter((b) => b.at >= (elapsed * 1000 * 2) / 3)
    const inbox = (await inboxCount(base, key)) - users.filter((u) => u.status === 201).length
    const solveS = bot.reduce((s, b) => s + b.solveMs, 0) / 1000
    const byStatus = new Map<number, number>()
    for (const b of bot) byStatus.set(b.status, (byStatus.get(b.status) ?? 0) + 1)
    console.log(`bot: ${bot.length} reports tried (${[...byStatus].map(([s, n]) => `${s}×${n}`).join(', ')}), ${accepted.length} accepted, ${inbox} junk in the inbox (not spam)`)
    const botHashes = bot.reduce((s, b) => s + b.hashes, 0)
    const tail = bot.filter((b) => b.at >= (elapsed * 1000 * 2) / 3)
    const tailHashes = tail.reduce((s, b) => s + b.hashes, 0)
    console.log(`bot: ${solveS.toFixed(1)} s solving here; ${(botHashes / 1e6).toFixed(2)} M SHA-256 = ${accepted.length ? asMs(botHashes / accepted.length) : '∞'} ms per accepted junk report at the widget's rate (~80 ms a normal solve); last third: ${tail.length ? asMs(tailHashes / Math.max(1, lastThirdAccepted(tail))) : '∞'} ms; max maxnumber ${Math.max(0, ...bot.map((b) => b.maxnumber))}`)
    console.log(`junk per hour-equivalent on one core at the widget's rate: ${accepted.length ? Math.round((3_600_000 * accepted.length) / asMs(botHashes)) : 0} over the run, ${tail.length ? Math.round((3_600_000 * lastThirdAccepted(tail)) / Math.max(1, asMs(tailHashes))) : 0} at its last third's cost`)
    console.log(`junk in the inbox per hour-equivalent: ${Math.round((inbox * 3600) / elapsed)} at the run's rate, ${Math.round((lastThird.length * 3600 * 3) / elapsed)} at its last third's (one core)`)
    console.log(`real users: ${users.filter((u) => u.status === 201).length} of ${users.length} stored; solving here median ${median(users.map((u) => u.solveMs)).toFixed(0)} ms, p95 ${p95(users.map((u) => u.solveMs)).toFixed(0)} ms; at the widget's rate median ${asMs(median(users.map((u) => u.hashes)))} ms, p95 ${asMs(p95(users.map((u) => u.hashes)))} ms; maxnumber max ${Math.max(0, ...users.map((u) => u.maxnumber))}`)
    console.log(`load average at the end ${loadavg()[0].toFixed(2)}`)
    proc.kill('SIGTERM')
    await proc.exited
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
