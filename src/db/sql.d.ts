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
