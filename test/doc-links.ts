/**
 * The relative links of README.md and docs/*.md: each must name a file of the repository, and each
 * `#anchor` a heading of its page, slugged as GitHub does, or an `<a id>`. A renamed heading otherwise
 * leaves links that open the page at its top, and nobody sees it (a newcomer follows them).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { ROOT } from './harness'

/** The anchors a Markdown page has: GitHub's heading slugs (`-1`, `-2` for repeats) and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of outsideFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      const slug = heading[1].toLowerCase().replace(/<[^>]+>/g, '').replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '').replace(/ /g, '-')
      const n = seen.get(slug) ?? 0
      seen.set(slug, n + 1)
      anchors.add(n === 0 ? slug : `${slug}-${n}`)
    }
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(a[1])
  }
  return anchors
}

/** The lines of a page, each fenced one (``` blocks) emptied: line numbers stay right. */
function outsideFences(markdown: string): string[] {
  let fenced = false
  return markdown.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced
      return ''
    }
    return fenced ? '' : line
  })
}

/** The pages checked: README.md and docs/*.md, by path from the repository's root. */
function repositoryPages(): Map<string, string> {
  const names = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
  return new Map(names.map((name) => [name, readFileSync(join(ROOT, name), 'utf8')]))
}

/**
 * Every broken link as `page:line: link: why`. `pages` (path → text) stands for the repository's pages;
 * a target among them is read from there, any other from the repository.
 */
export function brokenDocLinks(pages: Map<string, string> = repositoryPages()): string[] {
  const broken: string[] = []
  const textOf = (path: string) => pages.get(path) ?? (existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined)
  for (const [page, text] of pages) {
    outsideFences(text).forEach((line, i) => {
      // Inline code is not a link: `[x](y)` in backticks is an example.
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1]
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue
        const [file, anchor] = link.split('#') as [string, string | undefined]
        const target = file ? normalize(join(dirname(page), file)) : page
        const where = `${page}:${i + 1}: ${link}`
        const targetText = target.endsWith('/') || !target.endsWith('.md') ? undefined : textOf(target)
        if (file && !pages.has(target) && !existsSync(join(ROOT, target))) broken.push(`${where}: no such file`)
        else if (anchor !== undefined && targetText !== undefined && !anchorsOf(targetText).has(anchor)) broken.push(`${where}: no such heading`)
      }
    })
  }
  return broken
}
