/**
 * The dashboard's browser files, embedded into the binary and served under content-hashed names, so a
 * release can be cached forever and works with no network: Preact + htm (ES modules, no build step)
 * and the dashboard's own modules. An import map in the page resolves the bare names to hashed URLs.
 */
import preact from '../../node_modules/preact/dist/preact.mjs' with { type: 'text' }
import hooks from '../../node_modules/preact/hooks/dist/hooks.mjs' with { type: 'text' }
import htm from '../../node_modules/htm/dist/htm.mjs' with { type: 'text' }
import api from './app/api.js' with { type: 'text' }
import ui from './app/ui.js' with { type: 'text' }
import main from './app/main.js' with { type: 'text' }
import auth from './app/auth.js' with { type: 'text' }
import apps from './app/apps.js' with { type: 'text' }
import keys from './app/keys.js' with { type: 'text' }
import reporters from './app/reporters.js' with { type: 'text' }
import inbox from './app/inbox.js' with { type: 'text' }
import report from './app/report.js' with { type: 'text' }
import account from './app/account.js' with { type: 'text' }
import reauth from './app/reauth.js' with { type: 'text' }
import webhooks from './app/webhooks.js' with { type: 'text' }
import trackers from './app/trackers.js' with { type: 'text' }
import smtp from './app/smtp.js' with { type: 'text' }
import labels from './app/labels.js' with { type: 'text' }
import live from './app/live.js' with { type: 'text' }
import replay from './app/replay.js' with { type: 'text' }
import replayFrame from './app/replay-frame.js' with { type: 'text' }
import replayFrameCss from './app/replay-frame.css' with { type: 'text' }
// rrweb's replayer, as its self-contained minified UMD build (a classic script: it sets `window.rrweb`).
import rrweb from '../../node_modules/rrweb/dist/rrweb.umd.min.cjs' with { type: 'text' }
import rrwebCss from '../../node_modules/rrweb/dist/style.min.css' with { type: 'text' }
import css from './app/style.css' with { type: 'text' }
import { createHash } from 'node:crypto'
import { canCustomerMove, canResolveByHand, CUSTOMER_TARGETS, FEEDBACK_STATUSES } from '../core/fsm'

export interface Asset {
  /** The module specifier the import map resolves (null for the stylesheet). */
  specifier: string | null
  url: string
  body: string
  contentType: string
}

const hash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12)
// Source-map comments point at files that are not shipped; a browser would request them in vain.
const stripMap = (text: string) => text.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n').replace(/\n?\/\*# sourceMappingURL=\S+ \*\/\s*$/, '\n')

function asset(specifier: string | null, name: string, body: string, contentType = 'text/javascript; charset=utf-8'): Asset {
  const clean = stripMap(body)
  const [base, ext] = name.split('.')
  return { specifier, url: `/admin/assets/${base}.${hash(clean)}.${ext}`, body: clean, contentType }
}

/**
 * The FSM's customer moves for the browser, computed from src/core/fsm.ts when the server starts: the
 * page offers exactly the moves PATCH /v1/feedback/:id accepts, so the two cannot disagree.
 */
export function fsmModule(): string {
  const moves = Object.fromEntries(FEEDBACK_STATUSES.map((from) => [from, CUSTOMER_TARGETS.filter((to) => canCustomerMove(from, to))]))
  return `// Generated from src/core/fsm.ts by src/admin-ui/assets.ts: the moves a person may ask for, per status.
export const STATUSES = ${JSON.stringify(FEEDBACK_STATUSES)}
const MOVES = ${JSON.stringify(moves)}
/** The targets PATCH /v1/feedback/:id accepts from this status (queued, archived), in that order. */
export const customerTargets = (status) => MOVES[status] || []
export const canCustomerMove = (from, to) => customerTargets(from).includes(to)
const BY_HAND = ${JSON.stringify(FEEDBACK_STATUSES.filter((from) => canResolveByHand(from)))}
/** May a person mark a lead in this status as fixed (POST /v1/feedback/:id/resolve)? */
export const canResolveByHand = (status) => BY_HAND.includes(status)
`
}

export const ASSETS: Asset[] = [
  asset('preact', 'preact.js', preact),
  asset('preact/hooks', 'hooks.js', hooks),
  asset('htm', 'htm.js', htm),
  asset('@fixloop/api', 'api.js', api),
  asset('@fixloop/ui', 'ui.js', ui),
  asset('@fixloop/fsm', 'fsm.js', fsmModule()),
  asset('@fixloop/labels', 'labels.js', labels),
  asset('@fixloop/live', 'live.js', live),
  asset('@fixloop/trackers', 'trackers.js', trackers),
  asset('@fixloop/smtp', 'smtp.js', smtp),
  asset('@fixloop/auth', 'auth.js', auth),
  asset('@fixloop/reauth', 'reauth.js', reauth),
  asset('@fixloop/apps', 'apps.js', apps),
  asset('@fixloop/keys', 'keys.js', keys),
  asset('@fixloop/reporters', 'reporters.js', reporters),
  asset('@fixloop/inbox', 'inbox.js', inbox),
  asset('@fixloop/replay', 'replay.js', replay),
  asset('@fixloop/report', 'report.js', report),
  asset('@fixloop/account', 'account.js', account),
  asset('@fixloop/webhooks', 'webhooks.js', webhooks),
  asset('@fixloop/main', 'main.js', main),
  asset(null, 'style.css', css, 'text/css; charset=utf-8'),
]

/**
 * The session replay frame's files (GET /admin/replay-frame, src/admin-ui/pages.ts): rrweb's replayer
 * (about 280 KB, so only a report page with a replay loads it, through that frame) and the frame's own
 * classic script. Not in the import map: the dashboard never imports them.
 */
export const REPLAY_FRAME_ASSETS = {
  rrweb: asset(null, 'rrweb.js', rrweb),
  script: asset(null, 'replay-frame.js', replayFrame),
}

/**
 * The frame's styles (rrweb's and its own), put inline in the frame's page rather than served: the frame's
 * policy then needs no 'self' in style-src, and the recording it plays (which inherits that policy) can
 * load no stylesheet from this server (see REPLAY_FRAME in pages.ts).
 */
export const REPLAY_FRAME_CSS = `${rrwebCss}\n${replayFrameCss}`
