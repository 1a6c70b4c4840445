/**
 * Private mode: the App refuses public submissions; the widget asks the customer's getUserToken()
 * before submitting, refreshes a token about to expire, asks once more on 401 invalid_user_token, and
 * never sends `identity` alongside a token, nor asks for a proof of work.
 */
import { expect, test } from 'bun:test'
import { signUserToken } from '../packages/client/src/user-token'
import { eventually } from './harness'
import { freshContext, report, reports, queuedCount, widget, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv(['--public-submission', 'false'])

/** A customer page whose /token endpoint serves `tokens` in order (the last one repeatedly). */
function privatePage(e: WidgetEnv, path: string, tokens: (() => Promise<string>)[]) {
  let calls = 0
  e.routes.set(`${path}/token`, async () => new Response(await tokens[Math.min(calls++, tokens.length - 1)]()))
  const mount = `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    identity: { email: 'should-not-be-sent@example.com' },
    getUserToken: function () { return fetch('${path}/token').then(function (r) { return r.text() }) },
  })
</script>`
  return { url: e.page(path, { mount }), calls: () => calls }
}

const token = (e: WidgetEnv, opts: { now?: number; expiresInSeconds?: number } = {}) => () =>
  signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: 'user-42', ctx: { email: 'ada@acme.test', plan: 'pro' }, ...opts })

test('an expired token is refreshed once after 401 invalid_user_token; identity is never sent with a token', async () => {
  const e = env()
  const expired = token(e, { now: Date.now() - 2 * 3600_000, expiresInSeconds: 3600 })
  const { url, calls } = privatePage(e, '/private', [expired, token(e)])
  const { context, page } = await freshContext(e)
  try {
    const bodies: any[] = []
    const statuses: number[] = []
    page.on('request', (r) => r.url() === `${e.api}/v1/feedback` && r.method() === 'POST' && bodies.push(r.postDataJSON()))
    page.on('response', (r) => r.url().startsWith(`${e.api}/v1/feedback`) && r.request().method() === 'POST' && statuses.push(r.status()))
    // Private mode never asks for (or solves) a proof of work: the user token is the proof. (It may read
    // the App's config from the challenge route WITH its token, which never asks for work: notifyEmail.)
    const challenges: string[] = []
    page.on('request', (r) => ((r.url().includes('/v1/widget/challenge') && !('x-service-user-token' in r.headers())) || 'x-fixloop-proof-of-work' in r.headers()) && challenges.push(r.url()))
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Private report')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(calls()).toBe(2)
    // The upload-url request met the expired token first: one 401, then everything succeeded.
    expect(statuses.filter((s) => s === 401)).toHaveLength(1)
    expect(bodies.every((b) => !('identity' in b))).toBe(true)
    expect(challenges).toEqual([])
    const item = await report(e, (await reports(e)).find((r: any) => r.text === 'Private report').id)
    expect(item.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'user-42' })
    expect(item.userContext).toEqual({ email: 'ada@acme.test', plan: 'pro' })
    expect(item.attachments).toHaveLength(1)
  } finally {
    await context.close()
  }
})

test('a cached token is re-used while fresh and refreshed before its exp (no 401 at all)', async () => {
  const e = env()
  const closeToExpiry = token(e, { now: Date.now() - 45_000, expiresInSeconds: 60 })
  const { url, calls } = privatePage(e, '/private-soon', [closeToExpiry, token(e)])
  const { context, page } = await freshContext(e)
  try {
    const statuses: number[] = []
    page.on('response', (r) => r.url().startsWith(`${e.api}/v1/feedback`) && r.request().method() === 'POST' && statuses.push(r.status()))
    // Private mode never asks for (or solves) a proof of work: the user token is the proof. (It may read
    // the App's config from the challenge route WITH its token, which never asks for work: notifyEmail.)
    const challenges: string[] = []
    page.on('request', (r) => ((r.url().includes('/v1/widget/challenge') && !('x-service-user-token' in r.headers())) || 'x-fixloop-proof-of-work' in r.headers()) && challenges.push(r.url()))
    await page.goto(url)
    const w = widget(page)
    const submit = async (text: string) => {
      await w.launcher.click()
      await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
      await w.text.fill(text)
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      await page.keyboard.press('Escape')
      await w.dialog.waitFor({ state: 'hidden' })
    }
    await submit('First with a token that expires in 15 s')
    expect(calls()).toBe(1)
    // The cached token is within 30 s of its exp: a new one is fetched before the request.
    await submit('Second: the token was refreshed first')
    expect(calls()).toBe(2)
    // The new token is good for an hour: re-used.
    await submit('Third: the refreshed token is re-used')
    expect(calls()).toBe(2)
    expect(statuses).toEqual([201, 201, 201])
  } finally {
    await context.close()
  }
})

test('without a token provider a private App refuses the report and the widget says so (no "Thanks")', async () => {
  const e = env()
  const url = e.page('/no-token', { mount: `<script src="${e.api}/widget.js" data-public-key="${e.tenant.pub}"></script>` })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('No token here')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'could not be sent' }).waitFor()
    expect(await w.host.getByRole('status').first().textContent()).not.toContain('Thanks')
    expect((await reports(e)).some((r: any) => r.text === 'No token here')).toBe(false)
  } finally {
    await context.close()
  }
})

/**
 * A report queued in private mode belongs to the user whose page wrote it. Found by the web attack of
 * attack-web: the queue kept no owner, and the next page load sent every waiting report with whatever
 * token the page then had, so on a shared browser user A's report (text, screenshot, replay) was filed as
 * user B's, listed in B's "Your reports" and mailed to B when fixed.
 */
test('a report queued for user A is never sent under user B’s token; it goes once A is back', async () => {
  const e = env()
  let who = 'user-a'
  e.routes.set('/shared/token', async () =>
    new Response(await signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: who, ctx: { email: `${who}@acme.test` } })),
  )
  const url = e.page('/shared', {
    mount: `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    getUserToken: function () { return fetch('/shared/token').then(function (r) { return r.text() }) },
  })
</script>`,
  })
  const { context, page } = await freshContext(e)
  try {
    // fixloop cannot be reached while A sends (the customer's own backend, which mints the token, can).
    await page.route(`${e.api}/v1/feedback**`, (r) => r.abort())
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('A private report of user A')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    await page.unroute(`${e.api}/v1/feedback**`)
    // A signs out, B signs in on the same browser: the page loads with B's token.
    who = 'user-b'
    const posts: string[] = []
    page.on('request', (r) => r.url() === `${e.api}/v1/feedback` && r.method() === 'POST' && posts.push(r.headers()['x-service-user-token'] ?? ''))
    await page.reload()
    await widget(page).launcher.waitFor()
    await page.waitForTimeout(2500)
    expect(posts).toEqual([])
    expect((await reports(e)).filter((r: any) => r.text === 'A private report of user A')).toEqual([])
    // A comes back: the report is sent, as A's.
    who = 'user-a'
    await page.reload()
    await eventually(async () => (await reports(e)).some((r: any) => r.text === 'A private report of user A'), 10_000)
    const mine = (await reports(e)).filter((r: any) => r.text === 'A private report of user A')
    expect(mine).toHaveLength(1)
    expect(mine[0].submittedBy).toMatchObject({ mode: 'private', externalUserId: 'user-a' })
  } finally {
    await context.close()
  }
})

/**
 * A single-page app that signs user A out and user B in without a reload. Found by the web attack of
 * attack-web: the widget kept A's cached token until its exp, so B's "Your reports" listed A's reports
 * and B's report was filed as A's (mailed to A). "Your reports" now always asks the page for the current
 * user's token, and Fixloop.resetUser() (called on sign-out) forgets the cached one.
 */
test('a user switch without a reload: "Your reports" lists the new user’s reports; resetUser() forgets the old token', async () => {
  const e = env()
  let who = 'spa-a'
  e.routes.set('/spa/token', async () =>
    new Response(await signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: who, ctx: { email: `${who}@acme.test` } })),
  )
  const url = e.page('/spa', {
    mount: `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    getUserToken: function () { return fetch('/spa/token').then(function (r) { return r.text() }) },
  })
</script>`,
  })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    const sendReport = async (text: string) => {
      await w.launcher.click()
      await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
      await w.text.fill(text)
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      await page.keyboard.press('Escape')
      await w.dialog.waitFor({ state: 'hidden' })
    }
    await sendReport('Secret report of user A')
    // A signs out and B signs in, in the page (no reload): the page's token endpoint now answers B's.
    who = 'spa-b'
    await w.launcher.click()
    await w.host.getByRole('button', { name: 'Your reports' }).click()
    await w.host.getByRole('heading', { name: 'Your reports' }).waitFor()
    await page.waitForFunction(() => !document.querySelector('fixloop-widget')!.shadowRoot!.textContent!.includes('Loading'))
    await page.waitForTimeout(300)
    expect(await w.dialog.textContent()).not.toContain('Secret report of user A')
    await page.keyboard.press('Escape')
    await w.dialog.waitFor({ state: 'hidden' })
    // The page tells the widget on each sign-out: A again (whose token the widget then caches), then B,
    // whose report is B's although A's token would still be fresh.
    who = 'spa-a'
    await page.evaluate(() => (window as any).Fixloop.resetUser())
    await sendReport('Second report of user A')
    // What the widget recorded of A's page (console, requests) goes with no report of B's.
    await page.evaluate(() => console.error('A console line of user A'))
    who = 'spa-b'
    await page.evaluate(() => (window as any).Fixloop.resetUser())
    await sendReport('Report of user B')
    const ofB = await report(e, (await reports(e)).find((r: any) => r.text === 'Report of user B').id)
    expect(JSON.stringify(ofB.consoleLogs)).not.toContain('A console line of user A')
    const byText = async (t: string) => (await reports(e)).find((r: any) => r.text === t)
    expect((await byText('Report of user B')).submittedBy).toMatchObject({ externalUserId: 'spa-b' })
    expect((await byText('Second report of user A')).submittedBy).toMatchObject({ externalUserId: 'spa-a' })
  } finally {
    await context.close()
  }
})

test('a token that names no user is refused by the server as before: the widget says so, nothing waits in the queue', async () => {
  const e = env()
  e.routes.set('/junk/token', () => new Response('not-a-user-token'))
  const url = e.page('/junk', {
    mount: `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    getUserToken: function () { return fetch('/junk/token').then(function (r) { return r.text() }) },
  })
</script>`,
  })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Sent with a junk token')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'could not be sent' }).waitFor()
    const queued = await queuedCount(page)
    expect(queued).toBe(0)
  } finally {
    await context.close()
  }
})

test('a report written while no token could be had is not bound to the next user after resetUser()', async () => {
  const e = env()
  let who = 'off-a'
  e.routes.set('/offline-spa/token', async () =>
    new Response(await signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: who, ctx: { email: `${who}@acme.test` } })),
  )
  const url = e.page('/offline-spa', {
    mount: `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    getUserToken: function () { return fetch('/offline-spa/token').then(function (r) { return r.text() }) },
  })
</script>`,
  })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    // Offline: neither fixloop nor the customer's backend (which mints the token) answers.
    await page.route(`${e.api}/v1/feedback**`, (r) => r.abort())
    await page.route('**/offline-spa/token', (r) => r.abort())
    await w.text.fill('Written offline by user A')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    // A signs out, B signs in, in the page; the connection comes back.
    who = 'off-b'
    await page.evaluate(() => (window as any).Fixloop.resetUser())
    await page.unroute(`${e.api}/v1/feedback**`)
    await page.unroute('**/offline-spa/token')
    const posts: string[] = []
    page.on('request', (r) => r.url().startsWith(`${e.api}/v1/feedback`) && r.method() === 'POST' && posts.push(r.url()))
    await page.evaluate(() => window.dispatchEvent(new Event('online')))
    await page.waitForTimeout(2000)
    expect(posts).toEqual([])
    expect((await reports(e)).filter((r: any) => r.text === 'Written offline by user A')).toEqual([])
  } finally {
    await context.close()
  }
})

/** The Idempotency-Keys waiting in the page origin's offline queue. */
const queuedKeys = (page: import('playwright-core').Page) =>
  page.evaluate(
    () =>
      new Promise<string[]>((resolve) => {
        const req = indexedDB.open('fixloop', 1)
        req.onupgradeneeded = () => req.result.createObjectStore('queue', { keyPath: 'key' })
        req.onsuccess = () => {
          const all = req.result.transaction('queue').objectStore('queue').getAllKeys()
          all.onsuccess = () => resolve((all.result as string[]).sort())
        }
      }),
  )

/** Stores `entries` in the page origin's offline queue, as an older widget or an earlier visit left them. */
const putQueued = (page: import('playwright-core').Page, entries: unknown[]) =>
  page.evaluate(
    ({ entries }) =>
      new Promise<void>((resolve, reject) => {
        const req = indexedDB.open('fixloop', 1)
        req.onupgradeneeded = () => req.result.createObjectStore('queue', { keyPath: 'key' })
        req.onsuccess = () => {
          const tx = req.result.transaction('queue', 'readwrite')
          for (const entry of entries) tx.objectStore('queue').put(entry)
          tx.oncomplete = () => resolve()
          tx.onerror = () => reject(tx.error)
        }
      }),
    { entries },
  )

const DAY = 24 * 60 * 60 * 1000
/** The App's reports, polled gently (the API key's rate limit is the server's default here). */
const reportsSoon = async (e: WidgetEnv) => {
  await Bun.sleep(300)
  return reports(e)
}
const DROPPED_NOTICE = 'A report you wrote earlier could not be sent within 7 days and was removed from this device. Please send it again.'

/** A private-mode page whose signed-in user is `who()` at each token call. */
function switchingUserPage(e: WidgetEnv, path: string, who: () => string) {
  e.routes.set(`${path}/token`, async () => new Response(await signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: who(), ctx: { email: `${who()}@acme.test` } })))
  return e.page(path, {
    mount: `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    getUserToken: function () { return fetch('${path}/token').then(function (r) { return r.text() }) },
  })
</script>`,
  })
}

/**
 * A private-mode report waits for its owner; one that waited forever held one of the 30 queue slots for
 * good. One nobody owns (queued by an older widget, which recorded no owner) can never be sent: past 7
 * days it is dropped. One whose owner never came back waited forever too: past 7 days another user's page
 * drops it as well, and its owner, when they do come back, is told in the dialog, once. Younger ones wait.
 */
test('private-mode reports that waited 7 days for nobody or for an owner who never came back are dropped, never sent; the owner is told when back', async () => {
  const e = env()
  let who = 'user-now'
  const url = switchingUserPage(e, '/legacy', () => who)
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await widget(page).launcher.waitFor()
    await putQueued(
      page,
      [
        // As an older widget left them: no owner.
        { key: 'legacy-old', createdAt: Date.now() - 8 * DAY, text: 'Queued by an older widget 8 days ago' },
        { key: 'legacy-young', createdAt: Date.now() - 1 * DAY, text: 'Queued by an older widget yesterday' },
        // Another user's, written offline 8 days ago and 1 day ago.
        { key: 'owned-old', createdAt: Date.now() - 8 * DAY, text: 'Queued for the earlier user 8 days ago', owner: 'user-then' },
        { key: 'owned-young', createdAt: Date.now() - 1 * DAY, text: 'Queued for the earlier user yesterday', owner: 'user-then' },
      ].map(({ text, ...r }) => ({ ...r, endpoint: e.api, publicKey: e.tenant.pub, payload: { text }, blobs: [] })),
    )
    const posts: string[] = []
    page.on('request', (r) => r.url().startsWith(`${e.api}/v1/feedback`) && r.method() === 'POST' && posts.push(r.url()))
    await page.reload()
    await widget(page).launcher.waitFor()
    // Before: owned-old waited on for its owner, forever.
    await eventually(async () => (await queuedKeys(page)).join() === 'legacy-young,owned-young', 10_000)
    await page.waitForTimeout(1000)
    expect(await queuedKeys(page)).toEqual(['legacy-young', 'owned-young'])
    expect(posts).toEqual([])
    expect((await reports(e)).filter((r: any) => String(r.text).startsWith('Queued'))).toEqual([])
    // The page's own user is told nothing: the report was not theirs.
    let w = widget(page)
    await w.launcher.click()
    await page.waitForTimeout(1000)
    expect(await w.host.getByText(DROPPED_NOTICE, { exact: false }).count()).toBe(0)

    // user-then comes back: their young report is sent; opening the dialog tells them of the dropped one.
    who = 'user-then'
    await page.reload()
    await eventually(async () => (await reportsSoon(e)).some((r: any) => r.text === 'Queued for the earlier user yesterday'), 10_000)
    w = widget(page)
    await w.launcher.click()
    const notice = w.host.getByRole('status').filter({ hasText: DROPPED_NOTICE })
    await notice.waitFor()
    expect(await notice.textContent()).toContain(new Date(Date.now() - 8 * DAY).getFullYear().toString())
    expect((await reports(e)).filter((r: any) => r.text === 'Queued for the earlier user 8 days ago')).toEqual([])
    // Told once.
    await page.reload()
    w = widget(page)
    await w.launcher.click()
    await page.waitForTimeout(1000)
    expect(await w.host.getByText(DROPPED_NOTICE, { exact: false }).count()).toBe(0)
  } finally {
    await context.close()
  }
})

test("a report older than 7 days is sent when its owner's own page loads: the bound is for an owner who never comes back", async () => {
  const e = env()
  const url = switchingUserPage(e, '/returning', () => 'user-back')
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await widget(page).launcher.waitFor()
    await putQueued(page, [{ key: 'mine-old', createdAt: Date.now() - 9 * DAY, owner: 'user-back', endpoint: e.api, publicKey: e.tenant.pub, payload: { text: 'Written by the returning user 9 days ago' }, blobs: [] }])
    await page.reload()
    await eventually(async () => (await reportsSoon(e)).some((r: any) => r.text === 'Written by the returning user 9 days ago'), 10_000)
    const mine = (await reports(e)).filter((r: any) => r.text === 'Written by the returning user 9 days ago')
    expect(mine).toHaveLength(1)
    expect(mine[0].submittedBy).toMatchObject({ mode: 'private', externalUserId: 'user-back' })
    await eventually(async () => (await queuedKeys(page)).length === 0, 10_000)
  } finally {
    await context.close()
  }
})

/**
 * The dropped-notes list (localStorage, written capped at 30 notes) was read without a cap: a corrupt or
 * hostile value (anything on the page's origin can write it) was parsed and filtered whole at every load
 * and dialog opening, and every note of it was told. A list longer than a write leaves is read as its
 * latest 30; a value far longer than 30 notes can be is removed unread.
 */
test('the dropped-notes list is read as capped as it is written: 30 notes told at most, an oversized value removed unread', async () => {
  const e = env()
  const url = switchingUserPage(e, '/dropped-cap', () => 'user-back')
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await widget(page).launcher.waitFor()
    const now = Date.now()
    const notes = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, endpoint: e.api, publicKey: e.tenant.pub, owner: 'user-back', writtenAt: now - (400 - i) * DAY, droppedAt: now - 1000 }))
    await page.evaluate((v) => localStorage.setItem('fixloop:dropped', v), JSON.stringify(notes))
    await page.reload()
    let w = widget(page)
    await w.launcher.click()
    const notice = w.host.getByRole('status').filter({ hasText: DROPPED_NOTICE })
    await notice.waitFor()
    const told = ((await notice.textContent()) ?? '').match(/\d+\/\d+\/\d+/g) ?? []
    expect(told).toHaveLength(30) // 200 before
    expect(told[0]).toBe(new Date(notes[170].writtenAt).toLocaleDateString('en'))

    // Some 2 million characters of junk: removed at the first read, never parsed again.
    await page.evaluate(() => localStorage.setItem('fixloop:dropped', `[${'0,'.repeat(1_000_000)}0]`))
    await page.reload()
    w = widget(page)
    await w.launcher.click()
    await eventually(async () => (await page.evaluate(() => localStorage.getItem('fixloop:dropped'))) === null, 5_000)
  } finally {
    await context.close()
  }
})
