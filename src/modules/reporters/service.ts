/**
 * A reporter's data (CONTRACT "Retention and a reporter's data"): export every report of an end user
 * in an Org (or one App), or erase them. Erasure removes the reports for good, in batches of the store's
 * `eraseBatch` per transaction (ReportersRepo.removeReports says what goes with them), then their blobs;
 * it is idempotent (a second call finds nothing) and audited without the identity in clear: the audit
 * entry holds how many reports went and a SHA-256 of the identifier, never the email or id itself.
 */
import { createHmac } from 'node:crypto'
import { ApiError } from '../../core/errors'
import type { AuditEntry, ActedBy } from '../audit/entry'
import type { FullFeedbackItem } from '../feedback/model'
import type { Reporter, ReportersRepo } from './repo'
import type { IntakeTurns } from '../../db/intake-turns'
import { batchPacer, pause } from './age-sweep'

/**
 * How many of the reporter's ids one read takes (newest first); the batches are then cut from them. Nothing
 * indexes a reporter's email or id, so each read goes through the Org's reports: read per batch, that was
 * 190 ms of a batch's ~370 ms at 200,000 reports on PostgreSQL (bench/pg-erase.ts), for a reporter of 100
 * reports as much as for one of 100,000. 20,000 ids are ~0.5 MB.
 */
export const ERASE_READ = 20_000

/** Ids are made from their second (src/core/ids.ts); another node's clock may run a little behind this one's. */
const ID_CLOCK_MARGIN_MS = 2_000
/** The lowest id of the second after `ms`'s: every id made up to `ms` sorts below it. */
const idsBefore = (ms: number) => (Math.floor(ms / 1000) + 1).toString(16).padStart(8, '0')

export interface ReportersDeps {
  repo: ReportersRepo
  /** The full item, as GET /v1/feedback/:id gives it. */
  feedback: { get(orgId: string, id: string, base: string): Promise<FullFeedbackItem> }
  apps: { everInOrg(orgId: string, appId: string): Promise<boolean> }
  /** Removes detached uploads' objects now (src/modules/uploads/service.ts `discard`). */
  uploads: { discard(keys: readonly string[]): Promise<number> }
  audit: { record(e: AuditEntry): Promise<unknown> }
  /** The keyed hashes reporter mail records an address under (src/modules/mail/address.ts: current and legacy). */
  addressHashes(email: string): string[]
  /** The key of the erasure audit's identity digest (erasureDigestKey). */
  digestKey: Uint8Array
  /** Intake's commit times (the store's `turns`): the erasure paces its batches as the retention does. */
  intake?: Pick<IntakeTurns, 'msSinceIntakeCommit'>
}

/**
 * A one-way mark of who was erased, for the audit log: lets the instance's operator match a request
 * (`fixloop audit digest`), never reveals it. Keyed (HMAC-SHA-256 under a key derived from the master key):
 * a plain hash of an email can be reversed by hashing candidate addresses, and the audit log is exported to
 * SIEMs where anyone could try; without the key, nobody can.
 */
export const identityDigest = (who: Reporter, key: Uint8Array) =>
  createHmac('sha256', key).update(who.externalUserId !== undefined ? `externalUserId:${who.externalUserId}` : `email:${who.email.toLowerCase()}`).digest('hex')

/** The erasure audit's key, from the instance's URL-signing key (itself derived from the master key). */
export const erasureDigestKey = (urlSigningKey: Uint8Array): Uint8Array => createHmac('sha256', urlSigningKey).update('fixloop/erasure-audit/v1').digest()

/**
 * A report as its reporter's export shows it: their own data only. A lead's item carries its duplicates
 * (other reporters' texts and identities) and a theme and consolidated text written from their words;
 * a data-subject export is handed to the requester, so those are left out (`duplicateCount` still says
 * how many reports joined).
 */
function ownPart(item: FullFeedbackItem): FullFeedbackItem {
  return { ...item, duplicates: [], theme: null, consolidatedText: null }
}

export function createReportersService(deps: ReportersDeps) {
  const { repo, feedback, apps, uploads, audit, addressHashes, digestKey, intake } = deps

  async function checkApp(orgId: string, appId: string | undefined) {
    if (appId && !(await apps.everInOrg(orgId, appId))) throw new ApiError('app_not_found')
  }

  return {
    /** One page of the reporter's reports, newest first, as full items; nextCursor null on the last page. */
    async export(orgId: string, q: { who: Reporter; appId?: string; cursor?: string; limit: number }, base: string): Promise<{ data: FullFeedbackItem[]; nextCursor: string | null }> {
      await checkApp(orgId, q.appId)
      const ids = await repo.reportIds({ orgId, who: q.who, appId: q.appId, before: q.cursor, limit: q.limit + 1 })
      const more = ids.length > q.limit
      const page = more ? ids.slice(0, q.limit) : ids
      const data: FullFeedbackItem[] = []
      for (const id of page) {
        try {
          data.push(ownPart(await feedback.get(orgId, id, base)))
        } catch (e) {
          // Removed between the two reads (an erasure or the retention): not part of the export any more.
          if (!(e instanceof ApiError && e.code === 'not_found')) throw e
        }
      }
      return { data, nextCursor: more ? page[page.length - 1] : null }
    },

    /**
     * Erases every report of the reporter in the Org (or one App). `erased` is how many reports this call
     * removed: a report that a concurrent erasure of the same reporter or the report retention removed
     * first is counted by that one (its own answer and audit entry), so the audit log counts each removed
     * report once. The call answers only once none of the reporter's reports that existed when it began
     * is left: a batch that a racer emptied does not end it (it did, leaving the rest to the racer, which
     * might still fail); those submitted meanwhile go up to one last read (see below).
     */
    async erase(orgId: string, q: { who: Reporter; appId?: string }, by: ActedBy): Promise<{ erased: number }> {
      await checkApp(orgId, q.appId)
      let erased = 0
      let files = 0
      let mailRecords = 0
      // Paced as the report retention is (./age-sweep.ts): the erasure runs on the HTTP thread, and its
      // batches followed each other without ever yielding it: erasing a reporter of 20,000 reports held
      // every request (submissions, health checks, the dashboard) for the whole erasure, ~10 s.
      const pacer = batchPacer(repo.eraseBatch, intake)
      let pending: string[] = []
      // The ids of the last read and how many of them this call removed: a read that finds only ids the
      // previous one found, none of which could be removed, would find them for ever.
      let lastRead = new Set<string>()
      let removedOfRead = 0
      // Read again until a read finds nothing: reports submitted meanwhile go too. But a reporter who keeps
      // submitting as fast as the batches remove (a busy intake slows them: batchPacer) must not keep the
      // call going for as long as they submit: a read that finds only reports made since the call began
      // (ids from `upTo` on) is the last one when it found them all; when it was full, older ones may lie
      // past it, and the reads take only what existed when the call began (below `upTo`) until none is
      // left, then once more without that bound. What arrives after the last read is the next call's.
      const upTo = idsBefore(Date.now() + ID_CLOCK_MARGIN_MS)
      let bounded = false
      let last = false
      for (;;) {
        if (pending.length === 0) {
          if (last) break
          const read = await repo.reportIds({ orgId, who: q.who, appId: q.appId, before: bounded ? upTo : undefined, limit: ERASE_READ })
          if (read.length === 0 || (removedOfRead === 0 && read.every((id) => lastRead.has(id)))) {
            if (!bounded) break
            last = true
            pending = await repo.reportIds({ orgId, who: q.who, appId: q.appId, limit: ERASE_READ })
            if (pending.length === 0) break
          } else {
            if (!bounded && read.every((id) => id >= upTo)) {
              if (read.length < ERASE_READ) last = true
              else bounded = true
            }
            lastRead = new Set(read)
            removedOfRead = 0
            pending = read
          }
        }
        const started = performance.now()
        const ids = pending.splice(0, pacer.next())
        // The reporter's unsubscribe and opt-in records (keyed by a hash of the address, per App) go too:
        // read before the reports that name the addresses are gone.
        const pairs = new Map<string, { appId: string; emailHash: string }>()
        const add = (appId: string, emailHash: string) => pairs.set(`${appId} ${emailHash}`, { appId, emailHash })
        for (const a of await repo.addressesOf(orgId, ids)) {
          if (a.emailHash) add(a.appId, a.emailHash)
          if (a.email) for (const h of addressHashes(a.email)) add(a.appId, h)
        }
        mailRecords += await repo.forgetAddresses([...pairs.values()])
        const out = await repo.removeReports(orgId, ids)
        erased += out.removed
        removedOfRead += out.removed
        const waitMs = pacer.done(out.removed, performance.now() - started)
        if (out.uploadKeys.length > 0) files += await uploads.discard(out.uploadKeys)
        await pause(waitMs)
      }
      await audit.record({
        orgId,
        actor: by.actor,
        ip: by.ip ?? null,
        action: 'reporter.erased',
        targetId: q.appId ?? null,
        data: { erased, attachments: files, mailRecords, by: q.who.externalUserId !== undefined ? 'externalUserId' : 'email', identityDigest: identityDigest(q.who, digestKey), ...by.note },
      })
      return { erased }
    },
  }
}
export type ReportersService = ReturnType<typeof createReportersService>
