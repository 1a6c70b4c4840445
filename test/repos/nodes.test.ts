/** src/nodes/nodes-repo.ts on both dialects: heartbeats, leases with fencing tokens on the database clock, the dead-node sweep. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'
import { sql } from './store-fixtures'

const node = (id: string) => ({ id, host: 'h', pid: 1, version: 'test' })

describeEachDialect('nodes repo', (fresh) => {
  test('a beat registers the node and records its roles; alive lists the nodes that beat recently; leave removes it', async () => {
    const s = await fresh()
    const repo = s.store.nodes
    await repo.beat(node('node_a'), [])
    await repo.beat(node('node_b'), ['processing'])
    await repo.beat(node('node_a'), ['maintenance', 'dispatch'])
    const alive = await repo.alive(10_000)
    expect(alive.map((n) => [n.id, n.roles])).toEqual([['node_a', 'maintenance,dispatch'], ['node_b', 'processing']])
    expect(alive[0].heartbeatAt).toBeGreaterThanOrEqual(alive[0].startedAt)
    // A beat 20 s ago is not alive within 10 s.
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 20000 WHERE id = 'node_b'")
    expect((await repo.alive(10_000)).map((n) => n.id)).toEqual(['node_a'])
    await repo.leave('node_a')
    expect((await repo.alive(60_000)).map((n) => n.id)).toEqual(['node_b'])
  })

  test('a lease: one holder at a time, renewed by it, taken by another only once expired, with a rising token', async () => {
    const s = await fresh()
    const repo = s.store.nodes
    const t1 = await repo.acquire('processing', 'node_a', 15_000)
    expect(t1).toBe(1)
    expect(await repo.acquire('processing', 'node_b', 15_000)).toBeNull()
    // Renewal keeps the token.
    expect(await repo.acquire('processing', 'node_a', 15_000)).toBe(1)
    // Expired (on the database clock): the next node takes it with a higher token; the old holder cannot renew.
    await sql(s, "UPDATE leases SET expires_at = expires_at - 16000 WHERE name = 'processing'")
    expect(await repo.acquire('processing', 'node_b', 15_000)).toBe(2)
    expect(await repo.acquire('processing', 'node_a', 15_000)).toBeNull()
    // A release lets it go at once, and the token never goes back.
    await repo.release('processing', 'node_b')
    expect(await repo.acquire('processing', 'node_a', 15_000)).toBe(3)
    // Another holder's release is a no-op.
    await repo.release('processing', 'node_b')
    expect(await repo.acquire('processing', 'node_b', 15_000)).toBeNull()
    const leases = await repo.leases()
    expect(leases.map((l) => [l.name, l.holder, l.token])).toEqual([['processing', 'node_a', 3]])
    expect(leases[0].expiresAt).toBeGreaterThan(await repo.now())
  })

  test('concurrent takers of a free lease: exactly one wins', async () => {
    const s = await fresh()
    const repo = s.store.nodes
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => repo.acquire('maintenance', `node_${i}`, 15_000)))
    expect(tokens.filter((t) => t !== null)).toEqual([1])
  })

  test('the sweep frees the job leases of dead or unknown nodes only, and forgets long-silent nodes', async () => {
    const s = await fresh()
    const repo = s.store.nodes
    await repo.beat(node('node_live'), [])
    await repo.beat(node('node_dead'), [])
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 20000 WHERE id = 'node_dead'")
    const now = await repo.now()
    for (const [i, owner] of [[1, 'node_live'], [2, 'node_live:processing'], [3, 'node_dead'], [4, 'node_dead:processing'], [5, 'host:123:456']] as const) {
      await sql(s, `INSERT INTO jobs (id, kind, feedback_id, run_after, lease_until, lease_owner, created_at) VALUES (${i}, 'process', 'f${i}', ${now}, ${now + 60_000}, '${owner}', ${now})`)
    }
    await sql(s, `INSERT INTO jobs (id, kind, feedback_id, run_after, created_at) VALUES (6, 'process', 'f6', ${now}, ${now})`)
    const swept = await repo.sweep(15_000, 3_600_000)
    expect(swept).toEqual({ jobs: 3, deadNodes: ['node_dead'] })
    const held = await sql<{ id: number; lease_owner: string | null }>(s, 'SELECT id, lease_owner FROM jobs ORDER BY id')
    expect(held.map((j) => [Number(j.id), j.lease_owner])).toEqual([[1, 'node_live'], [2, 'node_live:processing'], [3, null], [4, null], [5, null], [6, null]])
    // Silent for longer than the forget limit: the row goes.
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 7200000 WHERE id = 'node_dead'")
    await repo.sweep(15_000, 3_600_000)
    expect((await sql<{ id: string }>(s, 'SELECT id FROM cluster_nodes ORDER BY id')).map((r) => r.id)).toEqual(['node_live'])
  })

  test('each node is judged by its own lease: one with 60 s (a beat every 20 s) is alive to a sweeper with 5 s between its beats, its job leases kept; dead once silent for its 60 s', async () => {
    const s = await fresh()
    const repo = s.store.nodes
    await repo.beat(node('node_short'), [], 5_000)
    await repo.beat(node('node_long'), [], 60_000)
    // A node of an older version records no lease: the asker's own counts for it.
    await repo.beat(node('node_old'), [])
    // 18 s since the long-lease node's last beat (its next is due at 20 s); the short one just beat.
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 18000 WHERE id IN ('node_long', 'node_old')")
    const now = await repo.now()
    await sql(s, `INSERT INTO jobs (id, kind, feedback_id, run_after, lease_until, lease_owner, created_at) VALUES (1, 'process', 'f1', ${now}, ${now + 60_000}, 'node_long:processing', ${now})`)
    await sql(s, `INSERT INTO jobs (id, kind, feedback_id, run_after, lease_until, lease_owner, created_at) VALUES (2, 'process', 'f2', ${now}, ${now + 60_000}, 'node_old', ${now})`)
    expect((await repo.alive(5_000)).map((n) => [n.id, n.leaseMs]).sort()).toEqual([['node_long', 60_000], ['node_short', 5_000]])
    // Before, the sweeper's 5 s made it dead: its job leases freed (the work done twice), its agent runs failed.
    expect(await repo.sweep(5_000, 3_600_000)).toEqual({ jobs: 1, deadNodes: ['node_old'] })
    const held = await sql<{ id: number; lease_owner: string | null }>(s, 'SELECT id, lease_owner FROM jobs ORDER BY id')
    expect(held.map((j) => [Number(j.id), j.lease_owner])).toEqual([[1, 'node_long:processing'], [2, null]])
    // Silent for more than its own lease: dead to everyone.
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 43000 WHERE id = 'node_long'")
    expect((await repo.alive(5_000)).map((n) => n.id)).toEqual(['node_short'])
    expect(await repo.sweep(5_000, 3_600_000)).toEqual({ jobs: 1, deadNodes: ['node_long', 'node_old'] })
    // A lease recorded past the longest a node can be set to (by hand, a bug) counts as 60 s: a dead node stays dead.
    await sql(s, "UPDATE cluster_nodes SET lease_ms = 1000000000 WHERE id = 'node_long'")
    expect((await repo.alive(5_000)).map((n) => n.id)).toEqual(['node_short'])
    // A beat records the lease anew: a node restarted with another lease is judged by the new one.
    await repo.beat(node('node_short'), [], 30_000)
    await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 20000 WHERE id = 'node_short'")
    expect((await repo.alive(5_000)).map((n) => n.id)).toEqual(['node_short'])
  })
})
