/**
 * A real SMTP server for the mail tests (the `smtp-server` package on 127.0.0.1): it takes every message,
 * keeps the envelope and the raw bytes, and can be started on a chosen port later (an SMTP server that
 * was down at the first attempt).
 */
import { SMTPServer } from 'smtp-server'

export interface CaughtMail {
  from: string
  to: string[]
  raw: string
  /** Header lines unfolded, by lower-case name. */
  headers: Map<string, string>
  body: string
  user: string | undefined
}

export interface SmtpSink {
  port: number
  mails: CaughtMail[]
  stop(): Promise<void>
}

function parse(raw: string): { headers: Map<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ')
  const headers = new Map<string, string>()
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':')
    if (i > 0) headers.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim())
  }
  return { headers, body: raw.slice(split + 4) }
}

/** Decodes a quoted-printable body (nodemailer's choice for long lines). */
export function qpDecode(s: string): string {
  const bytes = Buffer.from(s.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1')
  return bytes.toString('utf8')
}

export async function startSmtpSink(port = 0, opts: { user?: string; pass?: string } = {}): Promise<SmtpSink> {
  const mails: CaughtMail[] = []
  const server = new SMTPServer({
    secure: false,
    disabledCommands: opts.user ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !opts.user,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === opts.user && auth.password === opts.pass) return cb(null, { user: auth.username })
      cb(new Error('Invalid username or password'))
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        const { headers, body } = parse(raw)
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          headers,
          body,
          user: session.user as string | undefined,
        })
        cb()
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  const address = server.server.address() as { port: number }
  return { port: address.port, mails, stop: () => new Promise<void>((r) => server.close(() => r())) }
}
