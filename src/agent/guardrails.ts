/**
 * Guardrails: what an agent's change must pass before anything is pushed. Each failure names its rule
 * in `guardrailReason`. The checks read the staged diff (`git add -A`) and the repository's own git
 * configuration, which the agent could have tampered with.
 */
import { CREDENTIAL_RULES, sanitizeText, type RedactionCounts } from '../sanitize/sanitize'
import { gitOk } from './git'

/** Paths no agent change may touch, whatever the App adds (CI, secrets, keys, submodules). */
export const DEFAULT_DENY_PATHS: readonly string[] = [
  '.github/workflows/**',
  '.github/actions/**',
  '.gitlab-ci.yml',
  '.gitlab/**',
  '.circleci/**',
  '.travis.yml',
  '.buildkite/**',
  'Jenkinsfile',
  'azure-pipelines.yml',
  'bitbucket-pipelines.yml',
  '.gitmodules',
  '**/.env',
  '**/.env.*',
  '**/*.pem',
  '**/*.key',
  '**/*.p12',
  '**/*.pfx',
  '**/id_rsa*',
  '**/id_ecdsa*',
  '**/id_ed25519*',
  '**/.npmrc',
  '**/.pypirc',
  '**/.netrc',
]

/** A glob as a RegExp: `**` crosses directories, `*` and `?` do not; a leading `**\/` may match nothing. */
export function globToRegExp(glob: string): RegExp {
  let re = ''
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]
    if (c === '*' && glob[i + 1] === '*') {
      if (glob[i + 2] === '/') {
        re += '(?:.*/)?'
        i += 2
      } else {
        re += '.*'
        i += 1
      }
    } else if (c === '*') re += '[^/]*'
    else if (c === '?') re += '[^/]'
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${re}$`)
}

export interface DiffStats {
  files: { path: string; added: number; deleted: number; binary: boolean }[]
  symlinks: string[]
  addedLines: string[]
}

export interface GuardrailLimits {
  maxFiles: number
  maxLines: number
  denyPaths: readonly string[]
}

/** Stages everything the agent changed and reads the diff against HEAD. */
export async function stagedDiff(repo: string, env: Record<string, string>): Promise<DiffStats> {
  await gitOk(['add', '-A'], repo, env, 'git add')
  const numstat = await gitOk(['diff', '--cached', '--numstat', '-z', '--no-renames'], repo, env, 'git diff')
  const files: DiffStats['files'] = []
  for (const entry of numstat.split('\0').filter(Boolean)) {
    const [added, deleted, path] = entry.split('\t')
    files.push({ path, added: added === '-' ? 0 : Number(added), deleted: deleted === '-' ? 0 : Number(deleted), binary: added === '-' })
  }
  const raw = await gitOk(['diff', '--cached', '--raw', '-z', '--no-renames'], repo, env, 'git diff --raw')
  const symlinks: string[] = []
  const parts = raw.split('\0').filter(Boolean)
  for (let i = 0; i + 1 < parts.length; i += 2) {
    // ":<old mode> <new mode> <old sha> <new sha> <status>" then the path
    const [, newMode] = parts[i].split(' ')
    if (newMode === '120000') symlinks.push(parts[i + 1])
  }
  const patch = await gitOk(['diff', '--cached', '-U0', '--no-color', '--no-renames'], repo, env, 'git diff -U0')
  const addedLines = patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))
  return { files, symlinks, addedLines }
}

/** The first guardrail the change breaks, as a human-readable reason, or null when it passes. */
export function checkGuardrails(diff: DiffStats, limits: GuardrailLimits, gitMetaChanged: string | null): string | null {
  if (gitMetaChanged) return `the agent changed ${gitMetaChanged}`
  if (diff.files.length === 0) return 'no change: the agent left the repository as it was'
  if (diff.files.length > limits.maxFiles) return `too many files changed: ${diff.files.length} (limit ${limits.maxFiles})`
  const lines = diff.files.reduce((n, f) => n + f.added + f.deleted, 0)
  if (lines > limits.maxLines) return `too many lines changed: ${lines} (limit ${limits.maxLines})`
  const deny = [...DEFAULT_DENY_PATHS, ...limits.denyPaths].map((g) => ({ g, re: globToRegExp(g) }))
  for (const f of diff.files) {
    const hit = deny.find((d) => d.re.test(f.path))
    if (hit) return `denied path: ${f.path} (matches ${hit.g})`
  }
  const binary = diff.files.find((f) => f.binary)
  if (binary) return `binary file: ${binary.path}`
  if (diff.symlinks.length > 0) return `symlink: ${diff.symlinks[0]}`
  const counts: RedactionCounts = {}
  for (const line of diff.addedLines) sanitizeText(line.slice(1), counts, CREDENTIAL_RULES)
  const found = Object.keys(counts)
  if (found.length > 0) return `added lines contain secrets (${found.sort().join(', ')})`
  return null
}
