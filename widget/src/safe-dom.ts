/**
 * Reads of `document` and `window` that the host page's markup cannot clobber. An element with
 * `name="body"`, `name="cookie"` or `name="createElement"` (img, form, embed, object, iframe) shadows
 * that member on `document`, and any element's `id` shadows globals the Window interface does not
 * define itself (e.g. `addEventListener`, or `window.Fixloop`). Named properties live on the objects
 * themselves, never on their prototypes, so the widget reads members from the prototype chain instead.
 */

function member(target: object, name: string): PropertyDescriptor | undefined {
  for (let proto = Object.getPrototypeOf(target); proto; proto = Object.getPrototypeOf(proto)) {
    const found = Object.getOwnPropertyDescriptor(proto, name)
    if (found) return found
  }
  return undefined
}

const docGet = <T>(name: string): T => member(document, name)!.get!.call(document) as T
const docCall = <T>(name: string, ...args: unknown[]): T => (member(document, name)!.value as (...a: unknown[]) => T).apply(document, args)

export const currentScript = (): HTMLScriptElement | null => docGet<HTMLScriptElement | null>('currentScript')
export const body = (): HTMLElement | null => docGet<HTMLElement | null>('body')
export const head = (): HTMLHeadElement | null => docGet<HTMLHeadElement | null>('head')
export const rootElement = (): HTMLElement => docGet<HTMLElement>('documentElement')
export const activeElement = (): Element | null => docGet<Element | null>('activeElement')
export const cookie = (): string => docGet<string>('cookie')

export const createElement = <K extends keyof HTMLElementTagNameMap>(tag: K): HTMLElementTagNameMap[K] => docCall('createElement', tag)
export const createSvg = <K extends keyof SVGElementTagNameMap>(tag: K): SVGElementTagNameMap[K] => docCall('createElementNS', 'http://www.w3.org/2000/svg', tag)
export const queryAll = (selector: string): Element[] => [...docCall<NodeListOf<Element>>('querySelectorAll', selector)]
export const elementAt = (x: number, y: number): Element | null => docCall<Element | null>('elementFromPoint', x, y)

const { addEventListener: listen, removeEventListener: unlisten } = EventTarget.prototype
type Listener = (e: any) => void
/** addEventListener on `document`, `window` or a page element (a form's controls shadow its members by name). */
export const on = (target: EventTarget, type: string, fn: Listener, options?: boolean | AddEventListenerOptions): void =>
  listen.call(target, type, fn, options)
export const off = (target: EventTarget, type: string, fn: Listener, options?: boolean): void => unlisten.call(target, type, fn, options)

/**
 * Values shared between the loader and the lazily loaded UI, keyed by symbols on window: element ids
 * and names create string-keyed properties only, so a page element can never stand in for them.
 */
export const UI_KEY = Symbol.for('fixloop.ui')
export const API_KEY = Symbol.for('fixloop.api')
/** The replay chunk's factory, then (debug hook for tests and bench) the running recorder. */
export const REPLAY_KEY = Symbol.for('fixloop.replay')
export const RECORDER_KEY = Symbol.for('fixloop.recorder')
export const shared = window as unknown as Record<symbol, unknown>
