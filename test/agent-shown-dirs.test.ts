/**
 * A data dir or work dir inside a folder every agent sandbox shows (attack-agent session): /usr, /bin,
 * /lib*, the /etc entries. `./fixloop serve` run from /usr/local/fixloop has its data dir (./data: the
 * master key, the database) there; the start refuses it, as it refuses a listed sandbox path over it.
 */
import { describe, expect, test } from 'bun:test'
import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { tempDir } from './harness'
import { loadConfig } from '../src/config'
import { sandboxArgv } from '../src/agent/sandbox'

describe('the folders every sandbox shows hold no data dir or work dir', () => {
  const name = `fixloop-attack-${randomBytes(4).toString('hex')}`

  test('the sandbox binds /usr whole: a data dir under /usr/local would be shown to every agent', () => {
    const argv = sandboxArgv({ mode: 'bwrap', network: true, readOnlyPaths: [] }, { repo: '/w/repo', home: '/w/home', taskFile: '/w/task.md', outDir: '/w/out', resultFile: '/w/out/r.json', attachmentsDir: '/w/att', passwdFile: '/w/passwd', groupFile: '/w/group' }, 'true')
    expect(argv.join(' ')).toContain('--ro-bind /usr /usr')
  })

  test('a data dir under /usr (also through a symlink) is refused at start', () => {
    const work = join(tempDir('fixloop-cfg-work-'), 'work')
    expect(() => loadConfig({ dataDir: `/usr/local/${name}/data` }, { FIXLOOP_WORK_DIR: work })).toThrow(/data dir .* is inside \/usr, which every agent sandbox shows/)
    const links = tempDir('fixloop-cfg-links-')
    symlinkSync('/usr/local', join(links, 'local'))
    expect(() => loadConfig({ dataDir: join(links, 'local', name, 'data') }, { FIXLOOP_WORK_DIR: work })).toThrow(/is inside \/usr/)
  })

  test('a work dir under /usr or /etc/ssl is refused; elsewhere, and with the sandbox off, the start goes on', () => {
    const dataDir = tempDir('fixloop-cfg-')
    expect(() => loadConfig({ dataDir }, { FIXLOOP_WORK_DIR: `/usr/local/${name}/work` })).toThrow(/FIXLOOP_WORK_DIR .* is inside \/usr/)
    expect(() => loadConfig({ dataDir }, { FIXLOOP_WORK_DIR: `/etc/ssl/${name}` })).toThrow(/is inside \/etc\/ssl/)
    expect(loadConfig({ dataDir }, { FIXLOOP_WORK_DIR: join(tempDir('fixloop-cfg-work-'), 'work') }).dataDir).toBe(dataDir)
    expect(loadConfig({ dataDir: `/usr/local/${name}/data` }, { FIXLOOP_AGENT_SANDBOX: 'off', FIXLOOP_WORK_DIR: join(tempDir('fixloop-cfg-work-'), 'work') }).agentSandbox).toBe('off')
  })
})
