/**
 * Guardrails: what an agent's change must pass before anything is pushed. Each failure names its rule
 * in `guardrailReason`. The checks read the whole change against the base commit, as src/agent/change.ts
 * computes it (attributes ignored); tampering with git metadata or refs is refused before that.
 */
import { CREDENTIAL_RULES, sanitizeText, type RedactionCounts } from '../sanitize/sanitize'
import { globMatches } from '../core/globs'

export { denyPatternProblem, globMatches } from '../core/globs'

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

/** Largest file an agent may add or change (bytes), whatever its line count. */
export const MAX_FILE_BYTES = 1024 * 1024

export interface DiffStats {
  files: { path: string; added: number; deleted: number; binary: boolean; bytes: number }[]
  symlinks: string[]
  /** Submodules or nested repositories (mode 160000). */
  gitlinks: string[]
  addedLines: string[]
}

export interface GuardrailLimits {
  maxFiles: number
  maxLines: number
  denyPaths: readonly string[]
}

/** The first guardrail the change breaks, as a human-readable reason, or null when it passes. */
export function checkGuardrails(diff: DiffStats, limits: GuardrailLimits): string | null {
  if (diff.files.length === 0) return 'no change: the agent left the repository as it was'
  if (diff.files.length > limits.maxFiles) return `too many files changed: ${diff.files.length} (limit ${limits.maxFiles})`
  const lines = diff.files.reduce((n, f) => n + f.added + f.deleted, 0)
  if (lines > limits.maxLines) return `too many lines changed: ${lines} (limit ${limits.maxLines})`
  const deny = [...DEFAULT_DENY_PATHS, ...limits.denyPaths]
  for (const f of diff.files) {
    const hit = deny.find((g) => globMatches(g, f.path))
    if (hit) return `denied path: ${f.path} (matches ${hit})`
  }
  if (diff.gitlinks.length > 0) return `submodule or nested repository: ${diff.gitlinks[0]}`
  if (diff.symlinks.length > 0) return `symlink: ${diff.symlinks[0]}`
  const binary = diff.files.find((f) => f.binary)
  if (binary) return `binary file: ${binary.path}`
  const big = diff.files.find((f) => f.bytes > MAX_FILE_BYTES)
  if (big) return `file too large: ${big.path} (${big.bytes} bytes, limit ${MAX_FILE_BYTES})`
  const counts: RedactionCounts = {}
  for (const line of diff.addedLines) sanitizeText(line.slice(1), counts, CREDENTIAL_RULES)
  const found = Object.keys(counts)
  if (found.length > 0) return `added lines contain secrets (${found.sort().join(', ')})`
  return null
}
