/** Helpers for the operations tests: run `fixloop serve` expecting a refusal, upload a screenshot. */
import { BINARY, call, freePort, type Reply } from './harness'

/** Starts `fixloop serve` and waits for it to exit on its own (a refusal); kills it after `ms`. */
export async function serveExpectingExit(dataDir: string, args: string[] = [], env: Record<string, string> = {}, ms = 10_000) {
  const port = args.includes('--port') ? [] : ['--port', String(await freePort())]
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', ...port, '--data-dir', dataDir, ...args], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

export const PNG = new Uint8Array(4096).map((_, i) => (i * 37 + 11) % 256)

/** upload-url → PUT → submit with the screenshot; returns the report id and the upload key. */
export async function submitWithScreenshot(base: string, pub: string, bytes = PNG): Promise<{ feedbackId: string; key: string }> {
  const up: Reply = await call(base, 'POST', '/v1/feedback/upload-url', { auth: pub, body: { contentType: 'image/png', byteSize: bytes.length, kind: 'screenshot', filename: 's.png' } })
  if (up.status !== 200) throw new Error(`upload-url: ${up.status} ${up.text}`)
  const put = await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: bytes })
  if (put.status !== 200) throw new Error(`PUT: ${put.status}`)
  const sub = await call(base, 'POST', '/v1/feedback', {
    auth: pub,
    body: { text: 'Chart cut off', attachments: [{ key: up.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: bytes.length }] },
  })
  if (sub.status !== 201) throw new Error(`submit: ${sub.status} ${sub.text}`)
  return { feedbackId: sub.body.id, key: up.body.key }
}
