/**
 * Browser globals used inside page.evaluate() callbacks of the widget tests (they run in Chromium,
 * not in Bun); typed loosely so the tests typecheck without the DOM lib, which clashes with bun-types.
 */
declare const document: any
declare const window: any
declare const indexedDB: any
declare function getComputedStyle(el: any): any
declare function dispatchEvent(event: Event): boolean
declare const XMLHttpRequest: any
declare const HTMLElement: any
type HTMLElement = any
declare const HTMLInputElement: any
type HTMLInputElement = any
declare const Image: any
declare const innerWidth: number
declare const Node: any
type Node = any
