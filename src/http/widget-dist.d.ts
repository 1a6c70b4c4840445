/** The built widget files, imported as text (`with { type: 'text' }`) by widget-assets.ts. */
declare module '*/widget/dist/widget.js' {
  const text: string
  export default text
}
declare module '*/widget/dist/ui.js' {
  const text: string
  export default text
}
declare module '*/widget/dist/replay.js' {
  const text: string
  export default text
}
