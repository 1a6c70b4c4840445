/** Entry of /widget/<hash>.js: registers the UI factory the loader calls on first open. */
import { createUI } from './ui'

;(window as unknown as { __fixloopUI: typeof createUI }).__fixloopUI = createUI
