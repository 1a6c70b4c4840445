/**
 * The process-wide dependencies: config, the store, the secret box, the clock. Opened once by `serve` and
 * by each CLI command (src/runtime/open.ts); tests open one per temp data dir. Services take the
 * repositories and values they use from it, not the context itself.
 */
import type { Config } from './config'
import type { SecretBox } from './core/crypto'
import type { Clock } from './core/clock'
import type { Store } from './db/store'

export interface Context {
  config: Readonly<Config>
  /** Every repository, of the dialect the runtime opened (src/db/store.ts). */
  store: Store
  box: SecretBox
  /** Key for the embedded store's signed upload/download URLs, derived from the master key. */
  urlSigningKey: Uint8Array
  clock: Clock
}
