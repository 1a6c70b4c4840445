/** Agent-run statements whose text both dialects share (each passes its own placeholders). */

const INTERRUPTED_COLUMNS = 'id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger'

/**
 * Runs still `running` that no live node runs: claimed by none (from before cluster mode), or by a node gone
 * from cluster_nodes (it left cleanly, or was forgotten, while its row still read `running`). A node is
 * listed before it starts any run, so a live node's runs are never among them.
 */
export const UNCLAIMED_RUNS_SQL = `SELECT ${INTERRUPTED_COLUMNS} FROM agent_runs WHERE status = 'running' AND (node_id IS NULL OR node_id NOT IN (SELECT id FROM cluster_nodes)) ORDER BY id`

/**
 * A report's runs in an Org, newest first: by when each was made (an App's runs never overlap), then id,
 * since ids made in one second by two nodes sort by the nodes' random bytes, not by time.
 */
export const reportRunsSql = (feedbackId: string, orgId: string, limit: number) =>
  `SELECT * FROM agent_runs WHERE feedback_id = ${feedbackId} AND org_id = ${orgId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`
