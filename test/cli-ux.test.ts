/**
 * The CLI for someone with only the binary: clear errors instead of stack traces, quiet exits when the
 * reader of the output goes away, -v, every command taking --data-dir, and every setting in --help
 * (from the one table src/core/settings.ts, checked here against config.ts and the README).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, ROOT, eventually, runBinary, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { KNOWN_VARIABLES, OTHER_VARIABLES, SETTINGS } from '../src/core/settings'
import { createContext } from '../src/runtime/open'
import { loadConfig } from '../src/config'
import { createTenantsService } from '../src/modules/tenants/service'
import { privateTargetRule } from '../src/cli/webhooks'
import { VERSION } from '../src/version'
import { sqliteOf } from './sqlite-of'

let dir: string
let orgId: string
beforeAll(async () => {
  ensureBinary()
  dir = tempDir()
  orgId = JSON.parse((await runBinary(['org', 'create', '--name', 'Ops', '--json', '--data-dir', dir])).stdout).id
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const noTrace = (stderr: string) => expect(stderr).not.toMatch(/\n\s+at |Error:|\.ts:\d+/)

describe('errors are messages, not stack traces', () => {
  test('backup --out into a missing folder exits 2 and names the folder', async () => {
    const out = join(dir, 'no', 'such', 'folder', 'b.tar')
    const r = await runBinary(['backup', '--out', out, '--data-dir', dir])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`${join(dir, 'no', 'such', 'folder')} does not exist`)
    noTrace(r.stderr)
  })

  test.each([['under a file', () => join(dir, 'fixloop.db', 'b.tar')], ['into a folder that takes no files', () => '/proc/fixloop-backup.tar']])('backup --out %s exits 2', async (_name, out) => {
    const r = await runBinary(['backup', '--out', out(), '--data-dir', dir])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('fixloop: --out')
    noTrace(r.stderr)
  })

  test.each([
    [['app', 'create', '--org', 'ORG', '--name', 'Shop', '--batch-window-hours', '-1'], '--batch-window-hours must be an integer from 1 to 720, got "-1"'],
    [['app', 'create', '--org', 'ORG', '--name', 'Shop', '--retention-days', '-3'], '--retention-days must be an integer from 0 (keep forever) to 3650, got "-3"'],
    [['serve', '--port', '-1'], '--port: port must be an integer 0-65535, got "-1"'],
  ])('a negative number is read as the flag\'s value and refused by its range: fixloop %p', async (args, message) => {
    const r = await runBinary([...args.map((a) => (a === 'ORG' ? orgId : a)), '--data-dir', dir])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain(`fixloop: ${message}`)
    expect(r.stderr).not.toContain('ambiguous')
    noTrace(r.stderr)
  })

  test.each([
    [['serve', '--port', '--data-dir', '/nonexistent/x'], 'fixloop: --port needs a value (the next argument, "--data-dir", is a flag)'],
    [['org', 'create', '--name', '--json', '--data-dir', '/nonexistent/x'], 'fixloop: --name needs a value (the next argument, "--json", is a flag)'],
    [['org', 'list', '--data-dir'], 'fixloop: --data-dir needs a value'],
    // The flag given before with its value: the sentence named that value as "the next argument".
    [['org', 'create', '--name', 'Acme', '--name', '--json', '--data-dir', '/nonexistent/x'], 'fixloop: --name needs a value (the next argument, "--json", is a flag)'],
  ])('a flag missing its value says so, not node\'s parser wording: fixloop %p', async (args, message) => {
    const r = await runBinary(args)
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain(message)
    expect(r.stderr).not.toMatch(/ambiguous|argument missing|-XYZ/)
    noTrace(r.stderr)
  })

  test('a value starting with a dash that is not a number still goes as --flag=VALUE', async () => {
    const r = await runBinary(['org', 'create', '--name=-Dash-', '--json', '--data-dir', dir])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).name).toBe('-Dash-')
  })

  test('admin create / reset-password without --password-file say what the file holds (and, for create, --no-password)', async () => {
    const create = await runBinary(['admin', 'create', '--email', 'ops@shop.example', '--data-dir', dir])
    expect([create.code, create.stdout]).toEqual([2, ''])
    expect(create.stderr).toContain('fixloop: missing --password-file PATH: a file whose first line is the password')
    expect(create.stderr).toContain('or --no-password for an admin who signs in with SSO only')
    const reset = await runBinary(['admin', 'reset-password', '--email', 'ops@shop.example', '--data-dir', dir])
    expect([reset.code, reset.stdout]).toEqual([2, ''])
    expect(reset.stderr).toContain('a file whose first line is the new password')
    expect(reset.stderr).not.toContain('--no-password')
  })

  test('a name given where --name goes says so: fixloop org create Acme, key create --org ID backend', async () => {
    const org = await runBinary(['org', 'create', 'Acme', '--data-dir', dir])
    expect([org.code, org.stdout]).toEqual([2, ''])
    expect(org.stderr).toContain('unexpected argument "Acme" for "fixloop org create" (a name goes as --name "Acme")')
    const key = await runBinary(['key', 'create', '--org', orgId, 'backend', '--data-dir', dir])
    expect(key.code).toBe(2)
    expect(key.stderr).toContain('(a name goes as --name "backend")')
    // With --name given, an extra argument is only unexpected.
    const both = await runBinary(['org', 'create', '--name', 'Acme', 'Extra', '--data-dir', dir])
    expect(both.stderr).toContain('unexpected argument "Extra" for "fixloop org create"\n')
  })

  test('fixloop help NAME of no command says so (exit 2, the closest command), not the whole help with exit 0', async () => {
    const r = await runBinary(['help', 'orgs'])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain('unknown command "orgs". Did you mean "org"?')
  })

  test('webhook create --events with a type that does not exist lists the types that do', async () => {
    const r = await runBinary(['webhook', 'create', '--org', orgId, '--url', 'https://hooks.example.com/x', '--events', 'feedback.recieved', '--data-dir', dir])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain('unknown event type(s): feedback.recieved; the types are feedback.received, feedback.status_changed,')
    noTrace(r.stderr)
  })

  test.each([['-1'], ['0'], ['two'], ['1000001'], ['2000000']])('tracker connect --min-duplicates %s names the flag, not the API field rules.minDuplicates', async (value) => {
    const app = JSON.parse((await runBinary(['app', 'create', '--org', orgId, '--name', `Tracked ${value}`, '--json', '--data-dir', dir])).stdout).id
    const token = join(dir, 'tracker-token')
    await Bun.write(token, 'ghp_x\n')
    const r = await runBinary(['tracker', 'connect', '--app', app, '--kind', 'github', '--project', 'acme/shop', '--token-file', token, '--min-duplicates', value, '--data-dir', dir])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain(`fixloop: --min-duplicates must be a whole number from 1 to 1000000, or off, got "${value}"`)
    expect(r.stderr).not.toContain('rules.minDuplicates')
  })

  test.each([
    [['--port', '99999', '--from', 'noreply@shop.example'], 'fixloop: --port: a port 1-65535'],
    [['--port', '587', '--from', 'not-an-address'], 'fixloop: --from: an address (noreply@example.com)'],
  ])('app smtp: a setting the mail rules refuse is named by its flag (%p)', async (flags, message) => {
    const app = JSON.parse((await runBinary(['app', 'create', '--org', orgId, '--name', `Mailing ${flags[1]}`, '--json', '--data-dir', dir])).stdout).id
    const r = await runBinary(['app', 'smtp', app, '--host', 'smtp.example.com', '--tls', 'starttls', ...flags, '--data-dir', dir])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain(message)
    noTrace(r.stderr)
  })

  test('chatops slack connect: a value the Slack rules refuse is named by its flag', async () => {
    const bot = join(dir, 'slack-bot')
    const sig = join(dir, 'slack-signing')
    await Bun.write(bot, 'xoxb-12345678abc\n')
    await Bun.write(sig, 'not hex\n')
    const secret = await runBinary(['chatops', 'slack', 'connect', '--org', orgId, '--bot-token-file', bot, '--signing-secret-file', sig, '--channel', 'C0TRIAGE', '--data-dir', dir])
    expect([secret.code, secret.stdout]).toEqual([2, ''])
    expect(secret.stderr).toContain("fixloop: --signing-secret-file: the Slack app's signing secret (hex, from Basic Information)")
    await Bun.write(sig, 'abcdef0123456789abcdef\n')
    const channel = await runBinary(['chatops', 'slack', 'connect', '--org', orgId, '--bot-token-file', bot, '--signing-secret-file', sig, '--channel', 'triage room', '--data-dir', dir])
    expect(channel.code).toBe(2)
    expect(channel.stderr).toContain('fixloop: --channel: a channel id (C0123ABCD) or #name')
  })

  test('a value the service refuses reads as what is wrong with it, not as "the request body" of an API', async () => {
    const pw = join(dir, 'short-password')
    await Bun.write(pw, 'short\n')
    const r = await runBinary(['admin', 'create', '--email', 'ops@shop.example', '--password-file', pw, '--data-dir', dir])
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr).toContain('fixloop: the password must be 10 to 1024 characters (invalid_body)')
    expect(r.stderr).not.toContain('request body')
    noTrace(r.stderr)
  })
})

describe('version', () => {
  test.each([[['-v']], [['--version']], [['version']], [['version', '--data-dir', '/nonexistent/x']], [['--data-dir', '/nonexistent/x', 'version']], [['version', '--data-dir=/x']], [['--data-dir', '/x', '-v']], [['--data-dir=/x', '--version']]])(
    'fixloop %p prints the version and creates nothing',
    async (args) => {
      const r = await runBinary(args)
      expect(r).toEqual({ code: 0, stdout: VERSION + '\n', stderr: '' })
    },
  )
  test('version --json --data-dir DIR → {"version"}', async () => {
    const r = await runBinary(['version', '--json', '--data-dir', dir])
    expect(JSON.parse(r.stdout)).toEqual({ version: VERSION })
  })
  test('only global flags: -v/--version is the version (with --json too), anything else the help', async () => {
    expect(JSON.parse((await runBinary(['--json', '-v'])).stdout)).toEqual({ version: VERSION })
    for (const args of [['--data-dir', '/x', '--help'], ['--data-dir', '/x'], ['--json'], ['help', '--data-dir', '/x']]) {
      const r = await runBinary(args)
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('Usage: fixloop')
    }
  })
  test('other flags are still refused', async () => {
    expect((await runBinary(['version', '--port', '1'])).code).toBe(2)
  })
})

describe('output to a pipe that closes early (| head)', () => {
  let big: string
  beforeAll(async () => {
    big = tempDir()
    const ctx = createContext(loadConfig({ dataDir: big }, {}))
    const tenants = createTenantsService(ctx)
    // Far more than a pipe buffer (64 KiB) of output.
    for (let i = 0; i < 3000; i++) await tenants.createOrg(`Org number ${i} with a long enough name to fill the pipe`)
    sqliteOf(ctx).close()
  })
  afterAll(() => rmSync(big, { recursive: true, force: true }))

  for (const args of [['org', 'list'], ['org', 'list', '--json']]) {
    test(`fixloop ${args.join(' ')} | head -1: exit 0, nothing on stderr`, async () => {
      const proc = Bun.spawn(['bash', '-c', `'${BINARY}' ${args.join(' ')} --data-dir '${big}' | head -c 100 > /dev/null; echo "status=\${PIPESTATUS[0]}"`], { stdout: 'pipe', stderr: 'pipe' })
      const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      expect(stderr).toBe('')
      expect(stdout.trim()).toBe('status=0')
    })
  }
})

describe('webhook deliveries for people', () => {
  test('without --json: a table with one row per attempt, not raw JSON', async () => {
    const env = { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_AGENT_SANDBOX: 'off' }
    const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
    const d = tempDir()
    try {
      const cli = (args: string[]) => runBinary([...args, '--data-dir', d], env)
      const org = JSON.parse((await cli(['org', 'create', '--name', 'Hooks', '--json'])).stdout).id
      const w = JSON.parse((await cli(['webhook', 'create', '--org', org, '--url', `http://127.0.0.1:${receiver.port}/hook`, '--json'])).stdout)
      const server = await spawnServer(d, env)
      try {
        expect((await cli(['webhook', 'test', w.id])).code).toBe(0)
        await eventually(async () => JSON.parse((await cli(['webhook', 'deliveries', w.id, '--json'])).stdout).data[0]?.status === 'succeeded', 15_000)
      } finally {
        await server.stop()
      }
      const r = await cli(['webhook', 'deliveries', w.id])
      expect(r.code).toBe(0)
      const lines = r.stdout.trimEnd().split('\n')
      expect(lines[0].split(/\s+/)).toEqual(['DELIVERY', 'EVENT', 'STATUS', 'NEXT', 'ATTEMPT', 'AT', 'RESPONSE', 'MS', 'ERROR'])
      expect(lines[1]).toMatch(/webhook\.test\s+succeeded\s+-\s+1\s+\S+\s+200\s/)
      expect(r.stdout).not.toContain('{')
      expect(r.stdout).not.toMatch(/^data:/m)
      // --json is unchanged: the page as one object.
      const json = JSON.parse((await cli(['webhook', 'deliveries', w.id, '--json'])).stdout)
      expect(json.data[0]).toMatchObject({ eventType: 'webhook.test', status: 'succeeded' })
    } finally {
      receiver.stop(true)
      rmSync(d, { recursive: true, force: true })
    }
  }, 60_000)
})

describe('admin list for people', () => {
  test('without --json: an aligned table with a header, as every other list (README "The CLI")', async () => {
    const pw = join(dir, 'admin-list-password')
    await Bun.write(pw, 'a long enough password\n')
    for (const email of ['a@x.example', 'someone.with.a.long.name@shop.example']) {
      expect((await runBinary(['admin', 'create', '--email', email, '--password-file', pw, '--data-dir', dir])).code).toBe(0)
    }
    const r = await runBinary(['admin', 'list', '--data-dir', dir])
    expect(r.code).toBe(0)
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^EMAIL +ID +ACCESS +SIGN-IN$/)
    const rows = lines.slice(1).filter((l) => l.includes('x.example') || l.includes('shop.example'))
    expect(rows.length).toBe(2)
    // The id column starts at the same place on every row (and under its header).
    const at = lines[0].indexOf('ID')
    for (const row of rows) expect(row.slice(at)).toMatch(/^[0-9a-f]{24} /)
    expect(rows.find((l) => l.startsWith('a@x.example'))).toContain('instance owner')
  })
})

describe('FIXLOOP_WEBHOOK_ALLOW_PRIVATE on the CLI', () => {
  test('a refusal says how to allow a private target', async () => {
    const r = await runBinary(['webhook', 'create', '--org', orgId, '--url', 'http://127.0.0.1:9/x', '--data-dir', dir])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1')
  })

  test('the rule: the CLI needs the variable too; the hint names the side that lacks it; the server\'s refusal is warned about', () => {
    expect(privateTargetRule(false, '1').hint).toContain('for this command too')
    expect(privateTargetRule(false, undefined).hint).toContain('both on "fixloop serve" and on this command')
    expect(privateTargetRule(true, '0').serverRefuses).toBe(true)
    expect(privateTargetRule(true, '1').serverRefuses).toBe(false)
    expect(privateTargetRule(true, undefined).serverRefuses).toBe(false)
  })

  test('after a server ran with it: the CLI without it is refused and told to set it for the command too', async () => {
    const d = tempDir()
    try {
      const org = JSON.parse((await runBinary(['org', 'create', '--name', 'P', '--json', '--data-dir', d])).stdout).id
      const server = await spawnServer(d, { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_AGENT_SANDBOX: 'off' })
      await server.stop()
      const refused = await runBinary(['webhook', 'create', '--org', org, '--url', 'http://127.0.0.1:9/x', '--data-dir', d])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain('the server on this data dir allows private targets')
      const allowed = await runBinary(['webhook', 'create', '--org', org, '--url', 'http://127.0.0.1:9/x', '--data-dir', d], { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
      expect(allowed.code).toBe(0)
      expect(allowed.stderr).toBe('')
      // A server started without it: the CLI with it still creates, and warns that deliveries will be refused.
      const strict = await spawnServer(d, { FIXLOOP_AGENT_SANDBOX: 'off' })
      await strict.stop()
      const warned = await runBinary(['webhook', 'create', '--org', org, '--url', 'http://127.0.0.1:9/y', '--data-dir', d], { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
      expect(warned.code).toBe(0)
      expect(warned.stderr).toContain('refuses every delivery')
    } finally {
      rmSync(d, { recursive: true, force: true })
    }
  }, 30_000)
})

describe('--help shows every setting', () => {
  const envsInConfig = [...new Set([...readFileSync(join(ROOT, 'src', 'config.ts'), 'utf8').matchAll(/env\.(FIXLOOP_[A-Z0-9_]+)/g)].map((m) => m[1]))]
  const settingEnvs = SETTINGS.flatMap((s) => s.env)

  test('every variable config.ts reads is in the settings table, and nothing else is', () => {
    expect(envsInConfig.filter((e) => !settingEnvs.includes(e))).toEqual([])
    expect(settingEnvs.filter((e) => !envsInConfig.includes(e))).toEqual([])
  })

  test('the README table has the same rows and defaults', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const rows = readme.split('\n').filter((l) => /^\|( `--[a-z-]+`)? \| `FIXLOOP_/.test(l))
    const table = rows.map((l) => {
      const cells = l.split('|').map((c) => c.trim())
      return { env: [...cells[2].matchAll(/FIXLOOP_[A-Z0-9_]+/g)].map((m) => m[0]), default: cells[3].replace(/`/g, '') }
    })
    expect(table).toEqual(SETTINGS.map((s) => ({ env: s.env, default: s.default })))
  })

  test('the README lists every other known variable, and every FIXLOOP_* name the source uses is known', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const rows = readme.split('\n').filter((l) => /^\| `FIXLOOP_[A-Z0-9_]+` \|/.test(l)).map((l) => /FIXLOOP_[A-Z0-9_]+/.exec(l)![0])
    expect(rows).toEqual(OTHER_VARIABLES.map((v) => v.env))
    const used = new Set<string>()
    for (const file of new Bun.Glob('src/**/*.ts').scanSync(ROOT)) {
      for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(/FIXLOOP_[A-Z0-9_]*[A-Z0-9]\b/g)) used.add(m[0])
    }
    used.delete('FIXLOOP_S3') // `FIXLOOP_S3_*` in prose
    expect([...used].filter((v) => !KNOWN_VARIABLES.includes(v)).sort()).toEqual([])
  })

  for (const args of [['--help'], ['serve', '--help']]) {
    test(`fixloop ${args.join(' ')} lists every setting with its default and no pointer to the README`, async () => {
      const r = await runBinary(args)
      expect(r.code).toBe(0)
      for (const s of SETTINGS) {
        const line = r.stdout.split('\n').findIndex((l) => l.includes(s.env.join(', ')))
        expect(`${s.env[0]} ${line >= 0}`).toBe(`${s.env[0]} true`)
        expect(r.stdout).toContain(`(default: ${s.default})`)
      }
      expect(r.stdout).not.toContain("README's")
    })
  }
})

// Issue 36 item 8: the CLI's address guards run in the CLI's process, with the CLI's environment: a
// refusal says what is true there (set the variable for this command), never "on the server allows it".
describe('address-guard refusals from the CLI name the CLI command, not the server', () => {
  test('app smtp, app smtp-test and tracker connect', async () => {
    ensureBinary()
    const dir = tempDir()
    const t = await cliTenant(dir)
    const smtp = ['app', 'smtp', t.appId, '--port', '25', '--tls', 'none', '--from', 'noreply@shop.example', '--data-dir', dir]
    const saved = await runBinary([...smtp, '--host', '127.0.0.1'])
    expect(saved.code).toBe(2)
    for (const out of [saved.stderr]) {
      expect(out).toContain('FIXLOOP_SMTP_ALLOW_PRIVATE=1 for this command')
      expect(out).not.toContain('on the server allows it')
    }
    expect((await runBinary([...smtp, '--host', '127.0.0.1'], { FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })).code).toBe(0)
    // The server allows it, the command does not: the command says so of itself.
    const test1 = await runBinary(['app', 'smtp-test', t.appId, '--to', 'ops@shop.example', '--data-dir', dir, '--json'])
    expect(test1.code).toBe(1)
    const answer = JSON.parse(test1.stdout)
    expect(answer.sent).toBe(false)
    expect(answer.error).toContain('FIXLOOP_SMTP_ALLOW_PRIVATE=1 for this command')
    expect(answer.error).not.toContain('on the server allows it')
    const tracker = await runBinary(['tracker', 'connect', '--app', t.appId, '--kind', 'gitlab', '--api-url', 'http://127.0.0.1:9/api/v4', '--project', 'acme/app', '--data-dir', dir], { FIXLOOP_TRACKER_TOKEN: 'glpat-test' })
    expect(tracker.code).not.toBe(0)
    expect(tracker.stderr).toContain('FIXLOOP_TRACKER_ALLOW_PRIVATE=1 for this command')
    expect(tracker.stderr).not.toContain('on the server allows it')
    // No token anywhere on the first connect: the refusal says where one comes from.
    const noToken = await runBinary(['tracker', 'connect', '--app', t.appId, '--kind', 'github', '--project', 'acme/app', '--data-dir', dir])
    expect([noToken.code, noToken.stdout]).toEqual([2, ''])
    expect(noToken.stderr).toContain('--token-file PATH (- for standard input), or FIXLOOP_TRACKER_TOKEN')
  }, 60_000)
})
