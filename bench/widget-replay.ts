/**
 * What session replay costs the customer's page (docs/widget.md "Session replay"): a busy page (DOM
 * changes every 50 ms, mouse moves, scrolling) runs in Debian's Chromium for DURATION_S seconds without the
 * recorder, then with it in each mode. Prints the recorder's events per second, the page's main-thread
 * time per second (Chromium's Performance.getMetrics TaskDuration, the difference is the recorder's cost)
 * and the gzipped replay size per minute. Figures only, nothing asserted.
 * Run: `bun run build:widget && bun bench/widget-replay.ts` (DURATION_S=20 by default).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { launchBrowser } from '../test/browser'

const DURATION_S = Number(process.env.DURATION_S ?? 20)
const recorder = readFileSync(join(import.meta.dir, '../widget/dist/replay.js'), 'utf8')

const page = (mode: string) => `<!doctype html><html><head><meta charset="utf-8"><title>busy</title></head><body>
<h1>Orders dashboard</h1><input id="q" placeholder="Search"><div id="feed"></div>
<script>${recorder}</script>
<script>
  const mode = ${JSON.stringify(mode)}
  if (mode !== 'off') window.__rec = window[Symbol.for('fixloop.replay')]({ mode, seconds: 300 }, document.createElement('div'))
  let n = 0
  setInterval(() => {
    const feed = document.getElementById('feed')
    for (let i = 0; i < 10; i++) {
      const row = document.createElement('div')
      row.className = 'row'
      row.innerHTML = '<b>#' + (n++) + '</b> <span>Order for customer ' + Math.random().toString(36).slice(2) + '</span> <em>' + new Date().toISOString() + '</em>'
      feed.prepend(row)
    }
    while (feed.children.length > 200) feed.lastChild.remove()
    feed.children[5].style.color = n % 2 ? 'red' : 'blue'
  }, 50)
</script></body></html>`

const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => new Response(page(new URL(req.url).searchParams.get('mode') ?? 'off'), { headers: { 'content-type': 'text/html' } }) })
const browser = await launchBrowser()
console.log(`uptime: ${(await Bun.$`uptime`.text()).trim()}`)
console.log(`busy page: 10 rows added and 10 removed every 50 ms, mouse moves and scrolls; ${DURATION_S} s per mode`)
let baseline = 0
try {
  for (const mode of ['off', 'inputs', 'masked']) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const tab = await context.newPage()
    const cdp = await context.newCDPSession(tab)
    await cdp.send('Performance.enable')
    await tab.goto(`http://127.0.0.1:${server.port}/?mode=${mode}`)
    await tab.waitForTimeout(1000)
    const task = async () => ((await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0) as number
    const before = await task()
    const started = Date.now()
    for (let i = 0; Date.now() - started < DURATION_S * 1000; i++) {
      await tab.mouse.move(100 + (i * 37) % 900, 100 + (i * 23) % 600)
      if (i % 10 === 0) await tab.mouse.wheel(0, i % 20 ? 200 : -200)
      await tab.waitForTimeout(50)
    }
    const seconds = (Date.now() - started) / 1000
    const busyMs = ((await task()) - before) * 1000 / seconds
    if (mode === 'off') {
      baseline = busyMs
      console.log(`off:     main thread ${busyMs.toFixed(1)} ms/s (the page alone)`)
    } else {
      const r = await tab.evaluate(async () => {
        const rec = (window as any).__rec
        const s = rec.stats()
        const blob: Blob = await rec.export({ consoleLogs: [], network: [] })
        return { events: s.events, bytes: s.bytes, gzip: blob.size, span: (Date.now() - s.oldest) / 1000 }
      })
      console.log(
        `${(mode + ':').padEnd(8)} main thread ${busyMs.toFixed(1)} ms/s (recorder ≈ ${(busyMs - baseline).toFixed(1)} ms/s); ${(r.events / r.span).toFixed(0)} events/s; ` +
          `in memory ${(r.bytes / 1024 / r.span * 60).toFixed(0)} KB/min of JSON; replay ${(r.gzip / 1024 / r.span * 60).toFixed(0)} KB/min gzipped`,
      )
    }
    await context.close()
  }
} finally {
  await browser.close()
  server.stop(true)
}
