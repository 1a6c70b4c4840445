/**
 * Shared set-up for the @fixloop/client suites: the compiled binary on a temp data dir, an Org, a key
 * and an App made through the CLI (as an operator would), and a TCP fault-injecting proxy.
 */
import { createServer, connect, type Socket } from 'node:net'
import { runBinary, spawnServer, tempDir } from '../harness'

export interface Seeded {
  url: string
  orgId: string
  key: string
  appId: string
  pub: string
  secret: string
  stop: () => Promise<void>
}

async function cli(dataDir: string, args: string[]): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dataDir, '--json'])
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')} failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** The compiled server plus one tenant. `env` goes to `fixloop serve`. */
export async function seededServer(env: Record<string, string> = {}): Promise<Seeded> {
  const dataDir = tempDir('fixloop-client-')
  const org = await cli(dataDir, ['org', 'create', '--name', 'Client Co'])
  const key = await cli(dataDir, ['key', 'create', '--org', org.id, '--name', 'client-tests'])
  const app = await cli(dataDir, ['app', 'create', '--org', org.id, '--name', 'Client App'])
  const server = await spawnServer(dataDir, env)
  return { url: server.url, orgId: org.id, key: key.key, appId: app.id, pub: app.publicKey, secret: app.signingSecret, stop: server.stop }
}

export type Fault = 'none' | 'drop' | '502'

/**
 * A TCP proxy in front of the server. `faultNext(kind, match)` arms one fault for the next request whose
 * head contains `match`: the request is forwarded and answered upstream, then the client gets either
 * nothing (the connection is dropped) or a 502 — the two ways a retry can double a write.
 */
export async function faultProxy(upstreamUrl: string) {
  const upstream = new URL(upstreamUrl)
  const heads: string[] = []
  let armed: { kind: Fault; match: string } | null = null
  const open = new Set<Socket>()
  const server = createServer((client: Socket) => {
    open.add(client)
    client.on('close', () => open.delete(client))
    const up = connect(Number(upstream.port), upstream.hostname)
    let fault: Fault = 'none'
    client.on('data', (chunk) => {
      const text = chunk.toString('latin1')
      if (/^[A-Z]+ \//.test(text)) {
        heads.push(text.split('\r\n\r\n')[0])
        if (armed && text.includes(armed.match)) {
          fault = armed.kind
          armed = null
        }
      }
      up.write(chunk)
    })
    up.on('data', (chunk) => {
      if (fault === 'drop') {
        client.destroy()
        up.destroy()
      } else if (fault === '502') {
        client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\ncontent-length: 3\r\nconnection: close\r\n\r\nbad')
        up.destroy()
      } else client.write(chunk)
    })
    up.on('end', () => client.end())
    up.on('error', () => client.destroy())
    client.on('error', () => up.destroy())
    client.on('close', () => up.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    /** Request heads seen, in order (request line + headers). */
    heads,
    faultNext(kind: Fault, match: string) {
      armed = { kind, match }
    },
    /** Closes the proxy and any keep-alive connection the client still holds. */
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of open) socket.destroy()
      }),
  }
}

/** The value of a header in a raw request head. */
export function headerOf(head: string, name: string): string | undefined {
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line?.slice(line.indexOf(':') + 1).trim()
}
