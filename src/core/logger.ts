/**
 * Structured JSON logs, one line per event, to stdout. Lines are buffered for one event-loop turn and
 * written together, so logging a request costs no synchronous write on the hot path.
 * Never pass secrets here: callers log ids, routes and codes, not bodies or headers.
 */
export type LogLevel = 'info' | 'warn' | 'error'
const RANK: Record<LogLevel | 'silent', number> = { info: 0, warn: 1, error: 2, silent: 3 }

export class Logger {
  private buffer: string[] = []
  private scheduled = false

  constructor(
    private readonly level: 'info' | 'warn' | 'silent' = 'info',
    private readonly sink: (text: string) => void = (t) => process.stdout.write(t),
  ) {}

  /** Whether lines of this level are written at all. */
  enabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.level]
  }

  log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    if (!this.enabled(level)) return
    this.buffer.push(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields }))
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.flush())
    }
  }

  info(msg: string, fields?: Record<string, unknown>): void {
    this.log('info', msg, fields)
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.log('warn', msg, fields)
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.log('error', msg, fields)
  }

  /** The level this logger writes from (another thread's logger is built with it). */
  get threshold(): 'info' | 'warn' | 'silent' {
    return this.level
  }

  /** Lines another thread's logger formatted (and filtered with this logger's threshold): written in order with ours. */
  forward(text: string): void {
    for (const line of text.split('\n')) if (line) this.buffer.push(line)
    if (!this.scheduled && this.buffer.length > 0) {
      this.scheduled = true
      setImmediate(() => this.flush())
    }
  }

  flush(): void {
    this.scheduled = false
    if (this.buffer.length === 0) return
    const text = this.buffer.join('\n') + '\n'
    this.buffer = []
    this.sink(text)
  }
}
