/**
 * Git for agent runs: real git, run with a minimal environment, never with the agent's hooks. The host
 * token reaches git only for clone and push, through a credential helper file that exists for the length
 * of that one git command (mode 0700, in the workspace's private `cred/` directory, which no sandbox
 * mounts): never in any process's environment, in argv (visible in `ps`), in the remote URL, in logs or
 * in an error text.
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { execCommand, type ExecResult } from './exec'
import { shellQuote } from './presets'

export interface GitAuth {
  token: string
  /** The user name the host expects with a token: x-access-token (GitHub), oauth2 (GitLab), fixloop (Gitea). */
  username: string
  /** The connection's git URL: the token is handed out for its scheme and host only (`helperScript`). */
  gitUrl: string
}

/**
 * What git's credential protocol calls the remote of an http(s) git URL: `protocol` and `host` (with the
 * port when the URL names one), as git sends them to a helper; null for any other URL (ssh, git, file and
 * paths never ask a helper for a password).
 */
export function credentialTarget(gitUrl: string): { protocol: string; host: string } | null {
  const m = /^(https?):\/\/([^/?#@]+)(?:[/?#]|$)/i.exec(gitUrl)
  return m ? { protocol: m[1].toLowerCase(), host: m[2] } : null
}

/**
 * The credential helper: answers `get` with the token only when git asks for the connection's own scheme
 * and host. git follows a redirect of its first request to another host (http.followRedirects=initial)
 * and asks the helper again, for that host: a helper answering whatever asked handed the token to any
 * server the git remote redirected to. Anything else gets no answer (git then fails there, unauthenticated).
 */
export function helperScript(auth: GitAuth, marker: string): string {
  const target = credentialTarget(auth.gitUrl)
  if (!target) return '#!/bin/sh\nexit 0\n'
  return [
    '#!/bin/sh',
    'test "$1" = get || exit 0',
    'proto=; host=',
    'while IFS= read -r line; do',
    '  case "$line" in',
    `    ${shellQuote(`protocol=${target.protocol}`)}) proto=1 ;;`,
    `    ${shellQuote(`host=${target.host}`)}) host=1 ;;`,
    '  esac',
    'done',
    'test -n "$proto" && test -n "$host" || exit 0',
    `cat <<'${marker}'`,
    `username=${auth.username}`,
    `password=${auth.token}`,
    marker,
    '',
  ].join('\n')
}

/** git's environment: no system or global config, no prompts. Never a secret. */
export function gitEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    // git reads $XDG_CONFIG_HOME/git/{config,ignore,attributes} beside ~/.gitconfig: kept in `home` too.
    XDG_CONFIG_HOME: home,
  }
}

export class GitError extends Error {}

/** Replaces every occurrence of the secrets in a text (for errors and output tails). */
import { scrub } from '../core/outbound'
export { scrub }

/**
 * Settings on every git call after the clone: the agent may have planted hooks, an fsmonitor command or
 * attribute files, and none of them may run or count (the config itself is checked unchanged first).
 */
export const GIT_SAFE = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'core.attributesFile=/dev/null', '-c', 'core.excludesFile=/dev/null', '-c', 'protocol.file.allow=always']

export async function git(args: string[], cwd: string, env: Record<string, string>, timeoutMs = 120_000): Promise<ExecResult> {
  return execCommand(['git', ...GIT_SAFE, ...args], { cwd, env, timeoutMs })
}

/** Runs git and throws a GitError when it fails. */
export async function gitOk(args: string[], cwd: string, env: Record<string, string>, what: string, timeoutMs?: number, secrets: string[] = []): Promise<string> {
  const r = await git(args, cwd, env, timeoutMs)
  if (r.code !== 0) {
    const detail = r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')
    throw new GitError(scrub(`${what} failed: ${detail}`, secrets))
  }
  return r.stdout
}

/**
 * Runs one git command that talks to the host (clone, push) with the token available through a
 * credential helper file written just before and removed right after. The environment carries only the
 * helper's path.
 */
export async function gitWithToken(args: string[], cwd: string, env: Record<string, string>, auth: GitAuth | null, credDir: string, what: string, timeoutMs?: number): Promise<string> {
  if (!auth) return gitOk(args, cwd, env, what, timeoutMs)
  if (/[\x00-\x1f\x7f]/.test(auth.token + auth.username)) throw new GitError(`${what} failed: the host token contains control characters`)
  mkdirSync(credDir, { recursive: true, mode: 0o700 })
  const helper = join(credDir, `helper-${randomBytes(8).toString('hex')}`)
  const marker = `FIXLOOP_${randomBytes(8).toString('hex')}`
  writeFileSync(helper, helperScript(auth, marker), { mode: 0o700 })
  chmodSync(helper, 0o700)
  try {
    const withHelper = { ...env, GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'credential.helper', GIT_CONFIG_VALUE_0: '', GIT_CONFIG_KEY_1: 'credential.helper', GIT_CONFIG_VALUE_1: `!${shellQuote(helper)}` }
    return await gitOk(args, cwd, withHelper, what, timeoutMs, [auth.token])
  } finally {
    rmSync(helper, { force: true })
  }
}

export const AUTH_USERNAMES: Record<string, string> = { github: 'x-access-token', gitlab: 'oauth2', gitea: 'fixloop', none: 'fixloop' }
