/**
 * Opening the pull/merge request through the git host's REST API: GitHub (and GitHub Enterprise),
 * Gitea/Forgejo and GitLab, and reading its state back. The token goes in the auth header only; every
 * call goes through the bounded outbound client (src/core/outbound-http.ts: at most 2 MiB of answer, one
 * deadline for the whole exchange, redirects never followed, so the token never reaches another URL).
 * The API URL is the Org's to choose: its host is resolved before every call, which then connects to exactly
 * the addresses checked (no second DNS answer). A link-local or metadata address is always refused; private
 * and loopback ones are allowed unless FIXLOOP_GIT_HOST_ALLOW_PRIVATE=0 (a server shared by Orgs that do not
 * trust each other), since a self-hosted GitLab or Gitea usually lives inside the network.
 */
import type { HostKind } from '../modules/connections/service'
import { githubHeaders, remoteHttpUrl, retryAfterMs, scrub } from '../core/outbound'
import { OutboundError, requestBounded, type OutboundAnswer, type OutboundRequest } from '../core/outbound-http'
import { isMetadataOrLinkLocal, refusedAddress, resolveHost, type CheckedAddress } from '../core/address-guard'
import { allowPrivateHint } from '../core/process-role'
import { OUTBOUND_TIMEOUT_MS_DEFAULT, openRequestDeadlineMs } from '../core/outbound-deadline'

export interface PullRequest {
  title: string
  body: string
  head: string
  base: string
  draft: boolean
}

export class HostError extends Error {}

/** How a call to the git host is made: whether private and loopback addresses are allowed (FIXLOOP_GIT_HOST_ALLOW_PRIVATE, on by default), its deadline. */
export interface HostCallOptions {
  allowPrivate: boolean
  /**
   * FIXLOOP_OUTBOUND_TIMEOUT in ms (default 15 s): a read's deadline; opening a request gets twice it
   * (src/core/outbound-deadline.ts).
   */
  timeoutMs?: number
}

/**
 * The git host's address rule (src/core/address-guard.ts, shared with trackers, webhooks and SMTP): the
 * addresses the API URL's host resolves to, never link-local or metadata, and public unless private ones are
 * allowed; a HostError otherwise.
 */
async function guard(kind: string, apiUrl: string, allowPrivate: boolean): Promise<CheckedAddress[]> {
  const host = new URL(apiUrl).hostname.replace(/^\[|\]$/g, '')
  const addresses = await resolveHost(host)
  if (addresses.length === 0) throw new HostError(`${kind} API unreachable at ${apiUrl}: the host ${host} does not resolve`)
  const metadata = addresses.find((a) => isMetadataOrLinkLocal(a.address))
  if (metadata) throw new HostError(`refused by the git-host address guard: ${host} resolves to ${metadata.address}, a link-local or cloud metadata address, where no git host lives`)
  const bad = refusedAddress(addresses, allowPrivate)
  if (bad) throw new HostError(`refused by the git-host address guard: ${host} resolves to ${bad.address}, a private, loopback or reserved address (${allowPrivateHint('FIXLOOP_GIT_HOST_ALLOW_PRIVATE')})`)
  return addresses
}

/** One call to the host; a failure to get a whole answer is a HostError naming the host, never the token. */
async function hostCall(kind: string, apiUrl: string, token: string, r: OutboundRequest, allowPrivate: boolean): Promise<OutboundAnswer> {
  const addresses = await guard(kind, r.url, allowPrivate)
  try {
    return await requestBounded({ ...r, addresses })
  } catch (e) {
    if (!(e instanceof OutboundError)) throw e
    throw new HostError(scrub(e.failure === 'too_large' ? `${kind} API at ${apiUrl} ${e.message}` : `${kind} API unreachable at ${apiUrl}: ${e.message}`, [token]))
  }
}

/** A redirect is never followed (it would carry the token along): the API URL is wrong. */
function refuseRedirect(kind: string, res: OutboundAnswer): void {
  if (res.status >= 300 && res.status < 400) throw new HostError(`${kind} API answered ${res.status} (a redirect, not followed: set the connection's API URL to the API itself)`)
}

function request(kind: Exclude<HostKind, 'none'>, apiUrl: string, token: string, path: string, pr: PullRequest): { url: string; headers: Record<string, string>; body: unknown } {
  const json = { 'content-type': 'application/json', 'user-agent': 'fixloop' }
  switch (kind) {
    case 'github':
      return {
        url: `${apiUrl}/repos/${path}/pulls`,
        headers: { ...json, ...githubHeaders(token) },
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
export async function openPullRequest(kind: Exclude<HostKind, 'none'>, apiUrl: string, token: string, hostRepo: string, pr: PullRequest, { allowPrivate, timeoutMs = OUTBOUND_TIMEOUT_MS_DEFAULT }: HostCallOptions): Promise<string> {
  const req = request(kind, apiUrl, token, hostRepo, pr)
  const res = await hostCall(kind, apiUrl, token, { url: req.url, method: 'POST', headers: req.headers, body: JSON.stringify(req.body), timeoutMs: openRequestDeadlineMs(timeoutMs) }, allowPrivate)
  refuseRedirect(kind, res)
  const text = res.text
  let body: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text) as unknown
    if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>
  } catch {
    // not JSON: keep the text for the message
  }
  if (res.status < 200 || res.status >= 300) {
    const message = body.message ?? body.error ?? text.slice(0, 300)
    throw new HostError(scrub(`${kind} API answered ${res.status} when opening the ${kind === 'gitlab' ? 'merge' : 'pull'} request: ${typeof message === 'string' ? message : JSON.stringify(message)}`, [token]))
  }
  // Only an http(s) URL is stored and shown as the request's link (a hostile host's javascript: is not).
  const url = remoteHttpUrl(kind === 'gitlab' ? body.web_url : body.html_url)
  if (url === null) throw new HostError(`${kind} API answered ${res.status} without an http(s) ${kind === 'gitlab' ? 'web_url' : 'html_url'}`)
  return url
}

/** A pull/merge request's state on its host, as polling reads it. */
export type PullState = 'open' | 'merged' | 'closed'

/** The host throttled the read: try again after `retryAfterMs`. */
export class HostThrottled extends HostError {
  constructor(readonly retryAfterMs: number) {
    super(`the git host asked to wait ${Math.ceil(retryAfterMs / 1000)} s (Retry-After)`)
  }
}

/** The number of the pull/merge request at `webUrl` (…/pull/7, …/pulls/7, …/-/merge_requests/7), or null. */
export function pullNumberOf(webUrl: string): number | null {
  const m = /\/(?:pull|pulls|merge_requests)\/(\d{1,10})\/?$/.exec(webUrl)
  return m ? Number(m[1]) : null
}


/**
 * Reads the state of pull/merge request `number`: GitHub GET /repos/{o}/{r}/pulls/{n}, Gitea GET
 * /repos/{o}/{r}/pulls/{n}, GitLab GET /projects/{path}/merge_requests/{iid}. Throws HostThrottled on 429
 * (or a 403 with Retry-After, GitHub's secondary limit), HostError otherwise; never carries the token.
 */
export async function pullRequestState(kind: Exclude<HostKind, 'none'>, apiUrl: string, token: string, hostRepo: string, number: number, { allowPrivate, timeoutMs = OUTBOUND_TIMEOUT_MS_DEFAULT }: HostCallOptions): Promise<PullState> {
  const url = kind === 'gitlab' ? `${apiUrl}/projects/${encodeURIComponent(hostRepo)}/merge_requests/${number}` : `${apiUrl}/repos/${hostRepo}/pulls/${number}`
  const headers: Record<string, string> =
    kind === 'github'
      ? { ...githubHeaders(token), 'user-agent': 'fixloop' }
      : kind === 'gitea'
        ? { accept: 'application/json', authorization: `token ${token}`, 'user-agent': 'fixloop' }
        : { accept: 'application/json', 'private-token': token, 'user-agent': 'fixloop' }
  const res = await hostCall(kind, apiUrl, token, { url, method: 'GET', headers, timeoutMs }, allowPrivate)
  refuseRedirect(kind, res)
  const wait = retryAfterMs(res.headers.get('retry-after'))
  if (res.status === 429 || (res.status === 403 && wait !== null)) throw new HostThrottled(wait ?? 60_000)
  const text = res.text
  if (res.status < 200 || res.status >= 300) throw new HostError(scrub(`${kind} API answered ${res.status} when reading the ${kind === 'gitlab' ? 'merge' : 'pull'} request ${number}: ${text.slice(0, 200)}`, [token]))
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text)
  } catch {
    throw new HostError(`${kind} API answered ${res.status} without JSON`)
  }
  if (body === null || typeof body !== 'object') throw new HostError(`${kind} API answered ${res.status} without a JSON object`)
  // GitLab: opened | closed | locked | merged (locked: a transient state of an open request).
  if (kind === 'gitlab') return body.state === 'merged' ? 'merged' : body.state === 'closed' ? 'closed' : 'open'
  return body.merged === true ? 'merged' : body.state === 'closed' ? 'closed' : 'open'
}
