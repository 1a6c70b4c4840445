/**
 * Do all the nodes the database knows share this node's Redis? A node started with another
 * FIXLOOP_REDIS_URL than the others still joins the cluster through the database, but its rate limits,
 * sign-in back-off and wake-ups are split from the rest, silently. So every node announces itself on the
 * wake bus at each heartbeat, and each node compares the nodes alive in the database with the nodes it
 * has heard from: a peer alive for several beats and never heard is named in /readyz (`node.unheardPeers`,
 * a warning: it does not make the node unready — which side is wrong cannot be told from here, and taking
 * both out of the balancer would be an outage) and in a warning line.
 *
 * Pure bookkeeping: the coordinator reports the live peers after each beat, the wake bus when each was
 * last heard; `now` is the caller's monotonic clock (performance.now()).
 */

/** Beats a peer must have been alive (seen by this node) before its silence counts. */
const GRACE_BEATS = 3

export class PeerCheck {
  /** Per live peer: how many consecutive beats this node has seen it alive. */
  private readonly beatsAlive = new Map<string, number>()
  private unheard: string[] = []

  constructor(
    /** How long a peer may stay unheard (a few beat intervals: announcements are at-most-once). */
    private readonly silenceMs: number,
    private readonly heardAt: (nodeId: string) => number | undefined,
  ) {}

  /** After a beat: the peers (other nodes) the database says are alive now. */
  observe(peers: readonly string[], now: number): void {
    const alive = new Set(peers)
    for (const id of [...this.beatsAlive.keys()]) if (!alive.has(id)) this.beatsAlive.delete(id)
    for (const id of alive) this.beatsAlive.set(id, (this.beatsAlive.get(id) ?? 0) + 1)
    this.unheard = [...alive].filter((id) => {
      if ((this.beatsAlive.get(id) ?? 0) < GRACE_BEATS) return false
      const heard = this.heardAt(id)
      return heard === undefined || now - heard > this.silenceMs
    }).sort()
  }

  /** Live peers never (or not lately) heard on this node's Redis. */
  unheardPeers(): string[] {
    return this.unheard
  }
}
