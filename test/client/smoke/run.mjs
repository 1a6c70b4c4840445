// ESM entry for Node, Bun and Deno: loads the built ESM package by path and runs the smoke calls.
import * as lib from '../../../packages/client/dist/index.js'
import smokeModule from './smoke.cjs'

const env = typeof Deno !== 'undefined' ? Deno.env.toObject() : process.env
const cfg = { url: env.FIXLOOP_URL, key: env.FIXLOOP_KEY, pub: env.FIXLOOP_PUB, app: env.FIXLOOP_APP, secret: env.FIXLOOP_SECRET, tag: env.FIXLOOP_TAG }
console.log(JSON.stringify(await smokeModule.smoke(lib, cfg)))
