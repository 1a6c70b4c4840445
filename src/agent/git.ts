/**
 * Git for agent runs: real git, run with a minimal environment. The host token reaches git only
 * through a credential helper that reads it from the environment of that one git process: it never
 * appears in argv (visible in `ps`), in the remote URL, in logs or in an error text.
 */
import { execCommand, type ExecResult } from './exec'

export interface GitAuth {
  token: string
  /** The user name the host expects with a token: x-access-token (GitHub), oauth2 (GitLab), fixloop (Gitea). */
  username: string
}

export function gitEnv(home: string, auth: GitAuth | null): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
  }
  if (auth) {
    // git ≥ 2.31 reads config from GIT_CONFIG_COUNT/KEY/VALUE: a helper that answers with the token.
    env.FIXLOOP_GIT_USERNAME = auth.username
    env.FIXLOOP_GIT_TOKEN = auth.token
    env.GIT_CONFIG_COUNT = '1'
    env.GIT_CONFIG_KEY_0 = 'credential.helper'
    env.GIT_CONFIG_VALUE_0 = '!f() { echo "username=$FIXLOOP_GIT_USERNAME"; echo "password=$FIXLOOP_GIT_TOKEN"; }; f'
  }
  return env
}

export class GitError extends Error {}

/** Replaces every occurrence of the secrets in a text (for errors and output tails). */
export function scrub(text: string, secrets: (string | null | undefined)[]): string {
  let out = text
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('***')
  return out
}

export async function git(args: string[], cwd: string, env: Record<string, string>, timeoutMs = 120_000): Promise<ExecResult> {
  // Hooks are never run: an agent could have planted one in .git/hooks.
  return execCommand(['git', '-c', 'core.hooksPath=/dev/null', '-c', 'protocol.file.allow=always', ...args], { cwd, env, timeoutMs })
}

/** Runs git and throws a GitError (token scrubbed) when it fails. */
export async function gitOk(args: string[], cwd: string, env: Record<string, string>, what: string, timeoutMs?: number): Promise<string> {
  const r = await git(args, cwd, env, timeoutMs)
  if (r.code !== 0) {
    const detail = r.timedOut ? 'timed out' : r.output.trim().split('\n').slice(-5).join(' | ')
    throw new GitError(scrub(`${what} failed: ${detail}`, [env.FIXLOOP_GIT_TOKEN]))
  }
  return r.stdout
}

export const AUTH_USERNAMES: Record<string, string> = { github: 'x-access-token', gitlab: 'oauth2', gitea: 'fixloop', none: 'fixloop' }
