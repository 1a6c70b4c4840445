/**
 * Masks what the page marks private, in every mode: under an element with class "fixloop-mask" or the
 * attribute data-fixloop-mask (the screenshot's marker: a customer who marked a field for one gets it
 * masked in both), and in a contenteditable (it is input), every text node and every attribute that is
 * not layout (title, alt, aria-label, data-*, href …) is masked, in the snapshots, added nodes, text
 * changes and attribute changes.
 *
 * rrweb masks the text under the class itself, but not the attributes there, and it looks for the class
 * with closest(), which stops at a shadow root: a web component marked private recorded its shadow tree's
 * text in clear. Here "under" crosses open shadow roots and same-origin frames.
 */
import type { TimedEvent } from './buffer'
import type { Mirror } from './own'

/** Elements whose text and attributes, shadow trees and frames included, are private. */
export const PRIVATE_SELECTOR = '.fixloop-mask,[data-fixloop-mask],[contenteditable]'

/** Attributes a private element keeps: layout and rrweb's own (rr_width, _cssText …), never page data. */
const LAYOUT_ATTRIBUTES = new Set(['class', 'id', 'style', 'type', 'role', 'width', 'height', 'dir', 'lang', 'hidden', 'colspan', 'rowspan', 'tabindex', 'rel', 'media', 'contenteditable', 'data-fixloop-mask'])

const mask = (text: string): string => text.replace(/\S/g, '*')

interface SerializedNode {
  type: number
  attributes?: Record<string, unknown>
  childNodes?: SerializedNode[]
  textContent?: string
  isStyle?: boolean
}

const ELEMENT = 2

function markedPrivate(attributes: Record<string, unknown> | undefined): boolean {
  if (!attributes) return false
  if ('data-fixloop-mask' in attributes || 'contenteditable' in attributes) return true
  return typeof attributes.class === 'string' && attributes.class.split(/\s+/).includes('fixloop-mask')
}

function maskAttributes(attributes: Record<string, unknown>): void {
  for (const name of Object.keys(attributes)) {
    const v = attributes[name]
    const n = name.toLowerCase()
    if (typeof v === 'string' && !LAYOUT_ATTRIBUTES.has(n) && !n.startsWith('rr_') && !n.startsWith('_')) attributes[name] = mask(v)
  }
}

/** A serialized node and its descendants (a shadow root's children are the host's, flagged isShadow). */
function maskTree(root: SerializedNode | undefined, inside: boolean): void {
  const stack: [SerializedNode | undefined, boolean][] = [[root, inside]]
  while (stack.length) {
    const [n, parentPrivate] = stack.pop()!
    if (!n) continue
    const isPrivate = parentPrivate || (n.type === ELEMENT && markedPrivate(n.attributes))
    if (isPrivate) {
      if (n.attributes) maskAttributes(n.attributes)
      // A <style>'s text is CSS (the replay needs it to look right), not page text.
      if (typeof n.textContent === 'string' && !n.isStyle) n.textContent = mask(n.textContent)
    }
    for (const c of n.childNodes ?? []) stack.push([c, isPrivate])
  }
}

/** Whether a live node is under a private element, through shadow roots and same-origin frames. */
export function isPrivateNode(node: Node | null): boolean {
  let n = node
  while (n) {
    const el = n.nodeType === 1 ? (n as Element) : n.parentElement
    if (el?.closest(PRIVATE_SELECTOR)) return true
    const root = n.getRootNode() as ShadowRoot | Document
    n = 'host' in root ? root.host : (root.defaultView?.frameElement ?? null)
  }
  return false
}

interface MutationData {
  source?: number
  node?: SerializedNode
  adds?: { parentId: number; node: SerializedNode }[]
  texts?: { id: number; value: unknown }[]
  attributes?: { id: number; attributes: Record<string, unknown> }[]
}

/** A masker for the recorder's events, reading where live nodes are through rrweb's mirror. */
export function privateMasker(mirror: Mirror): (event: TimedEvent) => void {
  return (event) => {
    const d = event.data as MutationData
    if (event.type === 2) maskTree(d.node, false)
    if (event.type !== 3 || d.source !== 0) return
    for (const a of d.adds ?? []) maskTree(a.node, isPrivateNode(mirror.getNode(a.parentId)))
    for (const t of d.texts ?? []) {
      const node = mirror.getNode(t.id)
      if (typeof t.value === 'string' && node?.parentElement?.tagName !== 'STYLE' && isPrivateNode(node)) t.value = mask(t.value)
    }
    for (const a of d.attributes ?? []) if (isPrivateNode(mirror.getNode(a.id))) maskAttributes(a.attributes)
  }
}
