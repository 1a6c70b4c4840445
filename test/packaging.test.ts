/**
 * Packaging: the systemd unit passes `systemd-analyze verify` and keeps its hardening; the Docker build
 * context leaves out data, keys and builds; base images are pinned to the Bun the project is built with.
 */
import { expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, ROOT, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'

const unit = readFileSync(join(ROOT, 'packaging', 'fixloop.service'), 'utf8')
const hasSystemdAnalyze = Bun.spawnSync(['sh', '-c', 'command -v systemd-analyze']).exitCode === 0
if (!hasSystemdAnalyze) console.warn('systemd unit check skipped: systemd-analyze is not installed (.ci/run installs systemd)')

for (const path of ['fixloop.service', 'cluster/fixloop-node.service']) {
  test.skipIf(!hasSystemdAnalyze)(`systemd-analyze verify accepts packaging/${path}`, () => {
    ensureBinary()
    // The unit names the installed path; verify checks that it exists, so point it at the fresh build.
    const dir = tempDir()
    const file = join(dir, 'fixloop.service')
    writeFileSync(file, readFileSync(join(ROOT, 'packaging', path), 'utf8').replaceAll('/usr/local/bin/fixloop', BINARY))
    const r = Bun.spawnSync(['systemd-analyze', 'verify', file])
    const out = r.stdout.toString() + r.stderr.toString()
    expect(out.split('\n').filter((l) => l.includes('fixloop.service'))).toEqual([])
    expect(r.exitCode).toBe(0)
  })
}

test('the cluster node unit reads the shared settings and hands its work over on stop', () => {
  const node = readFileSync(join(ROOT, 'packaging', 'cluster', 'fixloop-node.service'), 'utf8').split('\n')
  for (const line of ['EnvironmentFile=/etc/fixloop/cluster.env', 'DynamicUser=yes', 'ProtectSystem=strict', 'RestartPreventExitStatus=2', 'KillSignal=SIGTERM']) expect(node).toContain(line)
})

test('the unit is hardened and owns its data dir', () => {
  for (const line of ['DynamicUser=yes', 'StateDirectory=fixloop', 'ProtectSystem=strict', 'NoNewPrivileges=yes', 'ReadWritePaths=/var/lib/fixloop', 'RestartPreventExitStatus=2']) {
    expect(unit.split('\n')).toContain(line)
  }
  expect(unit).toContain('--data-dir ${STATE_DIRECTORY}')
})

test('.dockerignore keeps dependencies, builds, data and keys out of the build context', () => {
  const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n')
  for (const entry of ['node_modules', 'dist', 'data', '**/master.key', '**/*.db']) expect(ignore).toContain(entry)
})

test('the Dockerfile pins the Bun the lockfile was made with and a Debian point release', () => {
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
  const bunTypes = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'bun-types', 'package.json'), 'utf8')).version as string
  expect(docker).toContain(`FROM oven/bun:${bunTypes}-debian AS build`)
  expect(docker).toMatch(/^FROM debian:\d+\.\d+-slim$/m)
  expect(docker).toContain('Agent CLIs are NOT included')
  expect(docker).toContain('uid 10001')
})
