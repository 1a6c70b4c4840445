/**
 * Opening the pull/merge request through the git host's REST API: GitHub (and GitHub Enterprise),
 * Gitea/Forgejo and GitLab. The token goes in the auth header only.
 */
import type { HostKind } from '../modules/connections/service'
import { scrub } from './git'

export interface PullRequest {
  title: string
  body: string
  head: string
  base: string
  draft: boolean
}

export class HostError extends Error {}

function request(kind: Exclude<HostKind, 'none'>, apiUrl: string, token: string, path: string, pr: PullRequest): { url: string; headers: Record<string, string>; body: unknown } {
  const json = { 'content-type': 'application/json', 'user-agent': 'fixloop' }
  switch (kind) {
    case 'github':
      return {
        url: `${apiUrl}/repos/${path}/pulls`,
        headers: { ...json, accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28' },
        body: { title: pr.title, head: pr.head, base: pr.base, body: pr.body, draft: pr.draft },
      }
    case 'gitea':
      // Gitea marks drafts by a title prefix.
      return {
        url: `${apiUrl}/repos/${path}/pulls`,
        headers: { ...json, accept: 'application/json', authorization: `token ${token}` },
        body: { title: pr.draft ? `WIP: ${pr.title}` : pr.title, head: pr.head, base: pr.base, body: pr.body },
      }
    case 'gitlab':
      return {
        url: `${apiUrl}/projects/${encodeURIComponent(path)}/merge_requests`,
        headers: { ...json, accept: 'application/json', 'private-token': token },
        body: { source_branch: pr.head, target_branch: pr.base, title: pr.draft ? `Draft: ${pr.title}` : pr.title, description: pr.body },
      }
  }
}

/** Opens the PR/MR; returns its web URL. Errors carry the host's status and message, never the token. */
export async function openPullRequest(kind: Exclude<HostKind, 'none'>, apiUrl: string, token: string, hostRepo: string, pr: PullRequest, timeoutMs = 30_000): Promise<string> {
  const req = request(kind, apiUrl, token, hostRepo, pr)
  let res: Response
  try {
    res = await fetch(req.url, { method: 'POST', headers: req.headers, body: JSON.stringify(req.body), signal: AbortSignal.timeout(timeoutMs) })
  } catch (e) {
    throw new HostError(scrub(`${kind} API unreachable at ${apiUrl}: ${e instanceof Error ? e.message : String(e)}`, [token]))
  }
  const text = await res.text()
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text for the message
  }
  if (!res.ok) {
    const message = body.message ?? body.error ?? text.slice(0, 300)
    throw new HostError(scrub(`${kind} API answered ${res.status} when opening the ${kind === 'gitlab' ? 'merge' : 'pull'} request: ${typeof message === 'string' ? message : JSON.stringify(message)}`, [token]))
  }
  const url = (kind === 'gitlab' ? body.web_url : body.html_url) as unknown
  if (typeof url !== 'string') throw new HostError(`${kind} API answered ${res.status} without a ${kind === 'gitlab' ? 'web_url' : 'html_url'}`)
  return url
}
