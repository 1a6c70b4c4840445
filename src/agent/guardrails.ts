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
  // Gitea and Forgejo Actions (a supported host) read their workflows here, and run them for a branch of
  // the repository itself with its secrets, like GitHub's: an agent's workflow would run on fixloop's push.
  '.gitea/workflows/**',
  '.gitea/actions/**',
  '.forgejo/workflows/**',
  '.forgejo/actions/**',
  // Woodpecker and Drone, the CI usually beside Gitea/Forgejo: a push runs their pipeline with its secrets.
  '.woodpecker.yml',
  '.woodpecker.yaml',
  '.woodpecker/**',
  '.drone.yml',
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
  /**
   * The literal values the agent held and must not publish: every variable passed through to it (its
   * model API key, FIXLOOP_AGENT_ENV's names), as src/agent/scrubber.ts's `secretLiterals` lists them.
   * The credential rules know a key by its shape; these are known by value, whatever their shape.
   */
  secrets?: readonly string[]
}

/** The first of the run's literal secrets that `text` holds, or undefined. */
const heldSecret = (text: string, secrets: readonly string[]) => secrets.find((s) => text.includes(s))

/**
 * A path that carries a secret (a file or folder NAME is pushed as much as its content): by value, or by
 * the credential rules' shapes.
 */
function secretInPath(path: string, secrets: readonly string[]): string[] | null {
  if (heldSecret(path, secrets) !== undefined) return ['agent_env']
  const counts: RedactionCounts = {}
  sanitizeText(path, counts, CREDENTIAL_RULES)
  const found = Object.keys(counts)
  return found.length > 0 ? found.sort() : null
}

/** The first guardrail the change breaks, as a human-readable reason, or null when it passes. */
export function checkGuardrails(diff: DiffStats, limits: GuardrailLimits): string | null {
  if (diff.files.length === 0) return 'no change: the agent left the repository as it was'
  if (diff.files.length > limits.maxFiles) return `too many files changed: ${diff.files.length} (limit ${limits.maxFiles})`
  const lines = diff.files.reduce((n, f) => n + f.added + f.deleted, 0)
  if (lines > limits.maxLines) return `too many lines changed: ${lines} (limit ${limits.maxLines})`
  const secrets = limits.secrets ?? []
  // Before any reason that names a path: the reason is shown and stored (the scrubber would mask it too).
  for (const f of diff.files) {
    const found = secretInPath(f.path, secrets)
    if (found) return `a file name contains secrets (${found.join(', ')})`
  }
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
  if (diff.addedLines.some((line) => heldSecret(line, secrets) !== undefined)) counts.agent_env = 1
  const found = Object.keys(counts)
  if (found.length > 0) return `added lines contain secrets (${found.sort().join(', ')})`
  return null
}
