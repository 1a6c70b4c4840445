/**
 * A tracker push whose issue is created at the tracker while the data dir's disk is full: the link cannot
 * be saved, and the job, which waits for the database without spending an attempt, ran again and created
 * another issue on every try (one per lease, 60 s, for as long as the outage lasted). Now the next try
 * links the issue already made, and runs within seconds of the database being back (the deferral that met
 * the outage is written at the next pass). Against the compiled binary, a GitHub API stub in this process
 * and the data dir on a real tmpfs; skipped with a warning where mount is refused.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, runBinary, spawnLoggedServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { keepFull, mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

test('an issue created while the link cannot be saved is linked on the next try, never created twice', async () => {
  ensureBinary()
  const dir = mountTmpfs('the tracker outage check', 'size=24m')
  if (!dir) return
  // GitHub's issues API: each POST creates an issue. The answer to the first one comes after 6 s, long
  // enough for the WAL checkpointer to empty the WAL while the test fills the disk.
  let created = 0
  let firstPost!: () => void
  const posted = new Promise<void>((r) => (firstPost = r))
  const stub = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/user') return Response.json({ login: 'fixloop-bot', id: 1 })
      if (req.method === 'POST' && path === '/repos/acme/shop/issues') {
        const n = ++created
        if (n === 1) {
          firstPost()
          await Bun.sleep(6000)
        }
        return Response.json({ number: n, id: 1000 + n, html_url: `https://github.example/acme/shop/issues/${n}`, state: 'open', state_reason: null }, { status: 201 })
      }
      const issue = /^\/repos\/acme\/shop\/issues\/(\d+)$/.exec(path)
      if (issue) return Response.json({ number: Number(issue[1]), id: 1000 + Number(issue[1]), html_url: `https://github.example/acme/shop/issues/${issue[1]}`, state: 'open', state_reason: null })
      return Response.json({})
    },
  })
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir)
  const t = await cliTenant(dataDir)
  const token = join(tempDir(), 'token')
  writeFileSync(token, 'ghp_test\n')
  const allow = { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1' }
  const connected = await runBinary(['tracker', 'connect', '--app', t.appId, '--kind', 'github', '--project', 'acme/shop', '--api-url', `http://127.0.0.1:${stub.port}`, '--token-file', token, '--data-dir', dataDir], allow)
  expect(connected.code).toBe(0)
  const { url, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '0', ...allow })
  let full: { stop(): Promise<void> } | undefined
  try {
    const sent = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The total on the cart page is wrong' } })
    expect(sent.status).toBe(201)
    const id = sent.body.id as string
    await eventually(async () => (await call(url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status === 'awaiting_manual', 15_000)
    expect((await runBinary(['tracker', 'push', '--feedback', id, '--data-dir', dataDir], allow)).code).toBe(0)

    // While the tracker makes the issue, the disk fills up (every byte, again and again: each checkpoint
    // frees the WAL's pages), until well after the answer came and the link's write failed.
    await posted
    full = keepFull(dir)
    await Bun.sleep(9000)
    expect((await call(url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.trackerIssue.syncState).toBe('pending')
    await full.stop()

    // Room again: linked within seconds (not after the 60 s lease), to the one issue made.
    const issue = await eventually(async () => {
      const g = await call(url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
      return g.body.trackerIssue?.syncState === 'synced' ? g.body.trackerIssue : undefined
    }, 30_000)
    expect(issue.key).toBe('#1')
    expect(created).toBe(1)
  } finally {
    await full?.stop()
    await stop()
    stub.stop(true)
  }
}, 120_000)
