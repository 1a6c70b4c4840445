/**
 * Browser user agents and the tracker-form lines holding them are not compared (src/dedup/user-agent.ts):
 * reports of one release share them whatever their bug.
 */
import { describe, expect, test } from 'bun:test'
import { withoutUserAgents } from '../src/dedup/user-agent'
import { featuresOf } from '../src/dedup/features'
import { gramsFromText } from '../src/dedup/rerank'
import { withClusterApp } from './cluster-app'

const SEAMONKEY_UA = 'Mozilla/5.0 (Windows; U; Windows NT 5.1; en-US; rv:1.9.1.8) Gecko/20100202 SeaMonkey/2.0.3'
const CHROME_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'
/** A report as a Bugzilla guided form files it. */
const filed = (title: string, ua: string, body: string): string =>
  `${title}\nUser-Agent:       ${ua}\nBuild Identifier: ${ua}\n\n${body}\n\nReproducible: Always\n\nSteps to Reproduce:\n1. ${body}`

const input = (text: string) => ({ id: 'r', text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

describe('withoutUserAgents', () => {
  test('a guided form\'s user-agent and build lines go; the title and the report stay', () => {
    const out = withoutUserAgents(filed('Mail folder pane loses its width', SEAMONKEY_UA, 'The folder pane is narrow again after a restart.'))
    expect(out).not.toMatch(/Mozilla|Gecko|SeaMonkey|rv:|1\.9\.1\.8|User-Agent|Build Identifier/)
    expect(out.split('\n')[0]).toBe('Mail folder pane loses its width')
    expect(out).toContain('The folder pane is narrow again after a restart.')
    expect(out).toContain('Reproducible: Always')
  })

  test('a WebKit user agent inline, a build id line, and either label without a colon', () => {
    expect(withoutUserAgents(`Seen on ${CHROME_UA} only.`)).toBe('Seen on   only.')
    expect(withoutUserAgents('Title\nBuild ID: 20200818235255\nuser agent\nThe text.')).toBe('Title\n\n\nThe text.')
  })

  test('prose about user agents, and text with none, are left as they are', () => {
    const prose = 'Wrong user agent on Android\nThe user agent string names the desktop build. Build identifier shown in About is 88.'
    expect(withoutUserAgents(prose)).toBe(prose)
    const plain = 'Export button hangs on large invoices'
    expect(withoutUserAgents(plain)).toBe(plain)
  })

  test('hostile shapes end quickly and keep what is not a user agent', () => {
    const open = `Mozilla/5.0 (${'a;'.repeat(50_000)}`
    expect(withoutUserAgents(open)).toBe(open)
    const many = `Mozilla/5.0 (X11) ${'Gecko/1 '.repeat(20_000)}end`
    const out = withoutUserAgents(many)
    expect(out.endsWith('end')).toBe(true)
    expect(out.length).toBeLessThan(many.length)
  })
})

describe('what the clustering compares', () => {
  test('the words and n-grams of a filed report are those of the report without its user agent', () => {
    const text = filed('Mail folder pane loses its width', SEAMONKEY_UA, 'The folder pane is narrow again after a restart.')
    const words = [...featuresOf(input(text)).tf.keys()]
    for (const ua of ['gecko', '1.9.1.8', '2.0.3', 'seamonkey', 'mozilla']) expect(words).not.toContain(ua)
    expect(words).toContain('folder')
    expect(gramsFromText(text)).toEqual(gramsFromText(withoutUserAgents(text)))
  })

  test('unrelated reports of one release do not read alike; a duplicate from another browser comes first', async () => {
    await withClusterApp(({ cluster, add }) => {
      const release = 'Mozilla/5.0 (X11; U; Linux i686; en-US; rv:1.9.1b3pre) Gecko/20090218 SeaMonkey/2.0a3pre'
      const other = 'Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.5; en-US; rv:1.9.0.6) Gecko/20090130 SeaMonkey/1.1.15'
      const unrelated = [
        ['Printing a message cuts off its last line', 'When I print a long message the last line of the page is missing.'],
        ['Address book search ignores nicknames', 'Searching the address book for a nickname finds no card.'],
        ['Spell checker underlines every word after paste', 'After pasting text the spell checker marks all words as wrong.'],
        ['Download manager forgets cleared entries', 'Cleared downloads come back in the list after restarting.'],
        ['Composer loses table borders on save', 'Saving a page in Composer drops the border attribute of tables.'],
      ].map(([title, body]) => add(filed(title, release, body)).id)
      const duplicate = add(filed('Spam filter settings gone after update', other, 'My junk mail settings are back to defaults after updating.')).id
      const query = add(filed('Upgrading resets the junk mail controls', release, 'After the upgrade the junk controls are lost.'))
      const similar = cluster.similar(query.id, 10)
      // Compared with their user agents, the unrelated reports of the query's release scored 0.17-0.19 and one
      // of them came first (0.19 against the duplicate's 0.185): the release's version and build tokens.
      expect(similar[0].id).toBe(duplicate)
      for (const id of unrelated) expect(similar.find((s) => s.id === id)?.score ?? 0).toBeLessThan(0.1)
      expect(unrelated).not.toContain(query.verdict.leadId)
      expect(unrelated).not.toContain(query.verdict.suggestion?.leadId)
    })
  })
})
