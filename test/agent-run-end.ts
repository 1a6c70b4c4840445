/** Waiting for a report's agent run to end, as the agent test files do. */
import { call, eventually, type TestServer } from './harness'

/**
 * Waits until the report leaves the agent (pull request opened, or failed), then until the runner is idle
 * (its audit and events written), and returns the report and its run as the API shows them.
 */
export async function runEnd(srv: Pick<TestServer, 'url' | 'runner'>, key: string, id: string, timeoutMs = 30_000): Promise<{ id: string; item: any; run: any }> {
  const item = await eventually(async () => {
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: key })
    return ['pr_opened', 'failed'].includes(g.body.status) ? g.body : undefined
  }, timeoutMs)
  await srv.runner.idle()
  const run = (await call(srv.url, 'GET', `/v1/agent-runs/${id}`, { auth: key })).body
  return { id, item, run }
}
