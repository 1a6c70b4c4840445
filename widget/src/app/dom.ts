import { createElement } from '../safe-dom'

/** A tiny element builder: attributes via setAttribute (never `style`), children appended in order. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === undefined) continue
    el.setAttribute(name, value === true ? '' : value)
  }
  for (const child of children) if (child) el.append(child)
  return el
}
