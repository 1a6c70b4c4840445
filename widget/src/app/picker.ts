/**
 * The element picker: the user points at the broken element (mouse, or Tab/Enter with the keyboard,
 * Esc cancels) and gets back a componentTarget {name, meta: {selector, role, text}, bbox}.
 */
import { activeElement, body, elementAt, off, on, queryAll, rootElement } from '../safe-dom'
import { clip } from '../clip'

export interface Picked {
  element: Element
  target: { name: string; meta: { selector: string; role: string; text: string; component?: string }; bbox: { x: number; y: number; w: number; h: number } }
}

const IMPLICIT_ROLES: Record<string, string> = {
  A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', IMG: 'img', NAV: 'navigation',
  MAIN: 'main', FORM: 'form', TABLE: 'table', UL: 'list', OL: 'list', LI: 'listitem', H1: 'heading',
  H2: 'heading', H3: 'heading', H4: 'heading', DIALOG: 'dialog', HEADER: 'banner', FOOTER: 'contentinfo',
}

function roleOf(el: Element): string {
  const explicit = el.getAttribute('role')
  if (explicit) return explicit
  if (el instanceof HTMLInputElement) return ['checkbox', 'radio'].includes(el.type) ? el.type : el.type === 'submit' || el.type === 'button' ? 'button' : 'textbox'
  return IMPLICIT_ROLES[el.tagName] ?? 'generic'
}

/** A CSS selector for the element: the nearest id, then tag:nth-of-type steps (at most 6). */
export function selectorOf(el: Element): string {
  const parts: string[] = []
  let node: Element | null = el
  while (node && node !== rootElement() && parts.length < 6) {
    if (node.id && /^[A-Za-z][\w-]*$/.test(node.id)) {
      parts.unshift('#' + node.id)
      break
    }
    const tag = node.tagName.toLowerCase()
    const same = node.parentElement ? [...node.parentElement.children].filter((c) => c.tagName === node!.tagName) : []
    parts.unshift(same.length > 1 ? `${tag}:nth-of-type(${same.indexOf(node) + 1})` : tag)
    node = node.parentElement
  }
  return clip(parts.join(' > '), 512)
}

/** What the report says about an element. */
export function describeElement(el: Element): Picked['target'] {
  const component = el.closest('[data-component]')?.getAttribute('data-component') ?? undefined
  const raw = (el as HTMLElement).innerText || el.getAttribute('aria-label') || (el as HTMLInputElement).placeholder || el.textContent || ''
  const text = clip(raw.replace(/\s+/g, ' ').trim(), 200)
  const role = roleOf(el)
  const r = el.getBoundingClientRect()
  const name = clip(component ?? `${role} ${el.tagName.toLowerCase()}${text ? ` "${clip(text, 60)}"` : ''}`, 512)
  return {
    name,
    meta: { selector: selectorOf(el), role, text, ...(component ? { component } : {}) },
    bbox: { x: Math.round(r.left + scrollX), y: Math.round(r.top + scrollY), w: Math.round(r.width), h: Math.round(r.height) },
  }
}

const KEYBOARD_STOPS = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"]), [data-component], [role]'

/** Lets the user pick an element; resolves null when cancelled. `outline` is drawn over the candidate. */
export function pickElement(host: Element, outline: HTMLElement, banner: HTMLElement): Promise<Picked | null> {
  return new Promise((resolve) => {
    let candidate: Element | null = null
    const show = (el: Element | null) => {
      candidate = el && el !== host && !host.contains(el) && el !== rootElement() && el !== body() ? el : null
      outline.hidden = !candidate
      if (!candidate) return
      const r = candidate.getBoundingClientRect()
      outline.style.setProperty('transform', `translate(${r.left - 2}px, ${r.top - 2}px)`)
      outline.style.setProperty('width', `${r.width}px`)
      outline.style.setProperty('height', `${r.height}px`)
    }
    const finish = (result: Element | null) => {
      off(document, 'mousemove', onMove, true)
      off(document, 'click', onClick, true)
      off(document, 'keydown', onKey, true)
      off(document, 'focusin', onFocus, true)
      outline.hidden = true
      banner.hidden = true
      resolve(result ? { element: result, target: describeElement(result) } : null)
    }
    const onMove = (e: MouseEvent) => show(elementAt(e.clientX, e.clientY))
    const onClick = (e: MouseEvent) => {
      e.preventDefault()
      e.stopPropagation()
      show(elementAt(e.clientX, e.clientY))
      finish(candidate)
    }
    const onFocus = () => show(activeElement())
    // Keyboard: Tab / Shift+Tab walk the page's focusable and component elements (the widget's own excluded).
    const stops = queryAll(KEYBOARD_STOPS).filter((el) => !host.contains(el) && (el as HTMLElement).offsetParent !== null)
    let index = -1
    const step = (delta: number) => {
      if (!stops.length) return
      index = (index + delta + stops.length) % stops.length
      stops[index].scrollIntoView({ block: 'nearest' })
      show(stops[index])
    }
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault()
        finish(null)
      } else if (e.key === 'Tab') {
        e.preventDefault()
        e.stopPropagation()
        step(e.shiftKey ? -1 : 1)
      } else if (e.key === 'Enter' && candidate) {
        e.preventDefault()
        e.stopPropagation()
        finish(candidate)
      } else if (e.key === 'ArrowUp' && candidate?.parentElement) {
        e.preventDefault()
        show(candidate.parentElement)
      }
    }
    banner.hidden = false
    on(document, 'mousemove', onMove, true)
    on(document, 'click', onClick, true)
    on(document, 'keydown', onKey, true)
    on(document, 'focusin', onFocus, true)
    show(null)
  })
}
