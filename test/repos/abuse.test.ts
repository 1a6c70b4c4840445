/** src/abuse/abuse-repo.ts on both dialects: single-use proof-of-work claims (racing too), purge, spam learning rows. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'

describeEachDialect('abuse repo', (fresh) => {
  test('a signature is claimed once; concurrent claims: exactly one wins; expired ones are purged', async () => {
    const s = await fresh()
    const repo = s.store.abuse
    expect(await repo.claimPow('a'.repeat(64), 1_000)).toBe(true)
    expect(await repo.claimPow('a'.repeat(64), 1_000)).toBe(false)
    const race = await Promise.all(Array.from({ length: 8 }, () => repo.claimPow('b'.repeat(64), 5_000)))
    expect(race.filter(Boolean).length).toBe(1)
    expect(await repo.purgePow(2_000)).toBe(1) // a: expired at 1000; b: still held
    expect(await repo.claimPow('b'.repeat(64), 5_000)).toBe(false)
    expect(await repo.claimPow('a'.repeat(64), 9_000)).toBe(true) // forgotten after its expiry (its challenge is refused as expired anyway)
  })

  test('the purge takes every expired solution however many batches they fill, and no live one', async () => {
    const { POW_PURGE_BATCH } = await import('../../src/abuse/abuse-repo')
    const s = await fresh()
    const repo = s.store.abuse
    const expired = POW_PURGE_BATCH * 2 + 7
    for (let i = 0; i < expired; i++) await repo.claimPow(`x${i}`, 1_000 + i)
    for (let i = 0; i < 5; i++) await repo.claimPow(`live${i}`, 1_000_000)
    expect(await repo.purgePow(500_000)).toBe(expired)
    expect(await repo.purgePow(500_000)).toBe(0)
    for (let i = 0; i < 5; i++) expect(await repo.claimPow(`live${i}`, 1_000_000)).toBe(false)
    expect(await repo.claimPow('x0', 1_000_000)).toBe(true)
  }, 60_000)

  test('spam learning: factors replaced, decisions counted per App', async () => {
    const s = await fresh()
    const repo = s.store.abuse
    expect(await repo.learning('app1')).toBeUndefined()
    await repo.saveLearning('app1', '{"links":0.8}', 'not_spam', 10)
    await repo.saveLearning('app1', '{"links":0.64}', 'not_spam', 20)
    await repo.saveLearning('app1', '{"links":0.7}', 'spam', 30, '[{"id":"r1","at":20}]')
    expect(await repo.learning('app1')).toEqual({ appId: 'app1', factors: '{"links":0.7}', notSpam: 2, markedSpam: 1, updatedAt: 30, cleared: '[{"id":"r1","at":20}]' })
    expect(await repo.learning('app2')).toBeUndefined()
  })
})

describeEachDialect('proof-of-work single use without Redis', (fresh) => {
  test('Redis unreachable: the claim falls back to the database, so a replay is still refused', async () => {
    const { createPowService, powKeyOf } = await import('../../src/abuse/pow-service')
    const { RedisLink } = await import('../../src/nodes/redis-link')
    const { powHeaderOf, solvePowChallenge } = await import('../../src/abuse/pow')
    const s = await fresh()
    const redis = new RedisLink('redis://127.0.0.1:1', 200, 60_000) // nothing listens on port 1
    const pow = createPowService({ key: powKeyOf(Buffer.alloc(32, 5)), clock: s.clock, repo: s.store.abuse, redis })
    const app = { id: 'a'.repeat(24), proofOfWork: 'normal' }
    const { challenge } = pow.challenge(app, '198.51.100.7')
    const header = powHeaderOf(challenge!, solvePowChallenge(challenge!)!)
    expect((await pow.check(app, '198.51.100.7', header))?.appId).toBe(app.id)
    await expect(pow.check(app, '198.51.100.7', header)).rejects.toMatchObject({ code: 'proof_of_work_required', details: { reason: 'replayed' } })
    redis.close()
  })
})
