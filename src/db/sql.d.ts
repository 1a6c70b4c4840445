declare module '*.sql' {
  const text: string
  export default text
}
declare module '*.css' {
  const text: string
  export default text
}
declare module '*/swagger-ui-bundle.js' {
  const text: string
  export default text
}
// Browser files embedded as text by src/admin-ui/assets.ts.
declare module '*.mjs' {
  const text: string
  export default text
}
declare module '*.js' {
  const text: string
  export default text
}
declare module '*.cjs' {
  const text: string
  export default text
}
