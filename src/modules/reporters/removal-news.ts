/**
 * The reporters repository with every committed removal told to clustering (ClusterPort.forgetRemoved):
 * the similarity index lives with the worker that clusters (on SQLite the processing thread) and holds each
 * report's sanitized text and cluster link; an erasure or the report retention removes reports in the
 * database only, so without this the index kept an erased report's text until a restart and ranked new
 * reports against clusters by leads that no longer exist. One wrapper, so the erasure and the retention
 * (the two callers of `removeReports`) cannot forget it.
 */
import type { ClusterPort } from '../../dedup/port'
import type { Logger } from '../../core/logger'
import type { ReportersRepo } from './repo'

export function removalsToldToClustering(repo: ReportersRepo, cluster: Pick<ClusterPort, 'forgetRemoved'>, log: Logger): ReportersRepo {
  return {
    ...repo,
    async removeReports(orgId, ids) {
      const out = await repo.removeReports(orgId, ids)
      if (out.removed > 0) {
        // The removal is committed whatever happens here: a processing thread that is down (restarting)
        // builds its indexes from the database when it is back, without the removed reports.
        await cluster.forgetRemoved(ids).catch((e) => log.warn('clustering: could not drop removed reports from the similarity index', { error: e instanceof Error ? e.message : String(e) }))
      }
      return out
    },
  }
}
