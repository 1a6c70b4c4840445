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
  /** Per live peer: how many consecutive beats this node has seen it alive, and since when. */
  private readonly beatsAlive = new Map<string, { beats: number; since: number }>()
  private unheard: string[] = []

  constructor(
    /** How long a peer may stay unheard (a few beat intervals: announcements are at-most-once). */
    private readonly silenceMs: number,
    private readonly heardAt: (nodeId: string) => number | undefined,
  ) {}

  /**
   * After a beat: the peers (other nodes) the database says are alive now, each with its own lease when it
   * recorded one: a peer announces at its own beats (a third of its lease), so one with a longer lease than
   * this node's may stay silent that long (it was named unheard between its beats).
   */
  observe(peers: readonly (string | { id: string; leaseMs: number | null })[], now: number): void {
    const silence = new Map(peers.map((p) => (typeof p === 'string' ? [p, this.silenceMs] : [p.id, Math.max(this.silenceMs, p.leaseMs ?? 0)])))
    for (const id of [...this.beatsAlive.keys()]) if (!silence.has(id)) this.beatsAlive.delete(id)
    for (const id of silence.keys()) {
      const seen = this.beatsAlive.get(id)
      this.beatsAlive.set(id, { beats: (seen?.beats ?? 0) + 1, since: seen?.since ?? now })
    }
    this.unheard = [...silence].filter(([id, silenceMs]) => {
      const seen = this.beatsAlive.get(id)!
      if (seen.beats < GRACE_BEATS) return false
      // Never heard: silent since this node first saw it alive (a peer with a long lease announces late).
      return now - (this.heardAt(id) ?? seen.since) > silenceMs
    }).map(([id]) => id).sort()
  }

  /** Live peers never (or not lately) heard on this node's Redis. */
  unheardPeers(): string[] {
    return this.unheard
  }
}
