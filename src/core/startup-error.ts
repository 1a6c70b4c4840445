/**
 * A reason the process must not start or the command must not run, that the operator fixes (a busy port,
 * a data dir another server holds, a database from a newer fixloop, a wrong master key). main.ts prints
 * the message and exits 2, like a configuration error.
 */
import { ConfigError } from '../config'

export class StartupError extends ConfigError {}
