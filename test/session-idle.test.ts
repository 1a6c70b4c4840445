/**
 * A dashboard session ends after 24 hours without the admin's activity (sessions.ts). A check that is not
 * activity (an open event stream's heartbeat asking whether its session still stands) does not keep it
 * alive; a request does.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { createSessionStore, SESSION_IDLE_MS } from '../src/modules/admins/sessions'

const HOUR = 3600_000
let server: TestServer
let clock: ManualClock
beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0))
  server = await startTestServer({}, { clock })
})
afterAll(() => server.close())

describe('idle sessions', () => {
  test("a heartbeat's check (touch: false) keeps no session alive; a request does", async () => {
    const admin = await createAdminsService(server.ctx.store.admins, server.ctx.box, clock, passwordHasher(server.ctx.config.passwordHashMib)).create('idle@example.com', 'idle password 1')
    const sessions = createSessionStore(server.ctx.store.admins, clock)
    const watched = await sessions.open(admin.id, 'test', '127.0.0.1')
    const used = await sessions.open(admin.id, 'test', '127.0.0.1')
    // 23 hours on: both live; one is only checked, the other is used.
    clock.advance(SESSION_IDLE_MS - HOUR)
    expect(await sessions.resolve(watched.token, { touch: false })).toBeDefined()
    expect(await sessions.resolve(used.token)).toBeDefined()
    // 25 hours after the last activity of the checked one: it ended; the used one goes on.
    clock.advance(2 * HOUR)
    expect(await sessions.resolve(watched.token, { touch: false })).toBeUndefined()
    expect(await sessions.resolve(used.token, { touch: false })).toBeDefined()
  })
})
