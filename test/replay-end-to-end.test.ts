/**
 * Session replay end to end (issue 39), in Chromium against the compiled binary with nothing stubbed: an App
 * created with `--replay inputs`, its widget asks GET /v1/widget/config, records, uploads the replay with a
 * report; the server scrubs it and serves it through the report's attachment URL. What comes back holds
 * the page's text but no input value, and the card number printed on the page is scrubbed by the server
 * (the widget records page text as it is in `inputs` mode); with `--replay masked` none of the page's text
 * comes back at all. test/widget-replay.test.ts covers the recorder's
 * modes in detail behind a proxy; test/replay.test.ts the server's scrub with hand-made recordings.
 */
import { expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { call, eventually, runBinary } from './harness'
import { freshContext, widget, widgetEnv } from './widget-fixture'

const env = widgetEnv(['--replay', 'inputs', '--replay-seconds', '30'])

const BODY = `
<main>
  <h1>Zephyrine quarterly ledger</h1>
  <p>Tangerine invoice, card 4242 4242 4242 4242 on file, mail okonkwo.bartholomew@example.org.</p>
  <form>
    <label>Email <input id="email" type="email"></label>
    <label>Password <input id="pw" type="password"></label>
    <label>Card <input id="card" autocomplete="cc-number"></label>
  </form>
</main>`

/** Records the page, sends a report, waits for the server's scrub: the stored replay's JSON text, downloaded through the API. */
async function recordAndFetch(publicKey: string, path: string, reportText: string): Promise<string> {
  const e = env()
  const url = e.page(path, { body: BODY, mount: `<script src="${e.api}/widget.js" data-public-key="${publicKey}"></script>` })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await page.waitForFunction(() => !!(window as any)[Symbol.for('fixloop.recorder')], undefined, { timeout: 15_000 })
    await page.locator('#email').pressSequentially('wisteria.secret@example.org')
    await page.locator('#pw').pressSequentially('Hunter2Cobalt')
    await page.locator('#card').pressSequentially('5555 4444 3333 1111')
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill(reportText)
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: /Thanks/ }).waitFor({ timeout: 20_000 })
  } finally {
    await context.close()
  }
  const listed = async () => (await call(e.api, 'GET', `/v1/feedback?includeDuplicates=true&limit=100`, { auth: e.tenant.key })).body.data as any[]
  const id = (await eventually(async () => (await listed()).find((r: any) => r.text === reportText), 20_000)).id
  // Scrubbed by the server (a replay_scrub job), then listed with a URL.
  const replay = await eventually(async () => {
    const r = await call(e.api, 'GET', `/v1/feedback/${id}`, { auth: e.tenant.key })
    const a = (r.body.attachments ?? []).find((x: any) => x.kind === 'replay')
    return a?.replayState === 'ready' && a.url ? a : undefined
  }, 30_000)
  expect(replay.contentType).toBe('application/gzip')
  const res = await fetch(replay.url)
  expect(res.status).toBe(200)
  const text = gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8')
  const json = JSON.parse(text) as { v: number; events: { type: number }[] }
  expect(json.v).toBe(1)
  expect(json.events.some((ev) => ev.type === 2)).toBe(true)
  return text
}

const INPUT_VALUES = ['wisteria', 'Hunter2', 'Cobalt', '5555 4444 3333 1111', '4444 3333']

test('inputs: the App setting reaches the widget; the stored replay has the page text, no input value, the page card number and email scrubbed', async () => {
  const text = await recordAndFetch(env().tenant.pub, '/replay-e2e-inputs', 'End to end replay report')
  // The page's text is there (inputs mode records it) ...
  for (const shown of ['Zephyrine', 'Tangerine']) expect(text).toContain(shown)
  // ... but not what the server's rules scrub from it, nor any input value (the widget never records them).
  for (const secret of ['4242 4242 4242 4242', 'okonkwo.bartholomew@example.org', ...INPUT_VALUES]) expect(text).not.toContain(secret)
}, 90_000)

test('masked: an App made with --replay masked stores none of the page text and no input value', async () => {
  const e = env()
  const made = await runBinary(['app', 'create', '--org', e.tenant.orgId, '--name', 'Masked shop', '--replay', 'masked', '--json', '--data-dir', e.dataDir])
  expect(made.code).toBe(0)
  const text = await recordAndFetch(JSON.parse(made.stdout).publicKey, '/replay-e2e-masked', 'End to end masked replay report')
  for (const secret of ['Zephyrine', 'Tangerine', 'quarterly', 'invoice', '4242', 'okonkwo', ...INPUT_VALUES]) expect(text).not.toContain(secret)
}, 90_000)
