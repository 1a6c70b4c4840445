/**
 * Real git repositories for the agent-run tests: a bare repository stands in for the App's remote (what
 * the git host would hold), and these helpers read it back the way a reviewer would see the pull request.
 * Everything goes through the `git` binary; nothing is faked.
 */
import { mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { tempDir } from './temp-dirs'

/**
 * Identity and settings for every commit the fixtures make. Signing is off and hooks point nowhere so a
 * developer's global git config (gpg, hooks, templates) cannot change what the tests see.
 */
const GIT_FLAGS = ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null']

/** Runs git and returns stdout; throws with stderr on a non-zero exit, so a broken fixture fails loudly. */
export function git(args: string[], cwd?: string): string {
  const run = Bun.spawnSync(['git', ...GIT_FLAGS, ...args], { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } })
  if (run.exitCode !== 0) throw new Error(`git ${args.join(' ')} failed (${run.exitCode}): ${run.stderr.toString().trim()}`)
  return run.stdout.toString()
}

function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path)
    mkdirSync(dirname(full), { recursive: true })
    writeFileSync(full, content)
  }
}

/** Commits `files` in a scratch work tree checked out at `from` and pushes the result to `branch`. */
function commitFiles(barePath: string, from: string | null, branch: string, files: Record<string, string>, message: string): void {
  const work = tempDir('fixloop-git-work-')
  try {
    if (from === null) git(['init', '--quiet', `--initial-branch=${branch}`, work])
    else git(['clone', '--quiet', '--branch', from, barePath, work])
    writeTree(work, files)
    git(['add', '--all'], work)
    git(['commit', '--quiet', '--allow-empty', '-m', message], work)
    git(['push', '--quiet', barePath, `HEAD:refs/heads/${branch}`], work)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/**
 * Creates `<dir>/<name>.git`, a bare repository whose `branch` (also its HEAD, i.e. the default branch)
 * holds one commit with `files`. Returns the bare repository's path.
 */
export function makeBareRepo(dir: string, files: Record<string, string>, branch = 'main', name = 'app'): string {
  const barePath = join(dir, `${name}.git`)
  if (existsSync(barePath)) throw new Error(`${barePath} already exists`)
  git(['init', '--quiet', '--bare', `--initial-branch=${branch}`, barePath])
  commitFiles(barePath, null, branch, files, 'Initial commit')
  return barePath
}

/**
 * Adds one commit with `files` on `branch` (created from `from` when it does not exist yet), as if
 * someone had pushed it: used to give the stub a head branch, or to make a branch fixloop must not reuse.
 */
export function pushCommit(barePath: string, branch: string, files: Record<string, string>, from = 'main', message = `Change on ${branch}`): void {
  commitFiles(barePath, branchExists(barePath, branch) ? branch : from, branch, files, message)
}

/** True when `refs/heads/<branch>` exists in the bare repository. */
export function branchExists(barePath: string, branch: string): boolean {
  const run = Bun.spawnSync(['git', `--git-dir=${barePath}`, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { stdout: 'ignore', stderr: 'ignore' })
  return run.exitCode === 0
}

/** The file's content on `branch`, or null when the branch or the file does not exist. */
export function readFileAtBranch(barePath: string, branch: string, path: string): string | null {
  const run = Bun.spawnSync(['git', `--git-dir=${barePath}`, 'show', `refs/heads/${branch}:${path}`], { stdout: 'pipe', stderr: 'ignore' })
  return run.exitCode === 0 ? run.stdout.toString() : null
}

/**
 * Paths the pull request from `head` into `base` would show: the diff from their merge base, renames
 * split into delete + add so a moved file is seen under both names. Sorted.
 */
export function changedFiles(barePath: string, base: string, head: string): string[] {
  const out = git([`--git-dir=${barePath}`, 'diff', '--name-only', '--no-renames', `refs/heads/${base}...refs/heads/${head}`])
  return out.split('\n').filter(Boolean).sort()
}
