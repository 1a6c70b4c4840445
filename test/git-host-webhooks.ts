/**
 * Real-shaped webhook deliveries of GitHub, Gitea/Forgejo and GitLab about a pull/merge request, signed
 * (or tokened) the way each host does it, for the git-host stub's pull requests (test/git-host-stub.ts).
 * Shapes follow the hosts' documented payloads (trimmed to the fields a receiver reads plus some others).
 *
 *   GitHub  X-GitHub-Event, X-GitHub-Delivery (a GUID), X-Hub-Signature-256: sha256=<hex HMAC-SHA256>
 *   Gitea   X-Gitea-Event, X-Gitea-Delivery (a GUID), X-Gitea-Signature: <hex HMAC-SHA256> (Forgejo: X-Forgejo-*)
 *   GitLab  X-Gitlab-Event, X-Gitlab-Event-UUID, X-Gitlab-Token: <the secret>
 */
import { createHmac, randomUUID } from 'node:crypto'

export type HookHost = 'github' | 'gitea' | 'gitlab'
export interface PrRef { url: string; number: number; head: string; base?: string }
export interface Delivery { headers: Record<string, string>; body: string; id: string }
export type HookKind = 'merged' | 'closed' | 'reopened' | 'changes_requested' | 'comment'

const repoOf = (url: string) => {
  const m = /^(https?:\/\/[^/]+)\/(.+?)\/(?:-\/)?(?:pull|pulls|merge_requests)\/\d+$/.exec(url)
  return { web: m?.[1] ?? 'http://127.0.0.1', fullName: m?.[2] ?? 'acme/shop' }
}

function githubBody(kind: HookKind, pr: PrRef, text: string, association: string): { event: string; body: unknown } {
  const { web, fullName } = repoOf(pr.url)
  const pull = {
    url: `${web}/repos/${fullName}/pulls/${pr.number}`, id: 1000 + pr.number, html_url: pr.url, number: pr.number,
    state: kind === 'merged' || kind === 'closed' ? 'closed' : 'open', title: 'fix: the report', user: { login: 'fixloop-bot', id: 7, type: 'Bot' },
    body: 'Report …', merged: kind === 'merged', merged_at: kind === 'merged' ? '2026-11-25T01:00:00Z' : null, draft: false,
    head: { label: `acme:${pr.head}`, ref: pr.head, sha: 'a'.repeat(40) }, base: { label: 'acme:main', ref: pr.base ?? 'main', sha: 'b'.repeat(40) },
  }
  const repository = { id: 42, name: fullName.split('/').pop(), full_name: fullName, html_url: `${web}/${fullName}`, private: true, owner: { login: fullName.split('/')[0] } }
  const sender = { login: 'reviewer', id: 9, type: 'User' }
  switch (kind) {
    case 'merged':
    case 'closed':
      return { event: 'pull_request', body: { action: 'closed', number: pr.number, pull_request: pull, repository, sender } }
    case 'reopened':
      return { event: 'pull_request', body: { action: 'reopened', number: pr.number, pull_request: pull, repository, sender } }
    case 'changes_requested':
      return { event: 'pull_request_review', body: { action: 'submitted', review: { id: 5, user: sender, body: text, state: 'changes_requested', author_association: association, html_url: `${pr.url}#pullrequestreview-5`, submitted_at: '2026-11-25T01:00:00Z' }, pull_request: pull, repository, sender } }
    case 'comment':
      return {
        event: 'issue_comment',
        body: { action: 'created', issue: { number: pr.number, html_url: pr.url, title: pull.title, state: 'open', pull_request: { url: pull.url, html_url: pr.url, diff_url: `${pr.url}.diff` } }, comment: { id: 77, body: text, user: sender, author_association: association, html_url: `${pr.url}#issuecomment-77` }, repository, sender },
      }
  }
}

function giteaBody(kind: HookKind, pr: PrRef, text: string): { event: string; body: unknown } {
  const { web, fullName } = repoOf(pr.url)
  const pull = {
    id: 1000 + pr.number, url: pr.url, number: pr.number, user: { id: 7, login: 'fixloop-bot', username: 'fixloop-bot' }, title: 'fix: the report', body: 'Report …',
    state: kind === 'merged' || kind === 'closed' ? 'closed' : 'open', html_url: pr.url, merged: kind === 'merged', merged_at: kind === 'merged' ? '2026-11-25T01:00:00Z' : null,
    head: { label: pr.head, ref: pr.head, sha: 'a'.repeat(40) }, base: { label: pr.base ?? 'main', ref: pr.base ?? 'main', sha: 'b'.repeat(40) },
  }
  const repository = { id: 42, name: fullName.split('/').pop(), full_name: fullName, html_url: `${web}/${fullName}`, owner: { login: fullName.split('/')[0] } }
  const sender = { id: 9, login: 'reviewer', username: 'reviewer' }
  switch (kind) {
    case 'merged':
    case 'closed':
      return { event: 'pull_request', body: { action: 'closed', number: pr.number, pull_request: pull, repository, sender } }
    case 'reopened':
      return { event: 'pull_request', body: { action: 'reopened', number: pr.number, pull_request: pull, repository, sender } }
    case 'changes_requested':
      return { event: 'pull_request_review_rejected', body: { action: 'reviewed', number: pr.number, pull_request: pull, repository, sender, review: { type: 'pull_request_review_rejected', content: text } } }
    case 'comment':
      return { event: 'issue_comment', body: { action: 'created', issue: { id: 1000 + pr.number, number: pr.number, html_url: pr.url, pull_request: { merged: false, merged_at: null } }, comment: { id: 77, body: text, user: sender, html_url: `${pr.url}#issuecomment-77` }, repository, sender, is_pull: true } }
  }
}

function gitlabBody(kind: HookKind, pr: PrRef, text: string): { event: string; body: unknown } {
  const { web, fullName } = repoOf(pr.url)
  const project = { id: 42, name: fullName.split('/').pop(), path_with_namespace: fullName, web_url: `${web}/${fullName}` }
  const user = { id: 9, name: 'Reviewer', username: 'reviewer' }
  const mr = { id: 1000 + pr.number, iid: pr.number, url: pr.url, source_branch: pr.head, target_branch: pr.base ?? 'main', title: 'fix: the report', state: kind === 'merged' ? 'merged' : kind === 'closed' ? 'closed' : 'opened' }
  if (kind === 'changes_requested') {
    // GitLab 17.x+: a review submitted with "Request changes" is a merge request update whose reviewer state changed.
    const before = { id: 9, name: 'Reviewer', username: 'reviewer', state: 'unreviewed', re_requested: false }
    const after = { ...before, state: 'requested_changes' }
    return {
      event: 'Merge Request Hook',
      body: { object_kind: 'merge_request', event_type: 'merge_request', user, project, object_attributes: { ...mr, action: 'update' }, reviewers: [after], changes: { reviewers: { previous: [before], current: [after] } }, repository: { name: project.name, homepage: project.web_url } },
    }
  }
  if (kind === 'comment') {
    return { event: 'Note Hook', body: { object_kind: 'note', event_type: 'note', user, project, object_attributes: { id: 77, note: text, noteable_type: 'MergeRequest', url: `${pr.url}#note_77` }, merge_request: mr } }
  }
  const action = { merged: 'merge', closed: 'close', reopened: 'reopen' }[kind]
  return { event: 'Merge Request Hook', body: { object_kind: 'merge_request', event_type: 'merge_request', user, project, object_attributes: { ...mr, action }, repository: { name: project.name, homepage: project.web_url } } }
}

/** A delivery of `kind` about `pr`, signed with `secret` (pass `sign: false` for none, `forge: true` for a Forgejo's header names). */
export function delivery(host: HookHost, kind: HookKind, pr: PrRef, secret: string, opts: { text?: string; id?: string; sign?: boolean; forgejo?: boolean; association?: string } = {}): Delivery {
  const text = opts.text ?? '/fixloop please also handle the empty cart'
  const { event, body } = host === 'github' ? githubBody(kind, pr, text, opts.association ?? 'MEMBER') : host === 'gitea' ? giteaBody(kind, pr, text) : gitlabBody(kind, pr, text)
  const raw = JSON.stringify(body)
  const id = opts.id ?? randomUUID()
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const sign = opts.sign ?? true
  const mac = createHmac('sha256', secret).update(raw).digest('hex')
  if (host === 'github') {
    Object.assign(headers, { 'x-github-event': event, 'x-github-delivery': id, 'user-agent': 'GitHub-Hookshot/abc1234' })
    if (sign) headers['x-hub-signature-256'] = `sha256=${mac}`
  } else if (host === 'gitea') {
    const p = opts.forgejo ? 'x-forgejo' : 'x-gitea'
    Object.assign(headers, { [`${p}-event`]: event, [`${p}-delivery`]: id })
    if (sign) headers[`${p}-signature`] = mac
  } else {
    Object.assign(headers, { 'x-gitlab-event': event, 'x-gitlab-event-uuid': id, 'user-agent': 'GitLab/17.5.0' })
    if (sign) headers['x-gitlab-token'] = secret
  }
  return { headers, body: raw, id }
}

/** Sends a delivery to fixloop's route for the App. */
export async function send(base: string, appId: string, d: Delivery): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/v1/git-hooks/${appId}`, { method: 'POST', headers: d.headers, body: d.body })
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  return { status: res.status, body }
}
