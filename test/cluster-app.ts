/**
 * One App on a real SQLite file with the cluster service over it, as the worker runs it: `add` stores a
 * report (as intake does) and clusters it. For the clustering tests that need the service's own
 * verdicts (src/dedup/service.ts) without a server.
 */
import { rmSync } from 'node:fs'
import { insertApp, insertReport, openBenchDb } from '../bench/cluster'
import { createClusterService, type ClusterService } from '../src/dedup/service'
import { openSqliteStore } from '../src/db/sqlite/store'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { systemClock } from '../src/core/clock'

export type ClusterVerdict = { leadId: string | null; reason: string; score?: number; suggestion?: { leadId: string; score: number; reason: string } | null }

export interface ClusterApp {
  cluster: ClusterService
  appId: string
  /** Stores `text` as the App's next report; its id (not clustered: `clusterReport` it when wanted). */
  store(text: string): string
  /** Stores `text` and clusters it: its id and the verdict. */
  add(text: string): { id: string; verdict: ClusterVerdict }
}

/** Runs `fn` against a fresh App; the database file is removed afterwards. */
export async function withClusterApp<T>(fn: (app: ClusterApp) => T | Promise<T>): Promise<T> {
  const { sqlite, dir } = openBenchDb()
  try {
    const cluster = createClusterService(openSqliteStore(sqliteStorage(sqlite), systemClock).sides, systemClock)
    const appId = 'a'.repeat(24)
    insertApp(sqlite, appId)
    let n = 0
    const store = (text: string): string => {
      const id = (++n).toString(16).padStart(24, '0')
      insertReport(sqlite, appId, id, { text }, n)
      return id
    }
    const add = (text: string) => {
      const id = store(text)
      return { id, verdict: cluster.clusterReport(id) as ClusterVerdict }
    }
    return await fn({ cluster, appId, store, add })
  } finally {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
