/**
 * What each replay mode records (CONTRACT.md "Session replay"). Every mode: every input value is masked
 * (by tag: input, textarea and select of any type, hidden and unknown types too, so a password field shown
 * as text by a "show password" toggle is still masked; passwords are masked by type besides), elements with class "fixloop-block" and the widget's own
 * <fixloop-widget> are blocked (a placeholder of the same size), text under "fixloop-mask" or data-fixloop-mask
 * (the screenshot's marker) is masked (and their attributes, shadow trees included: private.ts).
 * "inputs" records the page's text (contenteditable text is input: masked). "masked" masks every text
 * node and the text-bearing attributes (title, alt, placeholder, aria-label…), and blocks images, video,
 * canvas, iframes and embedded objects. Every mode: checkbox and radio states are not recorded (hideChoices).
 */
import type { TimedEvent } from './buffer'

const ALWAYS_BLOCKED = '.fixloop-block,fixloop-widget'
const MEDIA = 'img,picture,video,audio,canvas,iframe,frame,object,embed,svg image'
/** Attributes that carry readable text (masked mode). */
const TEXT_ATTRIBUTES = new Set(['title', 'alt', 'placeholder', 'aria-label', 'aria-description', 'aria-roledescription', 'aria-valuetext', 'aria-placeholder', 'label', 'value', 'content', 'summary', 'data-tooltip'])

/** Masks like rrweb's default text mask: every non-space character becomes '*'. */
const mask = (text: string): string => text.replace(/\S/g, '*')
/** Every input value, whatever its length, as the same mask (a length can be a clue to a password). */
const maskInput = (): string => '*****'

/** The rrweb record options of a mode. */
export function recordOptions(mode: 'masked' | 'inputs') {
  return {
    // By tag, not rrweb's maskAllInputs: its list of types leaves out hidden (CSRF tokens), file (the
    // file's name) and any type the browser does not know (rendered as text). password is named besides.
    maskInputOptions: { input: true, textarea: true, select: true, password: true, hidden: true } as Record<string, boolean>,
    maskInputFn: maskInput,
    maskTextClass: 'fixloop-mask',
    maskTextSelector: mode === 'masked' ? '*' : '[data-fixloop-mask],[data-fixloop-mask] *,[contenteditable],[contenteditable] *',
    blockClass: 'fixloop-block',
    blockSelector: mode === 'masked' ? `${ALWAYS_BLOCKED},${MEDIA}` : ALWAYS_BLOCKED,
    // Canvas pixels and inlined images would carry page content as data: URLs: never recorded.
    recordCanvas: false,
    inlineImages: false,
    collectFonts: false,
    recordCrossOriginIframes: false,
    slimDOMOptions: 'all' as const,
  }
}

interface SerializedNode {
  type: number
  tagName?: string
  attributes?: Record<string, unknown>
  childNodes?: SerializedNode[]
}

function maskNode(node: SerializedNode | undefined): void {
  if (!node) return
  if (node.attributes) maskAttributes(node.attributes)
  if (node.childNodes) for (const c of node.childNodes) maskNode(c)
}

function maskAttributes(attributes: Record<string, unknown>): void {
  for (const name of Object.keys(attributes)) {
    const v = attributes[name]
    if (typeof v === 'string' && TEXT_ATTRIBUTES.has(name.toLowerCase())) attributes[name] = mask(v)
  }
}

/**
 * Masked mode: the text-bearing attributes of a full snapshot, of added nodes and of attribute changes
 * (rrweb masks text nodes and input values itself, not attributes).
 */
export function maskEventAttributes(event: TimedEvent): void {
  const data = event.data as { node?: SerializedNode; source?: number; adds?: { node: SerializedNode }[]; attributes?: { attributes: Record<string, unknown> }[] }
  if (event.type === 2) maskNode(data.node)
  else if (event.type === 3 && data.source === 0) {
    for (const a of data.adds ?? []) maskNode(a.node)
    for (const a of data.attributes ?? []) maskAttributes(a.attributes)
  }
}

function unchooseNode(node: SerializedNode | undefined): void {
  if (!node) return
  if (node.attributes) {
    delete node.attributes.checked
    if (node.tagName === 'option') delete node.attributes.selected
  }
  if (node.childNodes) for (const c of node.childNodes) unchooseNode(c)
}

/**
 * Every mode: a checkbox's or radio's state is an input value like any other, so it is not recorded (every
 * box plays unticked): rrweb masks the value of a field but records `checked` on a ticked box and
 * `isChecked` in the input event of a click, and which box a user ticked can say as much as what they typed
 * (a consent, a condition). A chosen option is masked by rrweb itself (maskInputOptions.select). The server
 * removes the same (src/sanitize/replay.ts), for a recording made by anything else.
 */
export function hideChoices(event: TimedEvent): void {
  const data = event.data as { node?: SerializedNode; source?: number; adds?: { node: SerializedNode }[]; attributes?: { attributes: Record<string, unknown> }[]; isChecked?: boolean }
  if (event.type === 2) unchooseNode(data.node)
  else if (event.type === 3 && data.source === 0) {
    for (const a of data.adds ?? []) unchooseNode(a.node)
    for (const a of data.attributes ?? []) if ('checked' in a.attributes) a.attributes.checked = null
  } else if (event.type === 3 && data.source === 5 && 'isChecked' in data) data.isChecked = false
}
