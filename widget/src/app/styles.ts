/** The dialog's stylesheet, adopted into the shadow root (a constructable stylesheet: no inline styles, CSP-safe). */
export const DIALOG_CSS = `
dialog { font: 14px/1.45 var(--fixloop-font); color: var(--fixloop-fg); background: var(--fixloop-bg);
  border: 1px solid var(--fixloop-border); border-radius: var(--fixloop-radius); padding: 0;
  width: min(480px, calc(100vw - 24px)); max-height: calc(100vh - 24px); box-shadow: 0 12px 40px rgba(0,0,0,.3); }
dialog::backdrop { background: rgba(17,24,39,.45); }
form { display: flex; flex-direction: column; gap: 12px; padding: 16px; }
.head { display: flex; align-items: center; justify-content: space-between; gap: 8px; }
h2 { font-size: 17px; margin: 0; }
label { font-weight: 600; }
textarea { font: inherit; color: var(--fixloop-fg); background: var(--fixloop-bg); min-height: 96px; resize: vertical;
  border: 1px solid var(--fixloop-border); border-radius: 6px; padding: 8px; }
fieldset { border: 1px solid var(--fixloop-border); border-radius: 6px; margin: 0; padding: 8px 10px; display: flex; flex-direction: column; gap: 8px; }
legend { font-weight: 600; padding: 0 4px; }
.check { font-weight: 400; display: flex; gap: 6px; align-items: center; }
.row { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
canvas.preview { width: 100%; height: auto; max-height: 220px; object-fit: contain; border: 1px solid var(--fixloop-border); cursor: crosshair; touch-action: none; }
button { font: 600 13px/1.2 var(--fixloop-font); border-radius: 6px; padding: 8px 12px; cursor: pointer;
  border: 1px solid var(--fixloop-border); background: var(--fixloop-bg); color: var(--fixloop-fg); }
button[aria-pressed="true"] { background: var(--fixloop-fg); color: var(--fixloop-bg); }
button.primary { background: var(--fixloop-accent); color: var(--fixloop-accent-text); border-color: var(--fixloop-accent); }
button:focus-visible, textarea:focus-visible, input:focus-visible { outline: 3px solid var(--fixloop-accent); outline-offset: 2px; }
button:disabled { opacity: .7; cursor: progress; }
.icon { border: 0; padding: 4px 8px; font-size: 18px; }
.actions { display: flex; justify-content: flex-end; gap: 8px; position: sticky; bottom: 0; background: var(--fixloop-bg); padding: 8px 0 0; }
.note { color: var(--fixloop-muted); margin: 0; }
.status { min-height: 1.4em; margin: 0; }
.status.error { color: var(--fixloop-danger); }
.file { font-weight: 400; }
.picker-outline { position: fixed; left: 0; top: 0; z-index: var(--fixloop-z); pointer-events: none;
  border: 2px solid var(--fixloop-accent); background: rgba(29,78,216,.12); border-radius: 3px; }
.picker-banner { position: fixed; left: 50%; top: 12px; transform: translateX(-50%); z-index: var(--fixloop-z);
  font: 600 14px/1.4 var(--fixloop-font); background: var(--fixloop-fg); color: var(--fixloop-bg); padding: 8px 14px; border-radius: 6px; max-width: calc(100vw - 32px); }
@media (max-height: 820px) { canvas.preview { max-height: 140px; } textarea { min-height: 72px; } }
[hidden] { display: none !important; }
@media (prefers-reduced-motion: no-preference) { dialog[open] { animation: fl-in .12s ease-out; } }
@keyframes fl-in { from { opacity: 0; transform: translateY(8px); } }
`
