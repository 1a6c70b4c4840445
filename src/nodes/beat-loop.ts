/**
 * A node's beat: runs `round` now, then again a period after each round ends (never two at once), until
 * stopped. The coordinator's roles and the partitions of Apps each beat on one (every third of a lease).
 */
export class BeatLoop {
  private timer: ReturnType<typeof setTimeout> | undefined
  private running = false
  private current: Promise<void> | undefined

  constructor(
    private readonly round: () => Promise<void>,
    private readonly periodMs: number,
  ) {}

  /** The first round, awaited (what it takes is held before the caller goes on); the next ones follow. */
  async start(): Promise<void> {
    this.running = true
    await this.round()
    this.schedule()
  }

  /** No more rounds; resolves once the round under way (if any) has ended. */
  async stop(): Promise<void> {
    this.running = false
    clearTimeout(this.timer)
    await this.current
  }

  private schedule(): void {
    if (!this.running) return
    this.timer = setTimeout(() => {
      this.current = this.round().finally(() => {
        this.current = undefined
        this.schedule()
      })
    }, this.periodMs)
  }
}

/** A lease's renewal period: a third of it, at least 200 ms. */
export const beatPeriod = (leaseMs: number): number => Math.max(200, Math.floor(leaseMs / 3))
