/** Rows the repository cases need, written with plain SQL on either dialect (the same statement text). */
import type { FreshStore } from '../dialects'
import type { JobsRepo } from '../../src/lifecycle/jobs-repo'
import type { Lifecycle } from '../../src/lifecycle/lifecycle'

/** Runs SQL with `?` placeholders on the store's own connection; its rows. */
export async function sql<T = Record<string, unknown>>(s: FreshStore, text: string, params: unknown[] = []): Promise<T[]> {
  if (s.storage.dialect === 'sqlite') return s.storage.sqlite.query(text).all(...(params as never[])) as T[]
  let i = 0
  return (await s.storage.pool.query(text.replace(/\?/g, () => `$${++i}`), params)).rows as T[]
}

/** An Org with one App (ids `o1`/`a1` unless given). */
export async function seedOrgApp(s: FreshStore, orgId = 'o1', appId = 'a1'): Promise<void> {
  const repo = s.store.tenants
  if (!(await repo.org(orgId))) await repo.insertOrg({ id: orgId, name: orgId, createdAt: 1 }, [])
  await repo.insertApp({ id: appId, orgId, slug: appId, name: appId, publicKey: `pk_${appId}`, signingSecretEnc: 'x', createdAt: 1, updatedAt: 1 }, [])
}

/** A report row in `status` (default `received`). */
export async function insertReport(s: FreshStore, id: string, status = 'received', orgId = 'o1', appId = 'a1'): Promise<void> {
  await sql(s, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, ?, ?, ?, 'raw text', 'public', 1, 1)", [id, orgId, appId, status])
}

/**
 * A stored report as intake leaves it in App `a1` (`received`, its `process` job queued), at the store's
 * clock, which then moves 10 ms on.
 */
export async function submitReceived(s: FreshStore, lifecycle: Lifecycle, id: string, text: string, extra: { url?: string; email?: string } = {}): Promise<string> {
  await sql(
    s,
    "INSERT INTO feedback (id, org_id, app_id, status, text, url, email, submitted_mode, created_at, updated_at) VALUES (?, 'o1', 'a1', 'received', ?, ?, ?, 'public', ?, ?)",
    [id, text, extra.url ?? null, extra.email ?? null, s.clock.now(), s.clock.now()],
  )
  await lifecycle.enqueue('process', { feedbackId: id, appId: 'a1' })
  s.clock.advance(10)
  return id
}

/**
 * Four claimers per repository (as worker loops on each node), alternately one job (`claim`) and up to
 * `batch` `process` jobs (`claimBatch`) at a time at `t`, until nothing is left to claim: the ids claimed.
 */
export async function claimAllConcurrently(repos: JobsRepo[], t: number, leaseMs: number, batch: number): Promise<number[]> {
  const claimed: number[] = []
  const claimer = async (jobs: JobsRepo, owner: string, batched: boolean) => {
    for (;;) {
      const got = batched ? await jobs.claimBatch('process', batch, t, leaseMs, owner) : [await jobs.claim(t, leaseMs, owner)].filter((j) => j !== null)
      if (got.length === 0) return
      for (const j of got) claimed.push(j.id)
    }
  }
  await Promise.all(repos.flatMap((jobs, node) => [0, 1, 2, 3].map((k) => claimer(jobs, `node${node}:${k}`, k % 2 === 1))))
  return claimed
}
