/**
 * The same calls in every runtime and module format (Node/Bun/Deno, ESM/CJS, an edge VM): given the
 * loaded package `lib` and a server config, exercises the client and returns what it saw.
 */
async function smoke(lib, cfg) {
  const client = new lib.Fixloop({ apiKey: cfg.key, publicKey: cfg.pub, baseUrl: cfg.url, maxRetries: 1 })
  const apps = await client.apps.list()
  const texts = ['smoke one', 'smoke two', 'smoke three'].map((t) => `${t} ${cfg.tag}`)
  const created = []
  for (const text of texts) created.push((await client.feedback.submit({ text })).id)
  const paged = []
  for await (const item of client.feedback.list({ limit: 1, includeDuplicates: true, appId: cfg.app })) {
    if (created.includes(item.id)) paged.push(item.id)
  }
  let error
  try {
    await client.feedback.retrieve('not-an-id')
  } catch (e) {
    error = { isFixloopError: e instanceof lib.FixloopError, isInvalid: e instanceof lib.InvalidRequestError, code: e.code, status: e.status, requestId: typeof e.requestId }
  }
  const token = await lib.signUserToken({ secret: cfg.secret, appId: cfg.app, sub: `smoke-${cfg.tag}` })
  const privateItem = await client.feedback.submit({ text: `private ${cfg.tag}` }, { userToken: token })
  const mode = (await client.feedback.retrieve(privateItem.id)).submittedBy.mode
  return { apps: apps.data.length, pagedInOrder: JSON.stringify(paged) === JSON.stringify([...created].reverse()), error, mode }
}
module.exports = { smoke }
