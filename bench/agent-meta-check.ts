/**
 * The after-run check of an agent's git metadata (src/agent/git-meta.ts) against the fillers of issue 28
 * item 4: how long it takes to refuse, and the worst event-loop stall while it runs (a 5 ms timer's lateness).
 * Run: `bun bench/agent-meta-check.ts`. Prints figures and `uptime`; nothing is asserted (test/agent-
 * binary-attacks.test.ts asserts the behaviour). Bounded: each case makes at most 200,000 empty files or
 * 4.8 GB of SPARSE files (no disk used) in a temp dir, removed afterwards.
 */
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fingerprintMeta } from '../src/agent/git-meta'

async function measure(name: string, fill: (git: string) => void): Promise<void> {
  const repo = mkdtempSync(join(tmpdir(), 'fixloop-bench-meta-'))
  try {
    const git = join(repo, '.git')
    for (const d of ['hooks', 'info', 'objects/info']) mkdirSync(join(git, d), { recursive: true })
    writeFileSync(join(git, 'config'), '[core]\n\tbare = false\n')
    fill(git)
    let worst = 0
    let last = performance.now()
    const timer = setInterval(() => {
      const now = performance.now()
      worst = Math.max(worst, now - last - 5)
      last = now
    }, 5)
    const t0 = performance.now()
    const r = await fingerprintMeta(repo)
    const ms = performance.now() - t0
    clearInterval(timer)
    console.log(`${name.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms to answer, worst event-loop stall ${worst.toFixed(1).padStart(6)} ms: ${r.ok ? `ok (${r.files.size} files)` : r.refused}`)
  } finally {
    rmSync(repo, { recursive: true, force: true })
  }
}

console.log(`uptime: ${Bun.spawnSync(['uptime']).stdout.toString().trim()}`)
await measure('a fresh clone (hooks samples)', (git) => {
  for (let i = 0; i < 14; i++) writeFileSync(join(git, 'hooks', `sample-${i}.sample`), 'x'.repeat(2000))
})
await measure('200,000 empty files in .git/info', (git) => {
  for (let i = 0; i < 200_000; i++) writeFileSync(join(git, 'info', `f${i}`), '')
})
await measure('600 sparse 8 MiB files (4.8 GB)', (git) => {
  for (let i = 0; i < 600; i++) {
    const f = join(git, 'hooks', `blob-${i}`)
    writeFileSync(f, '')
    truncateSync(f, 8 * 1024 * 1024)
  }
})
await measure('1,000 sparse 1 MiB files (1 GB)', (git) => {
  for (let i = 0; i < 1000; i++) {
    const f = join(git, 'hooks', `blob-${i}`)
    writeFileSync(f, '')
    truncateSync(f, 1024 * 1024)
  }
})
console.log(`uptime: ${Bun.spawnSync(['uptime']).stdout.toString().trim()}`)
