/**
 * An agent run that ends while the database cannot be written (the data dir's disk full). Its outcome (the
 * branch it pushed) used to be dropped: the run stayed `running` and the report `agent_running` until a
 * restart failed them as interrupted, and every other report of the App waited behind it. Now the outcome
 * waits for the database and is recorded once there is room again, without a restart, and the App's next
 * report runs. Against the compiled binary, the data dir on a real tmpfs filled with dd while the agent
 * works; skipped with a warning where mount is refused.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, spawnLoggedServer, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { branchExists, makeBareRepo } from './git-fixtures'
import { keepFull, mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

test('a run ending on a full disk records its outcome once there is room, and the App is not blocked', async () => {
  ensureBinary()
  const dir = mountTmpfs('the agent outage check', 'size=24m')
  if (!dir) return
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir)
  const t = await cliTenant(dataDir, ['--processing-mode', 'auto_pr'])
  const bare = makeBareRepo(tempDir('fixloop-remote-'), { 'README.md': '# shop\n' }, 'main', 'shop')
  // Long enough for the WAL checkpointer to empty the WAL (every 5 s) while the disk is full: the outcome's
  // write then needs room the disk no longer has. Only the first report's run waits (its task names the cart
  // page): the second run only has to happen, and need not sleep 7 s too.
  const agentCommand = 'if grep -q "cart page" "$FIXLOOP_TASK_FILE"; then sleep 7; fi; echo fixed >> README.md'
  await cliJson(dataDir, ['app', 'connect-repo', t.appId, '--git-url', bare, '--host', 'none', '--agent', 'command', '--agent-command', agentCommand, '--timeout-seconds', '60'])
  const work = tempDir('fixloop-work-')
  const { url, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '0', FIXLOOP_WORK_DIR: work })
  let full: { stop(): Promise<void> } | undefined
  let log = ''
  try {
    const first = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The total on the cart page is wrong' } })
    expect(first.status).toBe(201)
    await eventually(async () => (await call(url, 'GET', `/v1/feedback/${first.body.id}`, { auth: t.key })).body.status === 'agent_running', 20_000)

    // The disk full until the run has ended.
    full = keepFull(dir)
    await eventually(() => branchExists(bare, `fixloop/${first.body.id}`), 30_000)
    await Bun.sleep(3000)
    const during = await call(url, 'GET', `/v1/feedback/${first.body.id}`, { auth: t.key })
    expect(during.body.status).toBe('agent_running')
    await full.stop()

    // Room again: the outcome is recorded without a restart…
    const done = await eventually(async () => {
      const g = await call(url, 'GET', `/v1/feedback/${first.body.id}`, { auth: t.key })
      return g.body.status === 'agent_running' ? undefined : g.body.status
    }, 30_000)
    expect(done).toBe('pr_opened')
    // …and the App's next report gets its run.
    const second = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The checkout button does nothing on mobile' } })
    expect(second.status).toBe(201)
    const next = await eventually(async () => {
      const g = await call(url, 'GET', `/v1/feedback/${second.body.id}`, { auth: t.key })
      return ['pr_opened', 'failed'].includes(g.body.status) ? g.body.status : undefined
    }, 40_000)
    expect(next).toBe('pr_opened')
  } finally {
    await full?.stop()
    log = await stop()
  }
  expect(log).toContain('its outcome waits for the database')
  expect(log).not.toContain('agent run crashed')
}, 150_000)
