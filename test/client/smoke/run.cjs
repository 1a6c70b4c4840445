// CommonJS entry: require() of the built CJS package, as Jest and older Node code do.
const lib = require('../../../packages/client/dist/index.cjs')
const { smoke } = require('./smoke.cjs')

const env = process.env
const cfg = { url: env.FIXLOOP_URL, key: env.FIXLOOP_KEY, pub: env.FIXLOOP_PUB, app: env.FIXLOOP_APP, secret: env.FIXLOOP_SECRET, tag: env.FIXLOOP_TAG }
smoke(lib, cfg).then((r) => console.log(JSON.stringify(r)), (e) => {
  console.error(e)
  process.exit(1)
})
