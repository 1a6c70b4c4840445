/** The dialog's stylesheet, adopted into the shadow root (a constructable stylesheet: no inline styles, CSP-safe). */
export const DIALOG_CSS = `
dialog { font: 14px/1.45 var(--fixloop-font); color: var(--fixloop-fg); background: var(--fixloop-bg);
  border: 1px solid var(--fixloop-border); border-radius: var(--fixloop-radius); padding: 0;
  width: min(480px, calc(100vw - 24px)); max-height: calc(100vh - 24px); box-shadow: 0 12px 40px rgba(0,0,0,.3); }
dialog::backdrop { background: rgba(17,24,39,.45); }
form, .fields { display: flex; flex-direction: column; gap: 12px; }
form { padding: 16px; }
.head { display: flex; align-items: center; justify-content: space-between; gap: 8px; }
h2 { font-size: 17px; margin: 0; }
label { font-weight: 600; }
textarea { font: inherit; color: var(--fixloop-fg); background: var(--fixloop-bg); min-height: 96px; resize: vertical;
  border: 1px solid var(--fixloop-border); border-radius: 6px; padding: 8px; }
fieldset { border: 1px solid var(--fixloop-border); border-radius: 6px; margin: 0; padding: 8px 10px; display: flex; flex-direction: column; gap: 8px; }
legend { font-weight: 600; padding: 0 4px; }
.check { font-weight: 400; display: flex; gap: 6px; align-items: center; }
.row { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
button.thumb { display: flex; flex-direction: column; align-items: center; gap: 6px; padding: 6px; width: 100%; cursor: zoom-in; }
.thumb canvas { display: block; max-width: 100%; max-height: 180px; height: auto; border: 1px solid var(--fixloop-border); }
.thumb span { text-decoration: underline; }
.trap { position: absolute; inset-inline-start: -10000px; top: auto; width: 1px; height: 1px; overflow: hidden; }
.visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
label.button { display: inline-block; font: 600 13px/1.2 var(--fixloop-font); border-radius: 6px; padding: 8px 12px; cursor: pointer;
  border: 1px solid var(--fixloop-border); background: var(--fixloop-bg); color: var(--fixloop-fg); }
input:focus-visible + label.button { outline: 3px solid var(--fixloop-accent); outline-offset: 2px; }
button { font: 600 13px/1.2 var(--fixloop-font); border-radius: 6px; padding: 8px 12px; cursor: pointer;
  border: 1px solid var(--fixloop-border); background: var(--fixloop-bg); color: var(--fixloop-fg); }
button[aria-pressed="true"] { background: var(--fixloop-fg); color: var(--fixloop-bg); }
button.primary { background: var(--fixloop-accent); color: var(--fixloop-accent-text); border-color: var(--fixloop-accent); }
button:focus-visible, textarea:focus-visible, input:focus-visible { outline: 3px solid var(--fixloop-accent); outline-offset: 2px; }
button:disabled { opacity: .7; cursor: progress; }
button:hover, label.button:hover { filter: brightness(.95); }
.icon { border: 0; padding: 4px 8px; font-size: 18px; }
.actions { display: flex; justify-content: flex-end; align-items: center; gap: 8px; position: sticky; bottom: 0; background: var(--fixloop-bg); padding: 8px 0 0; }
.hint { margin-inline-end: auto; font-size: 12px; }
.status.ok { font-size: 16px; font-weight: 600; text-align: center; }
.done-icon { display: flex; justify-content: center; padding-top: 8px; }
.check-icon { width: 56px; height: 56px; }
.check-icon circle { fill: var(--fixloop-accent); }
.check-icon path { fill: none; stroke: var(--fixloop-accent-text); stroke-width: 4; stroke-linecap: round; stroke-linejoin: round; }
dialog.editor { width: 100vw; height: 100vh; max-width: 100vw; max-height: 100vh; margin: 0; border: 0; border-radius: 0;
  display: none; flex-direction: column; box-shadow: none; }
dialog.editor[open] { display: flex; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 12px; padding: 10px 16px; border-bottom: 1px solid var(--fixloop-border); }
.toolbar h2 { margin-inline-end: auto; }
.help { padding: 6px 16px; font-size: 13px; }
@media (max-width: 600px) { .toolbar { padding: 8px 12px; } .toolbar h2 { order: 1; } .toolbar .primary { order: 2; } .toolbar .row { order: 3; width: 100%; } .help { padding: 4px 12px; font-size: 12px; } }
.stage { flex: 1; min-height: 0; overflow: auto; background: #374151; display: flex; }
.area { position: relative; margin: auto; flex: none; border: 12px solid transparent; box-sizing: content-box; overflow: hidden; outline: none; line-height: 0; }
.area:focus-visible { outline: 3px solid var(--fixloop-accent-text); outline-offset: -8px; }
.area canvas { display: block; cursor: crosshair; touch-action: none; }
.box { position: absolute; pointer-events: none; }
.box.redact { background: rgba(0,0,0,.6); outline: 2px solid #fff; box-shadow: 0 0 0 4px var(--fixloop-accent); }
.box.crop { outline: 2px dashed #fff; box-shadow: 0 0 0 100000px rgba(0,0,0,.5); }
.note { color: var(--fixloop-muted); margin: 0; }
.status { min-height: 1.4em; margin: 0; }
.status.error { color: var(--fixloop-danger); }
.picker-outline { position: fixed; left: 0; top: 0; z-index: var(--fixloop-z); pointer-events: none;
  border: 2px solid var(--fixloop-accent); background: rgba(29,78,216,.12); border-radius: 3px; }
.picker-banner { position: fixed; left: 50%; top: 12px; transform: translateX(-50%); z-index: var(--fixloop-z);
  font: 600 14px/1.4 var(--fixloop-font); background: var(--fixloop-fg); color: var(--fixloop-bg); padding: 8px 14px; border-radius: 6px; max-width: calc(100vw - 32px); }
@media (max-height: 820px) { .thumb canvas { max-height: 130px; } textarea { min-height: 72px; } }
.notify, .email { display: flex; flex-direction: column; gap: 6px; }
input[type="email"] { font: inherit; color: var(--fixloop-fg); background: var(--fixloop-bg); border: 1px solid var(--fixloop-border); border-radius: 6px; padding: 8px; }
input[aria-invalid="true"], textarea[aria-invalid="true"] { border-color: var(--fixloop-danger); }
.field-error { color: var(--fixloop-danger); }
.email input, .field-error { scroll-margin-bottom: 72px; }
button.link { border: 0; background: none; color: var(--fixloop-accent); text-decoration: underline; padding: 4px 6px; }
.mine-view { display: flex; flex-direction: column; gap: 8px; }
.mine-view h3 { font-size: 15px; margin: 0; }
.mine-view h3:focus { outline: none; }
.head .row { flex-wrap: nowrap; gap: 2px; flex: none; }
.head h2 { min-width: 0; }
.mine { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 8px; max-height: min(420px, calc(100vh - 220px)); overflow: auto; }
.mine li { border: 1px solid var(--fixloop-border); border-radius: 6px; padding: 8px 10px; }
.mine-text { margin: 0 0 4px; overflow-wrap: anywhere; }
.badge { font-weight: 600; font-size: 12px; border-radius: 999px; padding: 2px 8px; border: 1px solid var(--fixloop-border); color: var(--fixloop-fg); }
.badge.fixed { background: var(--fixloop-accent); border-color: var(--fixloop-accent); color: var(--fixloop-accent-text); }
[hidden] { display: none !important; }
:lang(ja) { word-break: auto-phrase; }
@media (prefers-reduced-motion: no-preference) { dialog[open] { animation: fl-in .12s ease-out; } }
@keyframes fl-in { from { opacity: 0; transform: translateY(8px); } }
`
