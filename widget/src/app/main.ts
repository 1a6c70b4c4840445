/** Entry of /widget/<hash>.js: registers the UI factory the loader calls on first open. */
import { createUI } from './ui'
import { UI_KEY, shared } from '../safe-dom'

shared[UI_KEY] = createUI
