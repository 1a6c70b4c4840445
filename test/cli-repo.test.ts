/**
 * `fixloop app connect-repo` / `disconnect-repo` through the compiled binary: the token comes from a
 * file, is sealed at rest, never printed; bad values are refused with a clear message.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary, openDataDb } from './helpers-lifecycle'

const TOKEN = 'glpat-' + 'Zx8Kq2Lm9Vb4Nc7Rt1Yw'

describe('connect-repo', () => {
  let dataDir: string
  let appId: string
  let tokenFile: string
  beforeAll(async () => {
    ensureBinary()
    dataDir = tempDir()
    appId = (await cliTenant(dataDir)).appId
    tokenFile = join(tempDir(), 'token')
    writeFileSync(tokenFile, TOKEN + '\n', { mode: 0o600 })
  })

  test('connects with every flag; prints the connection without the token', async () => {
    const r = await runBinary([
      'app', 'connect-repo', appId, '--git-url', 'https://gitlab.example.com/acme/shop.git', '--base-branch', 'develop',
      '--host', 'gitlab', '--host-token-file', tokenFile, '--agent', 'aider', '--model', 'gpt-4o', '--timeout-seconds', '600',
      '--pr-mode', 'draft', '--verify-command', 'npm test', '--max-files', '5', '--max-lines', '200', '--deny-paths', 'db/migrations/**,infra/**',
      '--data-dir', dataDir, '--json',
    ])
    expect(r.code).toBe(0)
    expect(r.stdout).not.toContain(TOKEN)
    const c = JSON.parse(r.stdout)
    expect(c).toMatchObject({
      appId, gitUrl: 'https://gitlab.example.com/acme/shop.git', baseBranch: 'develop', host: 'gitlab', hostApiUrl: 'https://gitlab.example.com/api/v4',
      hostRepo: 'acme/shop', hasHostToken: true, agent: 'aider', model: 'gpt-4o', timeoutSeconds: 600, prMode: 'draft', verifyCommand: 'npm test',
      maxFiles: 5, maxLines: 200, denyPaths: ['db/migrations/**', 'infra/**'],
    })
    const db = openDataDb(dataDir)
    try {
      expect(JSON.stringify(db.query('SELECT * FROM repo_connections').all())).not.toContain(TOKEN)
    } finally {
      db.close()
    }
    expect(readFileSync(join(dataDir, 'fixloop.db')).includes(Buffer.from(TOKEN))).toBe(false)
  })

  test('GitHub defaults: api.github.com, ready PRs, Claude Code, 900 s, 20 files, 1000 lines', async () => {
    const c = await cliJson(dataDir, ['app', 'connect-repo', appId, '--git-url', 'git@github.com:acme/shop.git', '--host', 'github', '--host-token-file', tokenFile])
    expect(c).toMatchObject({ hostApiUrl: 'https://api.github.com', hostRepo: 'acme/shop', prMode: 'ready', agent: 'claude-code', timeoutSeconds: 900, maxFiles: 20, maxLines: 1000, baseBranch: 'main', runsPerDay: 20, maxCostUsdPerMonth: 50 })
  })

  const refusals: [string, string[], RegExp][] = [
    ['a token in the URL', ['--git-url', `https://oauth2:${TOKEN}@gitlab.example.com/a/b.git`, '--host', 'gitlab', '--host-token-file', 'TOKENFILE'], /must not carry credentials/],
    ['a password in the API URL', ['--git-url', 'https://git.example.com/a/b.git', '--host', 'gitea', '--host-api-url', `https://bot:${TOKEN}@git.example.com/api/v1`, '--host-token-file', 'TOKENFILE'], /--host-api-url must not carry credentials/],
    ['a host without a token', ['--git-url', 'https://github.com/a/b.git', '--host', 'github'], /needs an access token/],
    ['an unknown host kind', ['--git-url', 'https://x/a/b.git', '--host', 'bitbucket'], /--host must be one of github, gitea, gitlab, none/],
    ['an unknown agent', ['--git-url', 'https://x/a/b.git', '--agent', 'devin'], /--agent must be one of/],
    ['command without a command', ['--git-url', 'https://x/a/b.git', '--agent', 'command'], /--agent-command/],
    ['a bad timeout', ['--git-url', 'https://x/a/b.git', '--timeout-seconds', 'soon'], /--timeout-seconds must be an integer/],
    ['a missing token file', ['--git-url', 'https://x/a/b.git', '--host', 'github', '--host-token-file', '/nonexistent/token'], /cannot read/],
    ['no git url', ['--host', 'none'], /missing --git-url/],
    ['a token on the command line', ['--git-url', 'https://x/a/b.git', '--host-token', TOKEN], /Unknown option|--host-token/],
  ]
  for (const [name, args, message] of refusals) {
    test(`refuses ${name}`, async () => {
      const r = await runBinary(['app', 'connect-repo', appId, ...args.map((a) => (a === 'TOKENFILE' ? tokenFile : a)), '--data-dir', dataDir, '--json'])
      expect(r.code).not.toBe(0)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(message)
      expect(r.stderr).not.toContain(TOKEN)
    })
  }

  test('an unknown app', async () => {
    const r = await runBinary(['app', 'connect-repo', '0'.repeat(24), '--git-url', 'https://x/a/b.git', '--data-dir', dataDir])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('unknown app')
  })

  test('disconnect-repo', async () => {
    expect(await cliJson(dataDir, ['app', 'disconnect-repo', appId])).toEqual({ appId, disconnected: true })
    expect(await cliJson(dataDir, ['app', 'disconnect-repo', appId])).toEqual({ appId, disconnected: false })
  })
})
