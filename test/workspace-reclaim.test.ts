/**
 * A workspace an agent left unremovable does not outlive the run's cleanup, and never stops the server
 * from starting. An agent runs as fixloop's user (a non-root fixloop: the Docker image's uid, systemd's
 * DynamicUser) and may `chmod 000` folders of its clone or HOME; `rm -r` cannot enter them, and the reclaim
 * at start threw EACCES: `serve` exited 1, and `Restart=on-failure` looped on it (an audit found it). Run
 * as a non-root user (uid 65534 through util-linux's `setpriv`), so the test needs root to set it up.
 */
import { expect, test } from 'bun:test'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BINARY, freePort } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { instanceDir } from '../src/agent/workspace'

const NOBODY = 65534
const SKIP = process.getuid?.() !== 0 ? 'needs root to run the server as another user' : !Bun.which('setpriv') ? 'needs setpriv (util-linux)' : null
if (SKIP) console.log(`workspace-reclaim: skipped (${SKIP})`)

/** Every folder and file under `dir` handed to uid 65534, then the trap's modes set. */
function chownTree(dir: string): void {
  chownSync(dir, NOBODY, NOBODY)
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) chownTree(join(dir, e.name))
    else chownSync(join(dir, e.name), NOBODY, NOBODY)
  }
}

test.skipIf(!!SKIP)('serve as a non-root user removes a workspace whose folders an agent chmod-ed 000 (one past PATH_MAX deep), and starts', async () => {
  ensureBinary()
  // Everything the non-root server reads lives in a folder it can enter (a test's own clone may be 0700).
  const root = mkdtempSync(join(tmpdir(), 'fixloop-reclaim-'))
  try {
    chmodSync(root, 0o755)
    const binary = join(root, 'fixloop')
    copyFileSync(BINARY, binary)
    chmodSync(binary, 0o755)
    const dataDir = join(root, 'data')
    const workDir = join(root, 'work')
    mkdirSync(dataDir, { mode: 0o700 })
    // The workspace of a run interrupted after its agent left traps in the clone and in its HOME.
    const run = join(instanceDir(workDir, dataDir), '0123456789abcdef01234567')
    for (const trap of [join(run, 'repo', 'trap', 'inner'), join(run, 'home', 'trap', 'inner')]) {
      mkdirSync(trap, { recursive: true })
      writeFileSync(join(trap, 'f'), 'x')
    }
    writeFileSync(join(run, 'repo', 'app.js'), 'the App code')
    chownTree(dataDir)
    chownTree(workDir)
    for (const side of ['repo', 'home']) {
      chmodSync(join(run, side, 'trap', 'inner'), 0)
      chmodSync(join(run, side, 'trap'), 0)
    }
    // And a locked folder at the end of a chain deeper than PATH_MAX (a walk by path cannot reach it).
    // (python3: a shell's cd keeps the whole path and fails past PATH_MAX; chdir by name does not.)
    const script = 'import os,sys\nos.chdir(sys.argv[1])\nfor _ in range(1600):\n  os.mkdir("d1234567890"); os.chdir("d1234567890")\nos.mkdir("lock"); open("lock/f","w").write("x"); os.chmod("lock", 0)'
    const deep = Bun.spawnSync(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', 'python3', '-c', script, join(run, 'home')], { cwd: root, env: { PATH: '/usr/bin:/bin' } })
    expect({ code: deep.exitCode, err: deep.stderr.toString() }).toEqual({ code: 0, err: "" })
    const port = await freePort()
    const proc = Bun.spawn(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', binary, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
      env: { PATH: '/usr/bin:/bin', HOME: root, FIXLOOP_WORK_DIR: workDir, FIXLOOP_LOG_LEVEL: 'warn' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const deadline = Date.now() + 20_000
      let healthy = false
      while (!healthy && Date.now() < deadline && proc.exitCode === null) {
        healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)
        if (!healthy) await Bun.sleep(100)
      }
      if (!healthy) throw new Error(`serve did not start (exit ${proc.exitCode}): ${await new Response(proc.stderr).text()}`)
      expect(existsSync(run)).toBe(false)
    } finally {
      proc.kill()
      await proc.exited
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}, 60_000)
