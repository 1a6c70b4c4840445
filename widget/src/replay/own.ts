/**
 * Keeps the widget out of the recording. rrweb blocks <fixloop-widget> in its snapshots (blockSelector)
 * but still observes its open shadow root (it registers every shadow host's root, blocked or not), so the
 * dialog's DOM, its stylesheets and the user's typing in it would reach the events. This filter, run on
 * every event before it is kept, drops what happens inside the widget's shadow root and moves mouse
 * positions and clicks on it to the host element (a replay still shows where the user clicked).
 */
import type { TimedEvent } from './buffer'

/** rrweb's mirror: the recorded node of an id and back. */
export interface Mirror {
  getId(n: Node | undefined | null): number
  getNode(id: number): Node | null
}

const MUTATION = 0
const MOUSE_MOVE = 1
const MOUSE_INTERACTION = 2
const TOUCH_MOVE = 6
const STYLE_SHEET_RULE = 8
const STYLE_DECLARATION = 13
const ADOPTED_STYLE_SHEET = 15

interface Data {
  source: number
  id?: number
  styleId?: number
  styleIds?: number[]
  positions?: { id: number }[]
  adds?: { parentId: number }[]
  removes?: { parentId: number; id: number }[]
  texts?: { id: number }[]
  attributes?: { id: number }[]
}

/** An event filter: the event (possibly changed) to keep, or undefined to drop it. */
export function ownEventsFilter(host: Element, mirror: Mirror): (event: TimedEvent) => TimedEvent | undefined {
  const root = host.shadowRoot
  const ownStyles = new Set<number>()
  const inside = (id: number | undefined): boolean => {
    if (id === undefined || !root) return false
    const node = mirror.getNode(id)
    return !!node && node.getRootNode() === root
  }
  return (event) => {
    if (event.type !== 3) return event
    const d = event.data as Data
    const hostId = mirror.getId(host)
    const underHost = (id: number) => id === hostId || inside(id)
    switch (d.source) {
      case MUTATION: {
        const before = (d.adds?.length ?? 0) + (d.removes?.length ?? 0) + (d.texts?.length ?? 0) + (d.attributes?.length ?? 0)
        if (d.adds) d.adds = d.adds.filter((a) => !underHost(a.parentId))
        if (d.removes) d.removes = d.removes.filter((r) => !underHost(r.parentId) && !inside(r.id))
        if (d.texts) d.texts = d.texts.filter((t) => !inside(t.id))
        if (d.attributes) d.attributes = d.attributes.filter((a) => !inside(a.id))
        const after = (d.adds?.length ?? 0) + (d.removes?.length ?? 0) + (d.texts?.length ?? 0) + (d.attributes?.length ?? 0)
        return before && !after ? undefined : event
      }
      case MOUSE_MOVE:
      case TOUCH_MOVE:
        for (const p of d.positions ?? []) if (inside(p.id)) p.id = hostId
        return event
      case MOUSE_INTERACTION:
        if (inside(d.id)) d.id = hostId
        return event
      case ADOPTED_STYLE_SHEET:
        if (!underHost(d.id!)) return event
        for (const s of d.styleIds ?? []) ownStyles.add(s)
        return undefined
      case STYLE_SHEET_RULE:
      case STYLE_DECLARATION:
        return d.styleId !== undefined && ownStyles.has(d.styleId) ? undefined : inside(d.id) ? undefined : event
      default:
        return inside(d.id) ? undefined : event
    }
  }
}
