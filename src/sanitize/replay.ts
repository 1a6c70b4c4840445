/**
 * Scrubs a session replay (rrweb's `eventWithTime[]`, docs/api.md "Session replay") with the report
 * text's rules: every string that can hold page text or a value (text nodes, attribute values, input
 * events, mutations, custom and plugin payloads, URLs' paths and queries) goes through `sanitizeText` /
 * `sanitizeUrl`, as a report's text does; stylesheets keep their CSS with its `url(…)`s and strings scrubbed. The events keep their number, order, types and ids, so the
 * result still plays.
 *
 * On top of the rules, what the App's replay mode promises is enforced here too (a widget could be old,
 * buggy or hostile): `masked` masks every text node and input value, `inputs` every input value; a
 * password field's value is removed in every mode (its input events keep their place with an empty text),
 * and so are checkbox and radio states and chosen options (`checked`, `selected`, `isChecked`).
 *
 * Pure and bounded by its input: the caller (modules/uploads/replay-blob.ts) has capped the size and the
 * nesting depth before parsing, so the recursion here is shallow.
 */
import { countRedaction, sanitizeText, SECRET_VALUE, type RedactionCounts } from './sanitize'
import { isSensitiveKey } from './keys'
import { sanitizeUrl } from './url'

/** How strictly the recording must be masked: the App's replay mode when it is scrubbed. */
export type ReplayMasking = 'masked' | 'inputs'

/** rrweb's event and node type numbers (rrweb-snapshot NodeType, rrweb EventType / IncrementalSource). */
const EVENT_FULL_SNAPSHOT = 2
const EVENT_INCREMENTAL = 3
const NODE_ELEMENT = 2
const NODE_TEXT = 3
const SOURCE_MUTATION = 0
const SOURCE_INPUT = 5

/** Members that hold a URL: sanitized as one (its query's secrets, emails in its path), and still a URL. */
const URL_KEYS = new Set(['href', 'src', 'action', 'formaction', 'poster', 'url', 'baseURI', 'background', 'cite', 'data', 'srcset'])
/** Members that are structure, never page text: numbers mostly, and the element's tag name. */
const STRUCTURE_KEYS = new Set(['tagName', 'type', 'id', 'parentId', 'nextId', 'rootId', 'timestamp', 'source', 'tag', 'plugin', 'isSVG', 'isStyle', 'needBlock', 'isShadow', 'isShadowHost', 'isCustom'])
/** Elements whose value is an input value (masked in both modes). */
const VALUE_TAGS = new Set(['input', 'textarea', 'select', 'option'])

const mask = (s: string) => s.replace(/\S/g, '*')
/** A CSS `url(…)` (its target in group 2) or a quoted string (group 4). */
const CSS_URL_OR_STRING = /url\(\s*(["']?)([^"')]*)\1\s*\)|(["'])((?:\\.|(?!\3)[^\\\n])*)\3/gi
/**
 * Attributes that carry readable text: masked in `masked` mode, as the widget masks them
 * (widget/src/replay/privacy.ts TEXT_ATTRIBUTES). The server enforced only text nodes before: a recording
 * that skipped the widget's masking (an old or modified widget) kept `title`, `alt`, `aria-label` … in clear.
 */
const TEXT_ATTRIBUTES = new Set(['title', 'alt', 'placeholder', 'aria-label', 'aria-description', 'aria-roledescription', 'aria-valuetext', 'aria-placeholder', 'label', 'value', 'content', 'summary', 'data-tooltip'])

export interface ReplayScrub {
  events: unknown[]
  redactions: RedactionCounts
}

/** Scrubs the events in place and returns them with the per-rule counts. */
export function scrubReplayEvents(events: unknown[], masking: ReplayMasking): ReplayScrub {
  const counts: RedactionCounts = {}
  const passwordIds = new Set<number>()
  /** Elements whose `value` attribute and input events are input values. */
  const valueIds = new Set<number>()

  const text = (s: string) => sanitizeText(s, counts)
  /**
   * A stylesheet's text is kept so the replay renders, but a page's CSS carries URLs too (a signed image
   * URL, an avatar's path with a token in `background-image`): each `url(…)` is sanitized as a URL
   * (`data:` ones stay, they are the page's fonts and icons) and each quoted string (`content: "…"`) as text.
   */
  const css = (s: string) =>
    s.replace(CSS_URL_OR_STRING, (all, quote: string, url: string | undefined, strQuote: string, str: string | undefined) => {
      if (url !== undefined) return /^\s*data:/i.test(url) ? all : `url(${quote}${sanitizeUrl(url, counts)}${quote})`
      return `${strQuote}${text(str ?? '')}${strQuote}`
    })

  /** A generic value: every string scrubbed, URL members as URLs, sensitive members replaced whole. */
  function scrubValue(value: unknown, key: string | undefined): unknown {
    if (typeof value === 'string') {
      if (key !== undefined && STRUCTURE_KEYS.has(key)) return value
      return key !== undefined && URL_KEYS.has(key) ? sanitizeUrl(value, counts) : text(value)
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = scrubValue(value[i], key === 'childNodes' ? undefined : key)
      return value
    }
    if (value === null || typeof value !== 'object') return value
    const obj = value as Record<string, unknown>
    for (const k of Object.keys(obj)) {
      const v = obj[k]
      if (typeof v === 'string' && v !== '' && isSensitiveKey(k)) {
        obj[k] = SECRET_VALUE
        countRedaction(counts, 'secret')
      } else {
        obj[k] = scrubValue(v, k)
      }
    }
    return obj
  }

  /** A serialized DOM node (full snapshot or a mutation's added node) and its children. */
  function scrubNode(node: unknown, parentIsStyle: boolean): void {
    if (node === null || typeof node !== 'object') return
    const n = node as Record<string, unknown>
    const id = typeof n.id === 'number' ? n.id : undefined
    if (n.type === NODE_ELEMENT) {
      const tag = typeof n.tagName === 'string' ? n.tagName.toLowerCase() : ''
      const attrs = n.attributes !== null && typeof n.attributes === 'object' && !Array.isArray(n.attributes) ? (n.attributes as Record<string, unknown>) : undefined
      if (id !== undefined && VALUE_TAGS.has(tag)) valueIds.add(id)
      if (attrs && tag === 'input' && String(attrs.type ?? '').toLowerCase() === 'password') {
        if (id !== undefined) passwordIds.add(id)
        if ('value' in attrs) delete attrs.value
      }
      // A checkbox's or radio's state and a chosen <option> are input values too (rrweb records them as
      // `checked` / `selected` beside the masked `value`): which box a user ticked can say as much as what
      // they typed (a consent, a diagnosis, a country). Removed in every mode; `checked` on any element (a
      // web component's checkbox carries it too), `selected` on an option.
      if (attrs) {
        delete attrs.checked
        if (tag === 'option') delete attrs.selected
      }
      if (attrs) scrubAttributes(attrs, VALUE_TAGS.has(tag), tag === 'style')
      const isStyle = tag === 'style'
      if (Array.isArray(n.childNodes)) for (const c of n.childNodes) scrubNode(c, isStyle)
      for (const k of Object.keys(n)) if (k !== 'attributes' && k !== 'childNodes' && k !== 'tagName') n[k] = scrubValue(n[k], k)
      return
    }
    if (n.type === NODE_TEXT && typeof n.textContent === 'string') {
      // A <style>'s text is CSS, not page text: only its URLs and strings are scrubbed, so the replay renders.
      if (parentIsStyle || n.isStyle === true) n.textContent = css(n.textContent)
      else n.textContent = masking === 'masked' ? mask(text(n.textContent)) : text(n.textContent)
      return
    }
    for (const k of Object.keys(n)) n[k] = k === 'childNodes' ? n[k] : scrubValue(n[k], k)
    if (Array.isArray(n.childNodes)) for (const c of n.childNodes) scrubNode(c, false)
  }

  /** An element's attributes: `value` of a form field is an input value; `_cssText` of a <style> is CSS. */
  function scrubAttributes(attrs: Record<string, unknown>, isValueField: boolean, isStyle: boolean): void {
    for (const k of Object.keys(attrs)) {
      const v = attrs[k]
      if (typeof v !== 'string') continue
      if (isStyle && k === '_cssText') {
        attrs[k] = css(v)
        continue
      }
      if (masking === 'masked') {
        // Pixels are page content too: a canvas's or an inlined image's data: URL is not kept (the widget
        // blocks images in this mode); the text attributes are masked like text nodes.
        if (k === 'rr_dataURL' || (URL_KEYS.has(k) && /^\s*data:/i.test(v))) {
          delete attrs[k]
          continue
        }
        if (TEXT_ATTRIBUTES.has(k.toLowerCase()) && !(isValueField && k === 'value')) {
          attrs[k] = mask(text(v))
          continue
        }
      }
      if (isValueField && (k === 'value' || k === 'placeholder' || k === 'selected')) {
        attrs[k] = k === 'value' ? mask(text(v)) : text(v)
        continue
      }
      if (isSensitiveKey(k) && v !== '') {
        attrs[k] = SECRET_VALUE
        countRedaction(counts, 'secret')
        continue
      }
      attrs[k] = URL_KEYS.has(k) ? sanitizeUrl(v, counts) : text(v)
    }
  }

  /** A mutation: added nodes, changed texts and changed attributes. */
  function scrubMutation(data: Record<string, unknown>): void {
    if (Array.isArray(data.adds)) {
      for (const add of data.adds) if (add && typeof add === 'object') scrubNode((add as Record<string, unknown>).node, false)
    }
    if (Array.isArray(data.texts)) {
      for (const t of data.texts) {
        if (!t || typeof t !== 'object') continue
        const change = t as Record<string, unknown>
        if (typeof change.value === 'string') change.value = masking === 'masked' ? mask(text(change.value)) : text(change.value)
      }
    }
    if (Array.isArray(data.attributes)) {
      for (const a of data.attributes) {
        if (!a || typeof a !== 'object') continue
        const change = a as Record<string, unknown>
        const id = typeof change.id === 'number' ? change.id : undefined
        const attrs = change.attributes
        if (!attrs || typeof attrs !== 'object' || Array.isArray(attrs)) continue
        const set = attrs as Record<string, unknown>
        if (id !== undefined && typeof set.type === 'string' && set.type.toLowerCase() === 'password') passwordIds.add(id)
        if (id !== undefined && passwordIds.has(id) && 'value' in set) delete set.value
        // A box ticked or an option chosen by script shows as an attribute change: an input value too
        // (null: the attribute removed, so the box plays unticked).
        if ('checked' in set) set.checked = null
        if ('selected' in set && id !== undefined && valueIds.has(id)) set.selected = null
        scrubAttributes(set, id !== undefined && valueIds.has(id), false)
      }
    }
    for (const k of Object.keys(data)) if (!['adds', 'texts', 'attributes', 'removes', 'source'].includes(k)) data[k] = scrubValue(data[k], k)
  }

  /**
   * An input event: a password's text is removed, any other value masked (both modes mask input values),
   * and a checkbox's or radio's state is not kept (every box plays unticked).
   */
  function scrubInput(data: Record<string, unknown>): void {
    const id = typeof data.id === 'number' ? data.id : undefined
    if ('isChecked' in data) data.isChecked = false
    if (typeof data.text === 'string') {
      if (id !== undefined && passwordIds.has(id)) {
        data.text = ''
        countRedaction(counts, 'password')
      } else {
        data.text = mask(text(data.text))
      }
    }
  }

  for (const event of events) {
    if (event === null || typeof event !== 'object') continue
    const e = event as Record<string, unknown>
    const data = e.data !== null && typeof e.data === 'object' && !Array.isArray(e.data) ? (e.data as Record<string, unknown>) : undefined
    if (e.type === EVENT_FULL_SNAPSHOT && data) {
      scrubNode(data.node, false)
      for (const k of Object.keys(data)) if (k !== 'node') data[k] = scrubValue(data[k], k)
    } else if (e.type === EVENT_INCREMENTAL && data && data.source === SOURCE_MUTATION) {
      scrubMutation(data)
    } else if (e.type === EVENT_INCREMENTAL && data && data.source === SOURCE_INPUT) {
      scrubInput(data)
    } else if (data) {
      // Meta (href), custom and plugin events (console logs, network), and whatever a newer rrweb adds.
      scrubValue(data, undefined)
    }
  }
  return { events, redactions: counts }
}
