/**
 * Markdown → Atlassian Document Format (ADF), the only rich-text form Jira Cloud's REST API v3 takes for
 * an issue's description and a comment's body
 * (https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/).
 *
 * Only the markdown fixloop itself writes is understood: ATX headings, paragraphs, bullet and numbered
 * lists (flat), block quotes, horizontal rules, fenced code blocks (the report text goes in one), and inline
 * links, bare http(s) URLs, `code` and **bold**. Anything else is kept as plain text, never dropped. Lines
 * of one paragraph stay separate lines (hard breaks), as GitHub renders issue text.
 *
 * Why not a library: the npm converters (marklassian, md-to-adf) pull in a full markdown parser for a
 * subset this small, and the input holds hostile report text: this converter is linear in the input, bounded
 * (BODY_MAX), only ever emits http(s) links, and never emits an empty text node (Jira rejects those).
 */

export interface AdfNode {
  type: string
  text?: string
  attrs?: Record<string, unknown>
  marks?: { type: string; attrs?: Record<string, unknown> }[]
  content?: AdfNode[]
}
export interface AdfDoc {
  version: 1
  type: 'doc'
  content: AdfNode[]
}

/** Jira caps a rich-text field at 32 767 characters; the text is cut below that, leaving room for marks. */
export const BODY_MAX = 30_000

// Control characters other than tab and newline, and the lone CR of CRLF.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]{0,32})?.*$/
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/
const BULLET = /^\s*[-*+]\s+(.*)$/
const NUMBERED = /^\s*\d{1,9}[.)]\s+(.*)$/
const QUOTE = /^ {0,3}>\s?(.*)$/
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/

/** Inline markup: a link, a bare URL, `code`, **bold**; the first one found wins, left to right. */
const INLINE = /\[([^\]\n]{1,500})\]\((https?:\/\/[^\s)]{1,2000})\)|(https?:\/\/[^\s<>()\[\]]{1,2000})|`([^`\n]{1,2000})`|\*\*([^*\n]{1,2000})\*\*/g

function text(value: string, marks?: AdfNode['marks']): AdfNode | null {
  return value ? { type: 'text', text: value, ...(marks ? { marks } : {}) } : null
}

/** Inline nodes of one line. */
export function inline(line: string): AdfNode[] {
  const out: AdfNode[] = []
  let at = 0
  for (const m of line.matchAll(INLINE)) {
    const plain = text(line.slice(at, m.index))
    if (plain) out.push(plain)
    const [whole, linkText, linkHref, bare, code, bold] = m
    const node =
      linkText !== undefined ? text(linkText, [{ type: 'link', attrs: { href: linkHref } }])
      : bare !== undefined ? text(bare, [{ type: 'link', attrs: { href: bare } }])
      : code !== undefined ? text(code, [{ type: 'code' }])
      : text(bold!, [{ type: 'strong' }])
    if (node) out.push(node)
    at = m.index + whole.length
  }
  const rest = text(line.slice(at))
  if (rest) out.push(rest)
  return out
}

/** Lines joined by hard breaks. */
function paragraph(lines: string[]): AdfNode {
  const content: AdfNode[] = []
  lines.forEach((l, i) => {
    if (i > 0) content.push({ type: 'hardBreak' })
    content.push(...inline(l))
  })
  return { type: 'paragraph', content }
}

function list(type: 'bulletList' | 'orderedList', items: string[]): AdfNode {
  return { type, content: items.map((item) => ({ type: 'listItem', content: [paragraph([item])] })) }
}

export function markdownToAdf(markdown: string): AdfDoc {
  let source = markdown.replace(/\r\n?/g, '\n').replace(CONTROL, '')
  if (source.length > BODY_MAX) source = `${source.slice(0, BODY_MAX)}\n\n…(cut: the full text is on the fixloop dashboard)`
  const lines = source.split('\n')
  const content: AdfNode[] = []
  let para: string[] = []
  const flush = () => {
    if (para.length) content.push(paragraph(para))
    para = []
  }
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]!
    const fence = FENCE.exec(line)
    if (fence) {
      flush()
      const marker = fence[1]!
      const body: string[] = []
      i++
      // The block ends at a fence of the same character at least as long, or at the end of the text.
      const closing = new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`)
      while (i < lines.length && !closing.test(lines[i]!)) body.push(lines[i++]!)
      i++
      const code = text(body.join('\n'))
      content.push({ type: 'codeBlock', ...(fence[2] ? { attrs: { language: fence[2] } } : {}), content: code ? [code] : [] })
      continue
    }
    if (!line.trim()) {
      flush()
      i++
      continue
    }
    const heading = HEADING.exec(line)
    if (heading) {
      flush()
      content.push({ type: 'heading', attrs: { level: heading[1]!.length }, content: inline(heading[2]!) })
      i++
      continue
    }
    if (RULE.test(line)) {
      flush()
      content.push({ type: 'rule' })
      i++
      continue
    }
    const listType = BULLET.test(line) ? 'bulletList' : NUMBERED.test(line) ? 'orderedList' : null
    if (listType) {
      flush()
      const re = listType === 'bulletList' ? BULLET : NUMBERED
      const items: string[] = []
      for (let m: RegExpExecArray | null; i < lines.length && (m = re.exec(lines[i]!)); i++) items.push(m[1]!)
      content.push(list(listType, items))
      continue
    }
    const quote = QUOTE.exec(line)
    if (quote) {
      flush()
      const quoted: string[] = []
      for (let m: RegExpExecArray | null; i < lines.length && (m = QUOTE.exec(lines[i]!)); i++) quoted.push(m[1]!)
      content.push({ type: 'blockquote', content: [paragraph(quoted)] })
      continue
    }
    para.push(line)
    i++
  }
  flush()
  return { version: 1, type: 'doc', content }
}
