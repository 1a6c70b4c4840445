/**
 * `fixloop … | head`: when the reader of stdout (or stderr) goes away, writing fails with EPIPE. That is
 * not fixloop's fault and deserves no stack trace: a command exits quietly (status 0, like a pipeline that
 * got what it wanted). `serve` keeps serving: its log lines are dropped, its data is never at stake.
 */
const CLOSED = new Set(['EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END'])

export function exitQuietlyOnClosedOutput(keepRunning: boolean): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (!CLOSED.has(e.code ?? '')) throw e
      if (!keepRunning) process.exit(0)
    })
  }
}
