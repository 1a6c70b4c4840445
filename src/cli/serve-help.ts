/** `fixloop serve --help`: apart from the command, so the top-level help loads no server code. */
import { settingsHelp } from '../core/settings'

export const SERVE_HELP = `Usage: fixloop serve [--host 127.0.0.1] [--port 8080] [--data-dir ./data] [--demo]
--demo: create (once) an Org "fixloop demo" with an App "Demo App", serve a page with the widget at
/demo, and print that URL and a new sk_ key to read the reports back (docs/widget.md). Each start
prints a new key and revokes the one the previous start printed.
A data dir that does not exist yet is created (0700) with a notice on stderr: a new instance.

${settingsHelp()}`
