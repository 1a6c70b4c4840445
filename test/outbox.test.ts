import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { createOutbox } from '../src/db/sqlite/outbox'
import { systemClock } from '../src/core/clock'
import { tempDir } from './temp-dirs'

function freshDb() {
  const { sqlite } = openDatabase(join(tempDir('fixloop-outbox-'), 'fixloop.db'))
  applyMigrations(sqlite)
  return sqlite
}

describe('event outbox', () => {
  test('seq rises by one per Org, independently for each Org, and survives retention deletes', () => {
    const sqlite = freshDb()
    const outbox = createOutbox(sqlite, systemClock)
    const put = (orgId: string) =>
      sqlite.transaction(() => outbox.append({ orgId, appId: null, type: 'webhook.test', data: { webhookId: 'w' } }))()
    expect([put('a'), put('a'), put('b'), put('a')]).toEqual([1, 2, 1, 3])
    sqlite.run('DELETE FROM events')
    expect(put('a')).toBe(4)
  })

  test('refuses to write outside a transaction, and a rolled-back change leaves no event', () => {
    const sqlite = freshDb()
    const outbox = createOutbox(sqlite, systemClock)
    expect(() => outbox.append({ orgId: 'a', appId: null, type: 'webhook.test', data: { webhookId: 'w' } })).toThrow()
    expect(() =>
      sqlite.transaction(() => {
        outbox.append({ orgId: 'a', appId: null, type: 'webhook.test', data: { webhookId: 'w' } })
        throw new Error('the change failed')
      })(),
    ).toThrow('the change failed')
    expect(sqlite.query('SELECT COUNT(*) AS n FROM events').get()).toEqual({ n: 0 })
    expect(sqlite.query('SELECT COUNT(*) AS n FROM event_counters').get()).toEqual({ n: 0 })
  })
})
