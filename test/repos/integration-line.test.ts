/**
 * Reports behind an integration's line ("New message from the contact form on our website", put first in
 * every report), on both dialects through the processing steps: once the App's different bugs all start
 * with it, each report's next line is its title (src/dedup/tokenize.ts `summaryLine`,
 * AppIndex.isBoilerplate), for the merge rules and for the lead's theme, which trackers and pull requests
 * take as their title.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, processingOf, type FreshStore } from '../dialects'
import { PROCESSING_KINDS } from '../../src/worker/processing'
import { Worker } from '../../src/worker/loop'
import { Logger } from '../../src/core/logger'
import { seedOrgApp, sql, submitReceived } from './store-fixtures'

const LINE = 'New message from the contact form on our website'

describeEachDialect('an integration’s line first in every report', (fresh) => {
  test('the next line is the title: numbers in it veto, two reports of one bug merge on it, and the lead is labelled by it', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const worker = new Worker(s.store.jobs(PROCESSING_KINDS), processingOf(s.store, s.clock).steps, s.clock, new Logger('silent'))
    let n = 0
    // One at a time, as they would arrive: each is clustered before the next comes.
    const send = async (body: string): Promise<string> => {
      const id = await submitReceived(s, s.store.lifecycle, `l${String(++n).padStart(4, '0')}`, `${LINE}\n${body}`)
      while ((await worker.tick()) > 0) {}
      return id
    }
    const row = async (id: string) => (await sql<{ duplicate_of_id: string | null; theme: string | null; status: string }>(s, 'SELECT duplicate_of_id, theme, status FROM feedback WHERE id = ?', [id]))[0]

    // The App's first reports, four different bugs: the line is their title until then.
    const centos7 = await send('Tests hang on Centos 7\nTests hang on Centos 7 with OpenJDK 11. Error: cannot find -lsnappy. Steps: run the native tests.')
    await send('Exported invoices lose their VAT line\nThe PDF export of an invoice drops the VAT line for EU customers.')
    await send('Search ignores accented letters\nSearching for cafe does not find café in the product list.')
    await send('Avatar upload rejects PNG files\nUploading a PNG avatar fails with unsupported format.')
    expect((await row(centos7)).status).not.toBe('received')

    // The same text about another Centos: its title's number tells it apart (both titles read again).
    const centos8 = await send('Tests hang on Centos 8\nTests hang on Centos 8 with OpenJDK 11. Error: cannot find -lsnappy. Steps: run the native tests.')
    expect((await row(centos8)).duplicate_of_id).toBeNull()
    expect((await row(centos8)).theme).toBe('Tests hang on Centos 8')

    // One bug told twice behind the line: merged on its own title, and labelled by it.
    const first = await send('Dark mode resets after every login on the settings page\nI switch dark mode on and after logging in again it is off.')
    const again = await send('Dark mode resets after every login on the settings page\nEach time I log in the theme is light again, dark mode was on before.')
    expect((await row(again)).duplicate_of_id).toBe(first)
    expect((await row(first)).theme).toBe('Dark mode resets after every login on the settings page')
  })
})
