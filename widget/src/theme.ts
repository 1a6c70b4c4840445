/** Theme variables (CSS custom properties on the host) and the launcher's stylesheet. */

/** Defaults meet 4.5:1 contrast (white on #1d4ed8 is 6.7:1; #111827 on white is 17:1). */
export const THEME_DEFAULTS = `
  --fixloop-accent: #1d4ed8; --fixloop-accent-text: #ffffff; --fixloop-bg: #ffffff; --fixloop-fg: #111827;
  --fixloop-muted: #4b5563; --fixloop-border: #6b7280; --fixloop-danger: #b91c1c; --fixloop-radius: 8px;
  --fixloop-font: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; --fixloop-z: 2147483000;`

// `:host > *`: a page rule that reaches the host (a reset's `* { all: unset }`) beats `:host { all: initial }`,
// and the host then inherits the page's text styles; the widget's top-level elements set them back.
// The launcher mirrors in right-to-left locales by its dir attribute (not inset-inline-end: the
// widget supports browsers older than CSS logical insets).
export const LAUNCHER_CSS = `
:host { all: initial; ${THEME_DEFAULTS} }
:host > * { text-transform: none; letter-spacing: normal; word-spacing: normal; text-align: start; text-indent: 0; white-space: normal; text-shadow: none; }
.launcher { text-align: center; position: fixed; right: 16px; bottom: 16px; z-index: var(--fixloop-z); font: 600 14px/1 var(--fixloop-font);
  background: var(--fixloop-accent); color: var(--fixloop-accent-text); border: 0; border-radius: 999px;
  padding: 12px 16px; cursor: pointer; box-shadow: 0 2px 8px rgba(0,0,0,.25); }
.launcher[dir="rtl"] { right: auto; left: 16px; }
.launcher:focus-visible { outline: 3px solid var(--fixloop-fg); outline-offset: 2px; }
`

/** Sets theme variables at runtime; `accent` and `--fixloop-accent` name the same variable. */
export function applyTheme(host: HTMLElement, theme: Record<string, string>): void {
  for (const [name, value] of Object.entries(theme)) {
    const prop = name.startsWith('--') ? name : `--fixloop-${name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`
    host.style.setProperty(prop, value)
  }
}
