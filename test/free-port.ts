/**
 * A loopback port for a server a test starts by number (the compiled binary, PostgreSQL, redis-server).
 *
 * Why not the kernel's port 0: it hands out ports from the ephemeral range (32768-60999 on Linux), the same
 * range every outgoing connection's local port comes from. Three test files run at once, each opening
 * thousands of client connections, so a port probed and closed here could be some connection's local port
 * (or another file's probe) by the time the server binds it, and the server exits "already in use".
 * Ports below the ephemeral range are never handed out implicitly; picking one at random among 12,000 and
 * checking it binds leaves only two tests drawing the same number within a moment.
 */
const FIRST = 20_000
const COUNT = 12_000

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FIRST + Math.floor(Math.random() * COUNT)
    try {
      const probe = Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } })
      probe.stop(true)
      return port
    } catch {
      // taken: draw again
    }
  }
  throw new Error(`no free loopback port in ${FIRST}-${FIRST + COUNT - 1} after 200 draws`)
}
