/**
 * Judging the whole change. The agent had write access to the clone's `.git`, so nothing it left there
 * is trusted: before the agent runs fixloop records the base commit, the refs and a fingerprint of the
 * git metadata that can make git run code or read things differently (config, hooks, info/: attributes,
 * exclude, grafts, sparse-checkout). Afterwards:
 *   1. `.git` must still be a directory with that metadata unchanged, and no ref but the work branch may
 *      differ (a switched-to branch with commits, a new tag, a `refs/replace/*` object): else guardrailed;
 *   2. the change is base..worktree, staged into a private index built from the base commit, whatever the
 *      agent did to HEAD, the index or the work branch (its own commits are flattened away);
 *   3. the diff is read by a bare `git diff-tree` between the two trees, so no `.gitattributes` (in the
 *      tree or the index) can hide a binary or text file behind `-diff`/`diff`, and no textconv runs;
 *   4. fixloop makes the one commit it pushes (`commit-tree` of that tree on the base).
 */
import { createHash } from 'node:crypto'
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { execCommand } from './exec'
import { gitOk } from './git'
import type { DiffStats } from './guardrails'

/** What the clone looked like when the agent got it. */
export interface Baseline {
  base: string
  branch: string
  meta: Map<string, string>
  refs: string
}

/** Files under .git that change how git behaves: the agent must leave them alone. */
function metaFingerprint(repo: string): Map<string, string> {
  const out = new Map<string, string>()
  const hash = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')
  const walk = (rel: string) => {
    const full = join(repo, rel)
    if (!existsSync(full)) return
    const st = lstatSync(full)
    if (st.isSymbolicLink()) out.set(rel, `symlink`)
    else if (st.isDirectory()) for (const name of readdirSync(full)) walk(`${rel}/${name}`)
    // Only regular files are read: a FIFO the agent planted would block the server on open.
    else if (!st.isFile()) out.set(rel, `special:${st.mode.toString(8)}`)
    else if (st.size > 8 * 1024 * 1024) out.set(rel, `large:${st.size}:${st.mtimeMs}`)
    else out.set(rel, `${st.mode.toString(8)}:${hash(full)}`)
  }
  for (const rel of ['.git/config', '.git/hooks', '.git/info', '.git/objects/info', '.git/shallow', '.git/commondir']) walk(rel)
  return out
}

function describeMeta(key: string): string {
  if (key.startsWith('.git/hooks')) return `a git hook (${key})`
  if (key === '.git/config') return 'the git config (.git/config)'
  return `git metadata (${key})`
}

async function refsExcept(repo: string, env: Record<string, string>, branch: string): Promise<string> {
  const all = await gitOk(['for-each-ref', '--format=%(refname) %(objectname)'], repo, env, 'list refs')
  return all
    .split('\n')
    .filter((l) => l && !l.startsWith(`refs/heads/${branch} `))
    .sort()
    .join('\n')
}

export async function recordBaseline(repo: string, env: Record<string, string>, branch: string): Promise<Baseline> {
  const base = (await gitOk(['rev-parse', '--verify', 'HEAD^{commit}'], repo, env, 'read the base commit')).trim()
  return { base, branch, meta: metaFingerprint(repo), refs: await refsExcept(repo, env, branch) }
}

/** Why the agent's git metadata or refs cannot be trusted, or null. Reads files only until the config is known good. */
export async function tamperedGit(repo: string, env: Record<string, string>, b: Baseline): Promise<string | null> {
  const dotGit = join(repo, '.git')
  if (!existsSync(dotGit) || lstatSync(dotGit).isSymbolicLink() || !lstatSync(dotGit).isDirectory()) return 'the agent replaced the .git directory'
  const after = metaFingerprint(repo)
  for (const [k, v] of after) if (b.meta.get(k) !== v) return `the agent changed ${describeMeta(k)}`
  for (const k of b.meta.keys()) if (!after.has(k)) return `the agent changed ${describeMeta(k)} (removed)`
  const refs = await refsExcept(repo, env, b.branch).catch(() => null)
  if (refs === null) return 'the agent broke the git refs'
  if (refs !== b.refs) {
    const before = new Set(b.refs.split('\n'))
    const changed = refs.split('\n').find((l) => !before.has(l)) ?? b.refs.split('\n').find((l) => !refs.includes(l)) ?? ''
    return `the agent rewrote git refs (${changed.split(' ')[0] || 'a ref was removed'})`
  }
  return null
}

/** The tree of base + everything in the work tree, staged in a private index (not the agent's). */
export async function stageWorktree(repo: string, env: Record<string, string>, indexFile: string, base: string): Promise<string> {
  const ienv = { ...env, GIT_INDEX_FILE: indexFile }
  await gitOk(['read-tree', base], repo, ienv, 'read the base tree')
  await gitOk(['add', '-A'], repo, ienv, 'git add')
  return (await gitOk(['write-tree'], repo, ienv, 'write the tree')).trim()
}

/** Runs git on the repository as a bare one from outside the work tree: no in-tree attributes apply. */
function bare(repo: string, outside: string, env: Record<string, string>, args: string[], what: string): Promise<string> {
  return gitOk([`--git-dir=${join(repo, '.git')}`, '--bare', ...args], outside, env, what)
}

/** The diff base..tree, read without attributes, textconv or external diff drivers. */
export async function diffTrees(repo: string, outside: string, env: Record<string, string>, base: string, tree: string): Promise<DiffStats> {
  const flags = ['-r', '--no-renames', '--no-textconv', '--no-ext-diff']
  const numstat = await bare(repo, outside, env, ['diff-tree', ...flags, '--numstat', '-z', base, tree], 'git diff --numstat')
  const files: DiffStats['files'] = []
  for (const entry of numstat.split('\0').filter(Boolean)) {
    const [added, deleted, path] = entry.split('\t')
    files.push({ path, added: added === '-' ? 0 : Number(added), deleted: deleted === '-' ? 0 : Number(deleted), binary: added === '-', bytes: 0 })
  }
  const raw = await bare(repo, outside, env, ['diff-tree', ...flags, '--raw', '-z', base, tree], 'git diff --raw')
  const symlinks: string[] = []
  const gitlinks: string[] = []
  const newBlobs = new Map<string, string>()
  const parts = raw.split('\0').filter(Boolean)
  for (let i = 0; i + 1 < parts.length; i += 2) {
    // ":<old mode> <new mode> <old sha> <new sha> <status>" then the path
    const [, newMode, , newSha] = parts[i].split(' ')
    const path = parts[i + 1]
    if (newMode === '120000') symlinks.push(path)
    if (newMode === '160000') gitlinks.push(path)
    if (newMode.startsWith('100')) newBlobs.set(path, newSha)
  }
  if (newBlobs.size > 0) {
    const shas = [...newBlobs.values()]
    const sizes = await bareWithInput(repo, outside, env, ['cat-file', '--batch-check=%(objectsize)'], shas.join('\n') + '\n')
    const bySha = new Map(shas.map((s, i) => [s, Number(sizes.split('\n')[i])]))
    for (const f of files) f.bytes = bySha.get(newBlobs.get(f.path) ?? '') ?? 0
  }
  const patch = await bare(repo, outside, env, ['diff-tree', ...flags, '-p', '-U0', '--no-color', base, tree], 'git diff -U0')
  const addedLines = patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))
  return { files, symlinks, gitlinks, addedLines }
}

async function bareWithInput(repo: string, outside: string, env: Record<string, string>, args: string[], input: string): Promise<string> {
  const r = await execCommand(['git', `--git-dir=${join(repo, '.git')}`, '--bare', ...args], { cwd: outside, env, timeoutMs: 60_000, stdin: input, maxOutputBytes: 1024 * 1024 })
  return r.stdout
}

/** fixloop's own commit of the judged tree on the base: the only commit pushed. */
export async function commitTree(repo: string, env: Record<string, string>, base: string, tree: string, subject: string, body: string): Promise<string> {
  const who = { GIT_AUTHOR_NAME: 'fixloop', GIT_AUTHOR_EMAIL: 'fixloop@users.noreply.localhost', GIT_COMMITTER_NAME: 'fixloop', GIT_COMMITTER_EMAIL: 'fixloop@users.noreply.localhost' }
  return (await gitOk(['commit-tree', tree, '-p', base, '-m', subject, '-m', body], repo, { ...env, ...who }, 'commit')).trim()
}
