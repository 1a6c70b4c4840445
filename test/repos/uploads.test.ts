/** modules/uploads/repo.ts on both dialects: issue, uploaded, referenced by a submission, collected when never referenced. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'
import { type NewUpload } from '../../src/modules/uploads/repo'
import { seedOrgApp } from './store-fixtures'

const upload = (key: string, createdAt: number, filename: string | null = null): NewUpload => ({
  key, appId: 'a1', orgId: 'o1', kind: 'attachment', contentType: 'image/png', byteSize: 1234, filename, createdAt, expiresAt: createdAt + 900_000,
})

describeEachDialect('uploads repo', (fresh) => {
  test('a row reads back as written, typed; marked uploaded; an unknown key is undefined', async () => {
    const s = await fresh()
    const repo = s.store.uploads
    await repo.insert(upload('a1/k1', 1_000, 'shot.png'))
    expect(await repo.byKey('a1/k1')).toEqual({
      key: 'a1/k1', app_id: 'a1', org_id: 'o1', kind: 'attachment', content_type: 'image/png', byte_size: 1234, filename: 'shot.png',
      created_at: 1_000, expires_at: 901_000, uploaded_at: null, feedback_id: null, replay_state: null,
    })
    await repo.markUploaded('a1/k1', 5_000)
    expect((await repo.byKey('a1/k1'))?.uploaded_at).toBe(5_000)
    expect(await repo.byKey('a1/none')).toBeUndefined()
    // The key is the primary key: a second row under it is refused.
    await expect(repo.insert(upload('a1/k1', 2_000))).rejects.toThrow()
  })

  test('unreferenced: older than the cutoff, oldest first, limited; a referenced row is neither listed nor deleted', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.uploads
    const feedback = s.store.feedback
    for (const [key, at] of [['a1/c', 3_000], ['a1/a', 1_000], ['a1/b', 2_000], ['a1/new', 50_000], ['a1/used', 500]] as const) await repo.insert(upload(key, at))
    const out = await feedback.submit(
      { orgId: 'o1', appId: 'a1', severity: null, text: 't', url: null, userAgent: null, viewport: null, consoleLogs: null, attachments: null, componentTarget: null, metadata: null, submittedMode: 'public', externalUserId: null, email: null, submitterName: null, userContext: null },
      ['a1/used'],
      null,
    )
    expect(out.kind).toBe('answered')
    expect(await repo.unreferenced(10_000, 10)).toEqual(['a1/a', 'a1/b', 'a1/c'])
    expect(await repo.unreferenced(10_000, 2)).toEqual(['a1/a', 'a1/b'])
    expect(await repo.deleteUnreferenced('a1/used')).toBe(false)
    expect(await repo.byKey('a1/used')).toBeDefined()
    expect(await repo.deleteUnreferenced('a1/a')).toBe(true)
    expect(await repo.deleteUnreferenced('a1/a')).toBe(false)
    expect(await repo.unreferenced(10_000, 10)).toEqual(['a1/b', 'a1/c'])
  })

  test("unreferencedBytesSince: the App's unreferenced bytes issued at or after the time; referenced rows and other Apps' not counted", async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const repo = s.store.uploads
    expect(await repo.unreferencedBytesSince('a1', 0)).toBe(0)
    for (const [key, at] of [['a1/old', 1_000], ['a1/x', 5_000], ['a1/y', 6_000], ['a1/used', 7_000]] as const) await repo.insert(upload(key, at))
    await repo.insert({ ...upload('a2/z', 6_000), appId: 'a2', orgId: 'o2' })
    expect(await repo.unreferencedBytesSince('a1', 5_000)).toBe(3 * 1234)
    await s.store.feedback.submit(
      { orgId: 'o1', appId: 'a1', severity: null, text: 't', url: null, userAgent: null, viewport: null, consoleLogs: null, attachments: null, componentTarget: null, metadata: null, submittedMode: 'public', externalUserId: null, email: null, submitterName: null, userContext: null },
      ['a1/used'],
      null,
    )
    expect(await repo.unreferencedBytesSince('a1', 5_000)).toBe(2 * 1234)
    expect(await repo.unreferencedBytesSince('a1', 0)).toBe(3 * 1234)
    expect(await repo.unreferencedBytesSince('a2', 0)).toBe(1234)
  })

  test('replays: pending only once a report references them, oldest first; settled once, with the scrubbed type and size', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.uploads
    const replay = (key: string, at: number): NewUpload => ({ ...upload(key, at), kind: 'replay', contentType: 'application/json', replayState: 'pending' })
    for (const [key, at] of [['a1/r2', 2_000], ['a1/r1', 1_000], ['a1/loose', 500]] as const) await repo.insert(replay(key, at))
    await repo.insert(upload('a1/shot', 100))
    expect(await repo.pendingReplays(10)).toEqual([])
    const out = await s.store.feedback.submit(
      { orgId: 'o1', appId: 'a1', severity: null, text: 't', url: null, userAgent: null, viewport: null, consoleLogs: null, attachments: null, componentTarget: null, metadata: null, submittedMode: 'public', externalUserId: null, email: null, submitterName: null, userContext: null },
      ['a1/r1', 'a1/r2', 'a1/shot'],
      null,
    )
    expect(out.kind).toBe('answered')
    expect((await repo.pendingReplays(10)).map((r) => r.key)).toEqual(['a1/r1', 'a1/r2'])
    expect((await repo.pendingReplays(1)).map((r) => r.key)).toEqual(['a1/r1'])
    expect(await repo.settleReplay('a1/r1', 'ready', 'application/gzip', 77)).toBe(true)
    expect(await repo.settleReplay('a1/r1', 'unreadable', 'application/gzip', 0)).toBe(false)
    expect(await repo.byKey('a1/r1')).toMatchObject({ replay_state: 'ready', content_type: 'application/gzip', byte_size: 77 })
    expect((await repo.pendingReplays(10)).map((r) => r.key)).toEqual(['a1/r2'])
    expect((await repo.byKey('a1/shot'))?.replay_state).toBeNull()
  })

  test('writes of one turn share the group commit and each resolves after it', async () => {
    const s = await fresh()
    const repo = s.store.uploads
    await Promise.all(Array.from({ length: 30 }, (_, i) => repo.insert(upload(`a1/p${String(i).padStart(2, '0')}`, 100 + i))))
    expect(await repo.unreferenced(1_000, 100)).toHaveLength(30)
  })
})
