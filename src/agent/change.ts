/**
 * Judging the whole change by what is pushed. The agent had write access to its clone, `.git` included
 * (objects too), so nothing in it is read as git data: fixloop keeps its own bare clone of the base commit
 * (`base.git`, outside the sandbox, sharing no file with the agent's clone or the remote) and
 *   1. refuses the run when the agent's `.git` is no longer a directory, its metadata that can make git run
 *      code or read things differently changed (config, hooks, info/, objects/info/alternates, shallow;
 *      read with bounds, src/agent/git-meta.ts), or a ref but the work branch differs (a switched-to
 *      branch with commits, a new tag, a `refs/replace/*` object): guardrailed;
 *   2. stages the agent's work tree FILES into a private index of `base.git` built from the base commit,
 *      whatever the agent did to HEAD, its index, its commits or its object store;
 *   3. reads the diff by a bare `git diff-tree` in `base.git` between the base commit and that tree, so
 *      no `.gitattributes` can hide a file behind `-diff`, no textconv runs, and no object the agent
 *      rewrote (a base blob made to look like the new one) can hide a change from the guardrails;
 *   4. makes the one commit it pushes (`commit-tree` of that tree on the base) in `base.git`, and pushes
 *      it from there: the commit judged is the commit pushed.
 */
import { existsSync, lstatSync } from 'node:fs'
import { join } from 'node:path'
import { execCommand } from './exec'
import { GitError, gitOk, GIT_SAFE } from './git'
import { fingerprintMeta } from './git-meta'
import { MAX_FILE_BYTES, type DiffStats } from './guardrails'
import { largeFiles, type LargeFile } from './large-files'

/** What the agent's clone looked like when the agent got it. */
export interface Baseline {
  base: string
  branch: string
  meta: Map<string, string>
  refs: string
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

/** Records the agent's clone before the agent runs; `base` is the base commit read from `base.git`. */
export async function recordBaseline(repo: string, env: Record<string, string>, branch: string, base: string): Promise<Baseline> {
  const head = (await gitOk(['rev-parse', '--verify', 'HEAD^{commit}'], repo, env, 'read the clone\'s HEAD')).trim()
  if (head !== base) throw new Error(`the clone's HEAD (${head}) is not the base commit (${base})`)
  const meta = await fingerprintMeta(repo)
  if (!meta.ok) throw new Error(`the fresh clone's git metadata: ${meta.refused}`)
  return { base, branch, meta: meta.files, refs: await refsExcept(repo, env, branch) }
}

/** Why the agent's git metadata or refs cannot be trusted, or null. Reads files only until the config is known good. */
export async function tamperedGit(repo: string, env: Record<string, string>, b: Baseline): Promise<string | null> {
  const dotGit = join(repo, '.git')
  if (!existsSync(dotGit) || lstatSync(dotGit).isSymbolicLink() || !lstatSync(dotGit).isDirectory()) return 'the agent replaced the .git directory'
  const fingerprint = await fingerprintMeta(repo)
  if (!fingerprint.ok) return fingerprint.refused
  const after = fingerprint.files
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

/**
 * The tree of base + every file in the agent's work tree, hashed into `base.git` through a private index
 * (never the agent's index or object store; git skips every `.git` entry of a work tree).
 */
export async function stageWorktree(baseRepo: string, workTree: string, env: Record<string, string>, indexFile: string, base: string): Promise<string> {
  const ienv = { ...env, GIT_INDEX_FILE: indexFile }
  const at = [`--git-dir=${baseRepo}`, `--work-tree=${workTree}`]
  await gitOk([...at, 'read-tree', base], workTree, ienv, 'read the base tree')
  const big = await largeFileStaged(at, workTree, ienv, base)
  if (big) throw new ChangeRefused(big)
  await gitOk([...at, 'add', '-A'], workTree, ienv, 'git add')
  return (await gitOk([...at, 'write-tree'], workTree, ienv, 'write the tree')).trim()
}

/**
 * Why `git add -A` must not run: a file over MAX_FILE_BYTES that it would stage, found by its size BEFORE
 * git hashes it (the same refusal as the diff's size check, which comes only after git read every byte).
 * A large file git would not add is no reason: one the repository's ignore rules exclude (a build output),
 * or one tracked in the base and left at its base size (git's cost for it is what the repository already
 * holds; a change to it is still judged by the diff). git is asked about the large files alone, with
 * commands that read names and the base's objects, never a file's content, each ONCE with every name on
 * its stdin: named as pathspecs 200 at a time, each call re-read the folders holding them, and 100,000
 * sparse files the repository ignores (one `truncate` for the agent) took 156 s to judge, a million hours.
 */
async function largeFileStaged(at: string[], workTree: string, ienv: Record<string, string>, base: string): Promise<string | null> {
  const found = await largeFiles(workTree, MAX_FILE_BYTES)
  if (typeof found === 'string') return found
  const tooLarge = (f: LargeFile) => `file too large: ${f.path} (${f.bytes} bytes, limit ${MAX_FILE_BYTES})`
  // A name that is not UTF-8 cannot be named to git exactly: never excused.
  const undecodable = found.find((f) => f.undecodable)
  if (undecodable) return tooLarge(undecodable)
  if (found.length === 0) return null
  // Ignored by the rules `add -A` follows (a file the base tracks never is: the index holds the base).
  // "./" first: a name like `:(glob)x` is otherwise read as pathspec magic, which check-ignore refuses.
  const checkIgnore = (files: LargeFile[]) => gitStdin([...at, 'check-ignore', '--stdin', '-z'], workTree, ienv, files.map((f) => `./${f.path}\0`).join(''), [0, 1], 'check the ignore rules')
  let candidates = found
  let ignoredOut: string
  try {
    ignoredOut = await checkIgnore(candidates)
  } catch (e) {
    // check-ignore refuses a name inside a submodule of the base ("is in submodule"), where `add -A` never
    // stages anything: those files are no reason, the others are asked about again.
    if (!(e instanceof GitError)) throw e
    const gitlinks = await gitlinksAbove(at, workTree, ienv, base, candidates)
    candidates = candidates.filter((f) => !gitlinks.some((g) => f.path.startsWith(`${g}/`)))
    if (gitlinks.length === 0) throw e
    if (candidates.length === 0) return null
    ignoredOut = await checkIgnore(candidates)
  }
  const ignored = new Set(ignoredOut.split('\0'))
  const staged = candidates.filter((f) => !ignored.has(`./${f.path}`))
  if (staged.length === 0) return null
  // cat-file reads one name a line; a name with a line break is asked about by ls-tree, NUL-separated.
  const plain = staged.filter((f) => !/[\r\n]/.test(f.path))
  const broken = staged.filter((f) => /[\r\n]/.test(f.path))
  // "<base>:<path>" is the base's blob at that path ("missing" when there is none: a new file).
  const sizes = plain.length === 0 ? [] : (await gitStdin([...at, 'cat-file', '--batch-check=%(objecttype) %(objectsize)'], workTree, ienv, plain.map((f) => `${base}:${f.path}\n`).join(''), [0], 'list the base files')).split('\n')
  const refused = plain.find((f, i) => sizes[i] !== `blob ${f.bytes}`)
  if (refused) return tooLarge(refused)
  if (broken.length === 0) return null
  const baseSizes = await baseSizesByName(at, workTree, ienv, base, broken)
  const refusedBroken = broken.find((f) => baseSizes.get(f.path) !== `blob ${f.bytes}`)
  return refusedBroken ? tooLarge(refusedBroken) : null
}

/**
 * The base's entries at `files`' paths as "<type> <size>", by `ls-tree -l -z` (200 names a call, named
 * literally): for names with a line break, which `cat-file --batch-check` cannot be given. Its `-z` input
 * (git 2.38) is not enough: its output stays one line an object until `-Z` (git 2.43), and a new file's
 * answer echoes the name, line break and all; ls-tree -z separates its input (argv) and output by NUL on
 * every git. Such names are rare, so the cost of a call per 200 does not matter.
 */
async function baseSizesByName(at: string[], workTree: string, ienv: Record<string, string>, base: string, files: LargeFile[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (let i = 0; i < files.length; i += 200) {
    const names = files.slice(i, i + 200).map((f) => f.path)
    const r = await execCommand(['git', ...GIT_SAFE, '--literal-pathspecs', ...at, 'ls-tree', '-l', '-z', base, '--', ...names], { cwd: workTree, env: ienv, timeoutMs: 120_000, maxOutputBytes: DIFF_OUTPUT_BYTES })
    if (r.code !== 0) throw new GitError(`list the base files failed: ${r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')}`)
    // "<mode> <type> <sha> <size, padded>\t<path>" (size "-" for a tree or a gitlink).
    for (const entry of r.stdout.split('\0')) {
      const tab = entry.indexOf('\t')
      if (tab < 0) continue
      const [, type, , size] = entry.slice(0, tab).split(/ +/)
      out.set(entry.slice(tab + 1), `${type} ${size}`)
    }
  }
  return out
}

/** The base's submodules (gitlinks) among the folders holding `files`: asked by name, 200 folders a call. */
async function gitlinksAbove(at: string[], workTree: string, ienv: Record<string, string>, base: string, files: LargeFile[]): Promise<string[]> {
  const folders = new Set<string>()
  for (const f of files) {
    // Every ancestor once: a folder already seen has its own ancestors in the set.
    for (let d = f.path.slice(0, Math.max(0, f.path.lastIndexOf('/'))); d !== '' && !folders.has(d); d = d.slice(0, Math.max(0, d.lastIndexOf('/')))) folders.add(d)
  }
  const all = [...folders]
  const gitlinks: string[] = []
  for (let i = 0; i < all.length; i += 200) {
    const r = await execCommand(['git', ...GIT_SAFE, '--literal-pathspecs', ...at, 'ls-tree', '-z', base, '--', ...all.slice(i, i + 200)], { cwd: workTree, env: ienv, timeoutMs: 120_000, maxOutputBytes: DIFF_OUTPUT_BYTES })
    if (r.code !== 0) throw new GitError(`list the base's submodules failed: ${r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')}`)
    // "<mode> <type> <sha>\t<path>"; a gitlink's mode is 160000.
    for (const entry of r.stdout.split('\0')) if (entry.startsWith('160000 ')) gitlinks.push(entry.slice(entry.indexOf('\t') + 1))
  }
  return gitlinks
}

/** git with `input` on its stdin; its whole stdout (at most twice as long as the input here), or a GitError. */
async function gitStdin(args: string[], cwd: string, env: Record<string, string>, input: string, okCodes: number[], what: string): Promise<string> {
  // cat-file answers a name it lacks with the name and " missing": a little more than the input.
  const limit = 2 * Buffer.byteLength(input) + 1024
  const r = await execCommand(['git', ...GIT_SAFE, ...args], { cwd, env, timeoutMs: 120_000, stdin: input, maxOutputBytes: limit })
  if (r.code === null || !okCodes.includes(r.code)) throw new GitError(`${what} failed: ${r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')}`)
  if (r.stdoutTruncated) throw new GitError(`${what} failed: more output than expected`)
  return r.stdout
}

/** Most diff output read whole (a change within the guardrails' limits is far smaller). */
const DIFF_OUTPUT_BYTES = 32 * 1024 * 1024

/** A change refused while it is read (guardrailed with the message). */
export class ChangeRefused extends Error {}

/** A change whose diff cannot be read whole: refused, never judged on a part of it. */
export class ChangeTooLarge extends ChangeRefused {}

/**
 * Runs git on fixloop's bare clone from outside any work tree (no in-tree attributes apply) and returns
 * its WHOLE stdout: a diff judged on its tail alone would let the head of a large patch through unread.
 */
async function bare(baseRepo: string, outside: string, env: Record<string, string>, args: string[], what: string, stdin?: string): Promise<string> {
  const r = await execCommand(['git', ...GIT_SAFE, `--git-dir=${baseRepo}`, '--bare', ...args], { cwd: outside, env, timeoutMs: 120_000, stdin, maxOutputBytes: DIFF_OUTPUT_BYTES })
  if (r.code !== 0) throw new GitError(`${what} failed: ${r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')}`)
  if (r.stdoutTruncated) throw new ChangeTooLarge(`change too large to judge: ${what} printed more than ${DIFF_OUTPUT_BYTES} bytes`)
  return r.stdout
}

/** The diff base..tree in `base.git`, read without attributes, textconv or external diff drivers. */
export async function diffTrees(baseRepo: string, outside: string, env: Record<string, string>, base: string, tree: string): Promise<DiffStats> {
  const flags = ['-r', '--no-renames', '--no-textconv', '--no-ext-diff']
  const numstat = await bare(baseRepo, outside, env, ['diff-tree', ...flags, '--numstat', '-z', base, tree], 'git diff --numstat')
  const files: DiffStats['files'] = []
  for (const entry of numstat.split('\0').filter(Boolean)) {
    // "added<TAB>deleted<TAB>path": the path is the rest, a TAB in a file's name included.
    const t1 = entry.indexOf('\t')
    const t2 = entry.indexOf('\t', t1 + 1)
    const [added, deleted, path] = [entry.slice(0, t1), entry.slice(t1 + 1, t2), entry.slice(t2 + 1)]
    files.push({ path, added: added === '-' ? 0 : Number(added), deleted: deleted === '-' ? 0 : Number(deleted), binary: added === '-', bytes: 0 })
  }
  const raw = await bare(baseRepo, outside, env, ['diff-tree', ...flags, '--raw', '-z', base, tree], 'git diff --raw')
  const symlinks: string[] = []
  const gitlinks: string[] = []
  // By position, never by name: the raw and numstat outputs list the same files in the same order, while
  // names that are not UTF-8 decode alike (`big\xfe.txt` and `big\xff.txt` both `big\uFFFD.txt`): looked up
  // by name, the small file's size stood for the large one and a 3 MB file passed the 1 MiB limit.
  const newBlobs: { file: number; sha: string }[] = []
  const parts = raw.split('\0').filter(Boolean)
  if (parts.length !== files.length * 2) throw new ChangeRefused('the diff lists its files differently in two readings: refused')
  for (let i = 0; i + 1 < parts.length; i += 2) {
    // ":<old mode> <new mode> <old sha> <new sha> <status>" then the path
    const [, newMode, , newSha] = parts[i].split(' ')
    const path = parts[i + 1]
    if (path !== files[i / 2].path) throw new ChangeRefused('the diff lists its files differently in two readings: refused')
    if (newMode === '120000') symlinks.push(path)
    if (newMode === '160000') gitlinks.push(path)
    if (newMode.startsWith('100')) newBlobs.push({ file: i / 2, sha: newSha })
  }
  if (newBlobs.length > 0) {
    const sizes = (await bare(baseRepo, outside, env, ['cat-file', '--batch-check=%(objectsize)'], 'git cat-file', newBlobs.map((b) => b.sha).join('\n') + '\n')).split('\n')
    newBlobs.forEach((b, i) => {
      const size = Number(sizes[i])
      // A size git could not tell ("missing") is no size: NaN passes every comparison.
      if (!/^\d+$/.test(sizes[i] ?? '') || !Number.isSafeInteger(size)) throw new ChangeRefused(`the size of ${files[b.file].path} could not be read: refused`)
      files[b.file].bytes = size
    })
  }
  const patch = await bare(baseRepo, outside, env, ['diff-tree', ...flags, '-p', '-U0', '--no-color', base, tree], 'git diff -U0')
  // git calls a file binary only for a NUL in its first 8,000 bytes; one further in (8 KB of text, then a
  // zip: a Python zipapp, a jar) came through as text. Its added lines hold the NUL: binary too.
  const nul = filesWithNul(patch)
  if (nul.sections !== files.length && nul.indexes.length > 0) throw new ChangeRefused('binary file: a NUL byte in an added line (the patch and the file list disagree on which file)')
  for (const i of nul.indexes) files[i].binary = true
  return { files, symlinks, gitlinks, addedLines: addedLinesOf(patch) }
}

/**
 * The files (by their place in the diff, the numstat's order: one `diff --git` section each) with a NUL
 * byte in an added line, and how many sections the patch has.
 */
export function filesWithNul(patch: string): { sections: number; indexes: number[] } {
  const indexes: number[] = []
  let section = -1
  let inHunk = false
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      section++
      inHunk = false
    } else if (line.startsWith('@@')) inHunk = true
    else if (inHunk && line.startsWith('+') && line.includes('\0') && indexes.at(-1) !== section) indexes.push(section)
  }
  return { sections: section + 1, indexes }
}

/**
 * The added lines of a patch: every `+` line inside a hunk. Read by position, not by shape: a header's
 * `+++ b/path` comes before a file's first `@@`, and an added line that itself starts with `++` is
 * `+++…` inside a hunk (filtering on "+++" let `++ token = ghp_…` past the secret scan).
 */
export function addedLinesOf(patch: string): string[] {
  const out: string[] = []
  let inHunk = false
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) inHunk = false
    else if (line.startsWith('@@')) inHunk = true
    else if (inHunk && line.startsWith('+')) out.push(line)
  }
  return out
}

/** fixloop's own commit of the judged tree on the base, in `base.git`: the only commit pushed. */
export async function commitTree(baseRepo: string, env: Record<string, string>, base: string, tree: string, subject: string, body: string): Promise<string> {
  const who = { GIT_AUTHOR_NAME: 'fixloop', GIT_AUTHOR_EMAIL: 'fixloop@users.noreply.localhost', GIT_COMMITTER_NAME: 'fixloop', GIT_COMMITTER_EMAIL: 'fixloop@users.noreply.localhost' }
  return (await gitOk([`--git-dir=${baseRepo}`, 'commit-tree', tree, '-p', base, '-m', subject, '-m', body], baseRepo, { ...env, ...who }, 'commit')).trim()
}
