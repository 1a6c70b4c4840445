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
import inbox from './app/inbox.js' with { type: 'text' }
import report from './app/report.js' with { type: 'text' }
import account from './app/account.js' with { type: 'text' }
import webhooks from './app/webhooks.js' with { type: 'text' }
import css from './app/style.css' with { type: 'text' }
import { createHash } from 'node:crypto'

export interface Asset {
  /** The module specifier the import map resolves (null for the stylesheet). */
  specifier: string | null
  url: string
  body: string
  contentType: string
}

const hash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12)
// Source-map comments point at files that are not shipped; a browser would request them in vain.
const stripMap = (text: string) => text.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n')

function asset(specifier: string | null, name: string, body: string, contentType = 'text/javascript; charset=utf-8'): Asset {
  const clean = stripMap(body)
  const [base, ext] = name.split('.')
  return { specifier, url: `/admin/assets/${base}.${hash(clean)}.${ext}`, body: clean, contentType }
}

export const ASSETS: Asset[] = [
  asset('preact', 'preact.js', preact),
  asset('preact/hooks', 'hooks.js', hooks),
  asset('htm', 'htm.js', htm),
  asset('@fixloop/api', 'api.js', api),
  asset('@fixloop/ui', 'ui.js', ui),
  asset('@fixloop/auth', 'auth.js', auth),
  asset('@fixloop/apps', 'apps.js', apps),
  asset('@fixloop/keys', 'keys.js', keys),
  asset('@fixloop/inbox', 'inbox.js', inbox),
  asset('@fixloop/report', 'report.js', report),
  asset('@fixloop/account', 'account.js', account),
  asset('@fixloop/webhooks', 'webhooks.js', webhooks),
  asset('@fixloop/main', 'main.js', main),
  asset(null, 'style.css', css, 'text/css; charset=utf-8'),
]
