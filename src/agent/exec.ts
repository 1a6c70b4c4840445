/**
 * Runs a command in its own process group with a minimal environment, a timeout that kills the whole
 * group (the agent's children too), and bounded output capture (only the tail is kept). For the agent
 * the command is bwrap (src/agent/sandbox.ts): killing its group ends the sandbox's PID namespace, so
 * even a `setsid` child goes.
 */
import { spawn } from 'node:child_process'

export interface ExecResult {
  code: number | null
  timedOut: boolean
  /** The last `maxOutputBytes` of stdout and stderr, interleaved as they arrived. */
  output: string
  /** The last `maxOutputBytes` of stdout alone (agents print their JSON result there). */
  stdout: string
  /** True when stdout was longer than `maxOutputBytes` (its head was dropped). */
  stdoutTruncated: boolean
  ms: number
}

export interface ExecOptions {
  cwd: string
  env: Record<string, string>
  timeoutMs: number
  maxOutputBytes?: number
  stdin?: string
  /** Aborting kills the process group at once (shutdown). */
  signal?: AbortSignal
  /** Called with the child's PID as soon as it runs (the runner records it for recovery after a crash). */
  onSpawn?: (pid: number) => void
}

/** Keeps the last `limit` bytes written to it. */
class Tail {
  private chunks: Buffer[] = []
  private size = 0
  /** Every byte pushed, kept or not. */
  total = 0
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.size += chunk.length
    this.total += chunk.length
    while (this.size - this.chunks[0].length >= this.limit) this.size -= this.chunks.shift()!.length
  }
  toString(): string {
    const all = Buffer.concat(this.chunks)
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8')
  }
}

export function execCommand(argv: string[], opts: ExecOptions): Promise<ExecResult> {
  const started = performance.now()
  const limit = opts.maxOutputBytes ?? 64 * 1024
  const both = new Tail(limit)
  const out = new Tail(limit)
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    let timedOut = false
    let settled = false
    if (child.pid) opts.onSpawn?.(child.pid)
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, opts.timeoutMs)
    const onAbort = () => killGroup()
    opts.signal?.addEventListener('abort', onAbort)
    child.stdout.on('data', (c: Buffer) => {
      both.push(c)
      out.push(c)
    })
    child.stderr.on('data', (c: Buffer) => both.push(c))
    child.stdin.on('error', () => {})
    child.stdin.end(opts.stdin ?? '')
    const finish = (code: number | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      opts.signal?.removeEventListener('abort', onAbort)
      // Whatever the command left running in its group goes too.
      killGroup()
      resolve({ code, timedOut, output: both.toString(), stdout: out.toString(), stdoutTruncated: out.total > limit, ms: Math.round(performance.now() - started) })
    }
    child.on('error', (e) => {
      both.push(Buffer.from(String(e.message)))
      finish(127)
    })
    child.on('close', (code) => finish(code))
  })
}
