/**
 * Fixtures for the sanitizer tests: a seeded PRNG, realistic random credentials built at run time (so no
 * live-looking key is committed to the repository), true positives per rule and look-alikes that must
 * survive unchanged.
 */

/** mulberry32: small, fast, seeded; the same seed gives the same strings on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
export const ALNUM = UPPER + 'abcdefghijklmnopqrstuvwxyz0123456789'
export const B64URL = ALNUM + '-_'
export const B64 = ALNUM + '+/'

export function randomString(rng: () => number, alphabet: string, length: number): string {
  let s = ''
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(rng() * alphabet.length)]
  return s
}

const rng = prng(0x5eed)
const r = (alphabet: string, n: number) => randomString(rng, alphabet, n)
const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

export function jwt(header: Record<string, unknown>, payload: Record<string, unknown>, signature = r(B64URL, 43)): string {
  return `${b64url(header)}.${b64url(payload)}.${signature}`
}

/** Credentials, generated once per run from the fixed seed. */
export const T = {
  awsId1: 'AKIA' + r(UPPER + '234567', 16),
  awsId2: 'ASIA' + r(UPPER + '234567', 16),
  awsId3: 'AKIA' + r(UPPER + '0123456789', 16),
  awsSecret1: r(B64, 40),
  awsSecret2: r(B64, 40),
  awsSecret3: r(B64, 40),
  ghp: 'ghp_' + r(ALNUM, 36),
  gho: 'gho_' + r(ALNUM, 36),
  ghPat: 'github_pat_' + r(ALNUM, 22) + '_' + r(ALNUM, 59),
  glpat1: 'glpat-' + r(ALNUM + '-_', 20),
  glpat2: 'glpat-' + r(ALNUM, 20),
  gldt: 'gldt-' + r(ALNUM, 20),
  xoxb: `xoxb-${r('0123456789', 12)}-${r('0123456789', 13)}-${r(ALNUM, 24)}`,
  xoxp: `xoxp-${r('0123456789', 12)}-${r('0123456789', 12)}-${r('0123456789', 13)}-${r('0123456789abcdef', 32)}`,
  xapp: `xapp-1-A${r(UPPER + '0123456789', 10)}-${r('0123456789', 13)}-${r('0123456789abcdef', 64)}`,
  slackHook1: `https://hooks.slack.com/services/T${r(UPPER + '0123456789', 8)}/B${r(UPPER + '0123456789', 10)}/${r(ALNUM, 24)}`,
  slackHook2: `https://hooks.slack.com/services/T${r(UPPER + '0123456789', 10)}/B${r(UPPER + '0123456789', 11)}/${r(ALNUM, 24)}`,
  slackHook3: `https://hooks.slack.com/workflows/T${r(UPPER + '0123456789', 10)}/A${r(UPPER + '0123456789', 10)}/${r('0123456789', 18)}/${r(ALNUM, 24)}`,
  stripeLive: 'sk_live_' + r(ALNUM, 24),
  stripeRestricted: 'rk_test_' + r(ALNUM, 99),
  stripeWebhook: 'whsec_' + r(ALNUM, 32),
  google1: 'AIza' + r(ALNUM + '-_', 35),
  google2: 'AIza' + r(ALNUM + '-_', 35),
  google3: 'AIza' + r(ALNUM + '-_', 35),
  openaiProj: 'sk-proj-' + r(B64URL, 74) + 'T3BlbkFJ' + r(B64URL, 74),
  openaiLegacy: 'sk-' + r(ALNUM, 20) + 'T3BlbkFJ' + r(ALNUM, 20),
  openaiSvc: 'sk-svcacct-' + r(B64URL, 64),
  anthropic1: 'sk-ant-api03-' + r(B64URL, 93) + 'AA',
  anthropic2: 'sk-ant-admin01-' + r(B64URL, 93) + 'AA',
  anthropic3: 'sk-ant-' + r(B64URL, 40),
  npm1: 'npm_' + r(ALNUM, 36),
  npm2: 'npm_' + r(ALNUM, 36),
  npm3: 'npm_' + r(ALNUM, 36),
  hf1: 'hf_' + r(ALNUM, 34),
  hf2: 'hf_' + r(ALNUM, 34),
  hf3: 'hf_' + r(ALNUM, 34),
  awsLower: ('AKIA' + r(UPPER + '234567', 16)).toLowerCase(),
  fixloop1: 'sk_' + r(B64URL, 43),
  fixloop2: 'sk_' + r(B64URL, 43),
  fixloop3: 'sk_' + r(B64URL, 43),
  bearer1: r(B64URL, 32),
  bearer2: r(ALNUM, 40),
  bearer3: r(ALNUM + '.', 28),
  opaque1: r(B64URL, 43),
  opaque2: r(B64URL, 64),
  opaque3: r(B64URL, 40),
  jwt1: jwt({ alg: 'HS256', typ: 'JWT' }, { sub: 'user_123', exp: 1732198765 }),
  jwt2: jwt({ alg: 'RS256', kid: 'k1' }, { iss: 'https://auth.example.com', aud: 'app' }, r(B64URL, 342)),
  jwt3: jwt({ typ: 'JWT', alg: 'none' }, { admin: true }, ''),
  jwtStd: Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64') + '.' + Buffer.from(JSON.stringify({ sub: 'user>?_1', n: '~~~>>>' })).toString('base64') + '.' + r(B64, 42) + '+/=',
  pemKeyBody: Array.from({ length: 6 }, () => r(B64, 64)).join('\n'),
  // standard base64 (`+`, `/`, `=`): `openssl rand -base64 32`, Laravel's APP_KEY, an Azure account key
  b64Key1: r(B64, 12) + '+' + r(B64, 14) + '/' + r(B64, 15) + '=',
  b64Key2: r(B64, 20) + '/' + r(B64, 22) + '=',
  b64Key3: r(B64, 9) + '/' + r(B64, 20) + '+' + r(B64, 20) + '/' + r(B64, 13),
  azureKey: r(B64, 30) + '+' + r(B64, 25) + '/' + r(B64, 29) + '==',
  // hex bodies: too few character classes for the opaque-token rule, so only their prefixes tell them
  shopifyAdmin: 'shpat_' + r('0123456789abcdef', 32),
  shopifySecret: 'shpss_' + r('0123456789abcdef', 32),
  shopifyCustom: 'shpca_' + r('0123456789abcdef', 32),
  doPersonal: 'dop_v1_' + r('0123456789abcdef', 64),
  doOauth: 'doo_v1_' + r('0123456789abcdef', 64),
  doRefresh: 'dor_v1_' + r('0123456789abcdef', 64),
}

export const PEM_RSA = `-----BEGIN RSA PRIVATE KEY-----\n${T.pemKeyBody}\n-----END RSA PRIVATE KEY-----`
export const PEM_OPENSSH = `-----BEGIN OPENSSH PRIVATE KEY-----\n${r(B64, 70)}\n${r(B64, 70)}\n-----END OPENSSH PRIVATE KEY-----`
export const PEM_TRUNCATED = `-----BEGIN EC PRIVATE KEY-----\n${r(B64, 64)}\n${r(B64, 30)}`
export const basic = (userPass: string): string => Buffer.from(userPass).toString('base64')

/**
 * True positives: [rule, input, the planted values that must be gone afterwards].
 * Every rule has at least three realistic examples.
 */
export const TRUE_POSITIVES: [string, string, string[]][] = [
  ['private_key', `key file:\n${PEM_RSA}\nend of paste`, [T.pemKeyBody.split('\n')[0], T.pemKeyBody.split('\n')[5]]],
  ['private_key', `ssh setup failed with ${PEM_OPENSSH} as the identity`, [PEM_OPENSSH.split('\n')[1]]],
  ['private_key', `console: loaded ${PEM_TRUNCATED}`, [PEM_TRUNCATED.split('\n')[1], PEM_TRUNCATED.split('\n')[2]]],
  ['jwt', `Authorization: Bearer ${T.jwt1}`, [T.jwt1]],
  ['jwt', `{"id_token":"${T.jwt2}","expires_in":3600}`, [T.jwt2, T.jwt2.split('.')[2]]],
  ['jwt', `stored session ${T.jwt3} in localStorage`, [T.jwt3]],
  ['aws_access_key_id', `[default]\naws_access_key_id = ${T.awsId1}`, [T.awsId1]],
  ['aws_access_key_id', `export AWS_ACCESS_KEY_ID=${T.awsId2}`, [T.awsId2]],
  ['aws_access_key_id', `S3 upload signed by ${T.awsId3} failed with 403`, [T.awsId3]],
  ['aws_secret_access_key', `aws_secret_access_key = ${T.awsSecret1}`, [T.awsSecret1]],
  ['aws_secret_access_key', `{"AccessKeyId":"${T.awsId2}","SecretAccessKey":"${T.awsSecret2}"}`, [T.awsSecret2, T.awsId2]],
  ['aws_secret_access_key', `creds ${T.awsId1} ${T.awsSecret3}`, [T.awsSecret3, T.awsId1]],
  ['github_token', `git clone https://${T.ghp}@github.com/acme/app.git`, [T.ghp]],
  ['github_token', `GITHUB_TOKEN=${T.gho} npm run release`, [T.gho]],
  ['github_token', `my fine-grained token ${T.ghPat} stopped working`, [T.ghPat]],
  ['gitlab_token', `PRIVATE-TOKEN: ${T.glpat1}`, [T.glpat1]],
  ['gitlab_token', `GITLAB_TOKEN=${T.glpat2} glab mr list`, [T.glpat2]],
  ['gitlab_token', `deploy token ${T.gldt} in CI`, [T.gldt]],
  ['slack_token', `SLACK_BOT_TOKEN=${T.xoxb}`, [T.xoxb]],
  ['slack_token', `client = WebClient(token="${T.xoxp}")`, [T.xoxp]],
  ['slack_token', `socket mode with ${T.xapp}`, [T.xapp]],
  ['slack_webhook', `posting to ${T.slackHook1} returned 404`, [T.slackHook1.split('/services/')[1]]],
  ['slack_webhook', `webhook: "${T.slackHook2}"`, [T.slackHook2.split('/services/')[1]]],
  ['slack_webhook', `curl -X POST ${T.slackHook3}`, [T.slackHook3.split('/workflows/')[1]]],
  ['stripe_key', `Stripe.apiKey = "${T.stripeLive}"`, [T.stripeLive]],
  ['stripe_key', `restricted key ${T.stripeRestricted} lacks permissions`, [T.stripeRestricted]],
  ['stripe_key', `STRIPE_WEBHOOK_SECRET=${T.stripeWebhook}`, [T.stripeWebhook]],
  ['google_api_key', `<script src="https://maps.googleapis.com/maps/api/js?key=${T.google1}"></script>`, [T.google1]],
  ['google_api_key', `firebaseConfig = { apiKey: "${T.google2}" }`, [T.google2]],
  ['google_api_key', `quota exceeded for ${T.google3}`, [T.google3]],
  ['openai_key', `OPENAI_API_KEY=${T.openaiProj}`, [T.openaiProj]],
  ['openai_key', `openai.api_key = '${T.openaiLegacy}'`, [T.openaiLegacy]],
  ['openai_key', `service account key ${T.openaiSvc} got 429`, [T.openaiSvc]],
  ['anthropic_key', `ANTHROPIC_API_KEY=${T.anthropic1}`, [T.anthropic1]],
  ['anthropic_key', `x-api-key: ${T.anthropic2}`, [T.anthropic2]],
  ['anthropic_key', `new Anthropic({ apiKey: "${T.anthropic3}" })`, [T.anthropic3]],
  ['npm_token', `//registry.npmjs.org/:_authToken=${T.npm1}`, [T.npm1]],
  ['npm_token', `NPM_TOKEN=${T.npm2} npm publish`, [T.npm2]],
  ['npm_token', `token ${T.npm3} was revoked`, [T.npm3]],
  ['shopify_token', `X-Shopify-Access-Token: ${T.shopifyAdmin}`, [T.shopifyAdmin]],
  ['shopify_token', `SHOPIFY_API_SECRET=${T.shopifySecret} npm run dev`, [T.shopifySecret]],
  ['shopify_token', `the custom app token ${T.shopifyCustom} returns 401`, [T.shopifyCustom]],
  ['digitalocean_token', `doctl auth init -t ${T.doPersonal}`, [T.doPersonal]],
  ['digitalocean_token', `{"access_token":"${T.doOauth}","token_type":"bearer"}`, [T.doOauth]],
  ['digitalocean_token', `refresh with ${T.doRefresh} failed`, [T.doRefresh]],
  ['huggingface_token', `HF_TOKEN=${T.hf1} python train.py`, [T.hf1]],
  ['huggingface_token', `login with ${T.hf2} failed`, [T.hf2]],
  ['huggingface_token', `{"hub_auth":"${T.hf3}"}`, [T.hf3]],
  ['aws_access_key_id', `key id (lowercased by the form) ${T.awsLower} rejected`, [T.awsLower]],
  ['jwt', `standard base64 token ${T.jwtStd} in the log`, [T.jwtStd, T.jwtStd.split('.')[2]]],
  ['fixloop_key', `curl -H "Authorization: Bearer ${T.fixloop1}" https://fixloop.example.com/v1/feedback`, [T.fixloop1]],
  ['fixloop_key', `FIXLOOP_KEY=${T.fixloop2}`, [T.fixloop2]],
  ['fixloop_key', `I pasted ${T.fixloop3} into the widget by mistake`, [T.fixloop3]],
  ['url_credentials', 'DATABASE_URL=postgres://admin:Pa55w0rd!x@db.internal:5432/app', ['admin:Pa55w0rd!x', 'Pa55w0rd!x']],
  ['url_credentials', 'proxy is http://jane.doe%40acme.com:Winter2024@proxy.acme.local:3128', ['Winter2024', 'jane.doe%40acme.com']],
  ['url_credentials', 'cache at redis://:s3cr3tRedisPw@10.1.2.3:6379/0', ['s3cr3tRedisPw', '10.1.2.3']],
  ['bearer_token', `fetch failed: Authorization: Bearer ${T.bearer1}`, [T.bearer1]],
  ['bearer_token', `curl -H 'authorization: bearer ${T.bearer2}' https://api.example.com`, [T.bearer2]],
  ['bearer_token', `sent header "Bearer ${T.bearer3}" and got 401`, [T.bearer3]],
  ['basic_auth', `Authorization: Basic ${basic('admin:correct-horse-battery')}`, [basic('admin:correct-horse-battery')]],
  ['basic_auth', `proxy-authorization: Basic ${basic('jane@example.com:Hunter2!')}`, [basic('jane@example.com:Hunter2!')]],
  ['basic_auth', `request had Basic ${basic('api:k3y-9f8e7d')} header`, [basic('api:k3y-9f8e7d')]],
  ['secret', 'login failed with password=hunter2-Secret! on retry', ['hunter2-Secret!']],
  ['secret', '{"username":"jane","password":"Tr0ub4dor&3","remember":true}', ['Tr0ub4dor&3']],
  ['secret', 'client_secret: 9f8e7d6c5b4a3f2e1d0c', ['9f8e7d6c5b4a3f2e1d0c']],
  ['secret', 'Cookie: session=abcdef0123456789; theme=dark; _ga=GA1.2.3', ['abcdef0123456789', 'theme=dark']],
  ['secret', 'Set-Cookie: sid=s%3AQ2hhbmdlTWU.xyz; Path=/; HttpOnly', ['s%3AQ2hhbmdlTWU.xyz']],
  ['secret', 'redirected to /callback?code=4/0AfJohXk-q9Zz&state=af0ifjsldkj', ['4/0AfJohXk-q9Zz']],
  ['secret', 'config: { api_key: "live_8c7d6e5f4a3b", refresh_token: \'rt-1a2b3c4d\' }', ['live_8c7d6e5f4a3b', 'rt-1a2b3c4d']],
  ['secret', 'console: {\\"access_token\\":\\"ya29.a0AfH6SM\\"}', ['ya29.a0AfH6SM']],
  // issue 10 item 4: values the `secret` rule used to cut short or miss
  ['secret', 'DB_PASSWORD=Tr0ub4dor&3 npm start', ['Tr0ub4dor', '&3']],
  ['secret', 'password: correct horse battery staple', ['correct', 'horse', 'battery', 'staple']],
  ['secret', 'mot_de_passe=Soleil2024! passwort: Geheim#42 contraseña: Perro-Azul-7 senha=Cafe@123x wachtwoord: Fiets99x', ['Soleil2024!', 'Geheim#42', 'Perro-Azul-7', 'Cafe@123x', 'Fiets99x']],
  ['secret', 'パスワード：Sakura2024x and 密码=Mima1234x and пароль: Parol-987', ['Sakura2024x', 'Mima1234x', 'Parol-987']],
  ['secret', 'password=[Br4ck3tPw] token: (Par3nTok) secret: “Curly Quote Pw” api_key: 「Kagi-Kakko-9」', ['Br4ck3tPw', 'Par3nTok', 'Curly Quote Pw', 'Kagi-Kakko-9']],
  ['secret', 'db:\n  password:\n    Yaml-Next-Line-7\n  api_key:\n    yk_9a8b7c6d5e', ['Yaml-Next-Line-7', 'yk_9a8b7c6d5e']],
  ['secret', 'PASSWORD：FullWidth9x and secret＝Zenkaku8y', ['FullWidth9x', 'Zenkaku8y']],
  ['opaque_token', `download link https://files.example.com/s/${T.opaque1}/report.pdf`, [T.opaque1]],
  ['opaque_token', `session id ${T.opaque2} expired`, [T.opaque2]],
  ['opaque_token', `https://app.example.com/invite/${T.opaque3}`, [T.opaque3]],
  // standard base64 with `+` and `/`: split there, every piece was under 32 characters and stayed
  ['opaque_token', `APP_KEY=base64:${T.b64Key1} php artisan serve`, [T.b64Key1, T.b64Key1.slice(0, 12), T.b64Key1.slice(13, 27)]],
  ['opaque_token', `openssl rand -base64 32 gave ${T.b64Key2} and the app rejected it`, [T.b64Key2, T.b64Key2.slice(0, 20), T.b64Key2.slice(21, 43)]],
  ['opaque_token', `cached blob "${T.b64Key3}" in localStorage`, [T.b64Key3.slice(0, 9), T.b64Key3.slice(10, 30), T.b64Key3.slice(31, 51)]],
  ['secret', `DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey=${T.azureKey};EndpointSuffix=core.windows.net`, [T.azureKey.slice(0, 30), T.azureKey.slice(31, 56), T.azureKey.slice(57, 86)]],
  ['username', 'Error: ENOENT /Users/jane.doe/Projects/app/.env', ['jane.doe']],
  ['username', 'at Object.<anonymous> (/home/bobsmith/work/app/index.js:10:5)', ['bobsmith']],
  ['username', 'saved to C:\\Users\\Maria Garcia\\Downloads\\export.csv', ['Maria Garcia']],
  ['username', 'path "C:\\\\Users\\\\kwame\\\\AppData\\\\Local\\\\app.log"', ['kwame']],
  ['email', 'please reply to jane.doe@example.com', ['jane.doe@example.com']],
  ['email', 'CC: Bob.Smith+billing@mail.acme-corp.co.uk; thanks', ['Bob.Smith+billing@mail.acme-corp.co.uk']],
  ['email', 'mailto:support_team@helpdesk.io broke', ['support_team@helpdesk.io']],
  ['email', 'from bøb@example.com and jürgen@münchen.de and 用户@例子.广告 and ana@xn--80ak6aa92e.com', ['bøb', 'bø', 'jürgen', 'münchen', '用户', '例子', 'ana@']],
  ['credit_card', 'charged card 4111 1111 1111 1111 twice', ['4111 1111 1111 1111']],
  ['credit_card', 'card 4111.1111.1111.1111 and amex 3782.822463.10005 declined', ['4111.1111.1111.1111', '4111', '3782.822463.10005']],
  ['credit_card', 'mastercard 5555-5555-5555-4444 declined', ['5555-5555-5555-4444']],
  ['credit_card', 'amex 378282246310005, discover 6011111111111117, jcb 3530 1113 3330 0000, diners 30569309025904', ['378282246310005', '6011111111111117', '3530 1113 3330 0000', '30569309025904']],
  ['iban', 'IBAN: DE89 3704 0044 0532 0130 00 (Commerzbank)', ['DE89 3704 0044 0532 0130 00', '3704 0044 0532']],
  ['iban', 'pay to GB82WEST12345698765432 please', ['GB82WEST12345698765432']],
  ['iban', 'FR14 2004 1010 0505 0001 3M02 606 and NL91ABNA0417164300', ['FR14 2004 1010 0505 0001 3M02 606', 'NL91ABNA0417164300']],
  ['ssn', 'my SSN is 123-45-6789', ['123-45-6789']],
  ['ssn', 'SSN 219.09.9998 (dotted)', ['219.09.9998', '9998']],
  ['ssn', 'ssn: 078-05-1120 on the form', ['078-05-1120']],
  ['ssn', 'social security number 219 09 9998 was rejected', ['219 09 9998']],
  ['ipv4', 'my IP is 203.0.113.42', ['203.0.113.42']],
  ['ipv4', 'connect ECONNREFUSED 192.168.1.20:5432', ['192.168.1.20']],
  ['ipv4', 'router at http://10.0.12.1/admin and subnet 172.16.5.0/24', ['10.0.12.1', '172.16.5.0']],
  ['ipv6', 'client 2001:db8:85a3::8a2e:370:7334 was blocked', ['2001:db8:85a3::8a2e:370:7334']],
  ['ipv6', 'listening on [2001:db8::1]:8080 and fe80::1ff:fe23:4567:890a%eth0', ['2001:db8::1', 'fe80::1ff:fe23:4567:890a']],
  ['ipv6', 'X-Forwarded-For: 2a02:1810:4d02:9c00:3d4b:1c2e:8f1a:7b6c', ['2a02:1810:4d02:9c00:3d4b:1c2e:8f1a:7b6c']],
  ['phone', 'call me at +1 (415) 555-0132 after 5pm', ['+1 (415) 555-0132', '555-0132']],
  ['phone', 'Tel: +44 20 7946 0958 / mobile 07700 900123', ['+44 20 7946 0958', '07700 900123']],
  ['phone', 'US office (212) 555-0199, DE 030/12345678, FR 01 23 45 67 89, +4915112345678', ['(212) 555-0199', '030/12345678', '01 23 45 67 89', '+4915112345678']],
]

/** Look-alikes that no rule may touch. */
export const LOOK_ALIKES: string[] = [
  // versions and user agents
  'upgraded to version 1.2.3.4 yesterday',
  'app v1.2.3.4 (build 10.0.19045.3693)',
  'running 1.2.3.4 and 2.0.1.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'node v18.17.1, npm 9.6.7, Edge/120.0.2210.91',
  // ids, hashes and numbers
  'request id 550e8400-e29b-41d4-a716-446655440000',
  'commit 9fceb02d0ae598e95dc970b74767f19372d61af8 broke it (parent 3f786850e387550fdab836ed7e6dc881de23001b)',
  'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  'created at 1732198765432 ms (1732198765 s)',
  'order 123456789012, ORD-2024-000123, invoice INV-000042, ticket #100234567',
  'total $1,234.56 (€ 1.234,56), or 1 234,56 € incl. 19.99 shipping',
  'price: 4111.11 USD',
  'colors #ff5733, #FFF and rgb(255, 87, 51)',
  'page 1 of 12, 3 items, 100% done, 12 345 678 views',
  // dates and times
  '2024-01-15T10:30:45.123Z',
  'on 15/01/2024 at 10:30:45, or 01.02.2024 10:30, or 2024-01-15 10:30',
  'timecode 12:30:45:10 and ratio 16:9',
  // addresses that are not
  'assets logo@2x.png and icon@3x.webp and sprite@1.5x.jpg',
  'installed react@18.2.0 and @types/node@20.10.5',
  'git@github.com:acme/app.git',
  'loopback 127.0.0.1 and 0.0.0.0 and netmask 255.255.255.0 and ::1',
  'MAC 00:1A:2B:3C:4D:5E',
  'std::vector<int> and Foo::Bar and a::b',
  'error at /app/node_modules/react-dom/cjs/react-dom.development.js:1234:56',
  'see https://example.com/home/dashboard and https://example.com/Users/list',
  'SSNs never issued: 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000',
  'a Luhn-invalid 4111 1111 1111 1112 and an unknown issuer 9999 9999 9999 9995',
  'DE00 1234 5678 9012 3456 78 is not a valid IBAN',
  // ordinary prose about credentials
  'the password field is broken',
  'my token expired',
  'reset password link does not arrive',
  'Token: expired, password=required, secret: none',
  'enter your password: then click save',
  'password: invalid. Then I clicked save',
  'Error: could not read token:\n    at readToken (auth.js:10:5)',
  'build 123.45.6789 and version 219.09.9998',
  'a=1&b=2 and the password_field=on&theme=dark',
  'contacts: @jane and @bob, email me at work',
  'password: [REDACTED:secret] was already scrubbed',
  'Bearer authentication fails; Basic auth too',
  'the api key input is missing on the settings page',
  'Error: Request failed with status code 404 (code: 404)',
  // placeholders and documentation examples
  'sk_test_xxxxxxxxxxxxxxxxxxxxxxxx',
  'AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  'ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'Authorization: Bearer <token>',
  'Authorization: Bearer ${TOKEN}',
  'postgres://user:${DB_PASSWORD}@localhost/app',
  'a-very-long-css-class-name-for-the-primary-navigation-bar',
  'useEffectCleanupFunctionForSubscriptionManager',
  // paths and hashes in standard-base64 characters
  'GET /api/v2/Organizations/8f3a2b1c/Projects/42/Settings/Billing 404',
  'route /v1/Accounts/AC12/Calls/CA34/Recordings/RE56/Transcriptions',
  "Refused to execute inline script: a hash ('sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=') or a nonce is required",
]

/**
 * A password followed by prose: [input, fragments of the secret that must be gone, prose that must stay].
 * A value that is already a complete secret (8+ characters mixing letters with digits or symbols, or
 * quoted) ends where it ends, and the sentence after it is evidence. A short or word-like first token
 * is the start of a pass phrase and runs on (`password=abc def ghi`), as far as the pass-phrase rule goes.
 */
export const SECRET_THEN_PROSE: [string, string[], string[]][] = [
  // complete secrets: the sentence after them stays
  ['… and the form sent password=hunter2-Zq9xWv to the marmalade endpoint', ['hunter2', 'Zq9xWv'], ['and the form sent password=', ' to the marmalade endpoint']],
  ['DB_PASSWORD=Tr0ub4dor&3 npm start', ['Tr0ub4dor', '&3'], [' npm start']],
  ['login failed with password: S3cure!pass9 after the reset email', ['S3cure!pass9', 'pass9'], [' after the reset email']],
  ['passwort: Geheim#42x steht im Formular', ['Geheim#42x'], [' steht im Formular']],
  ['password="long phrase in quotes" then the page froze', ['long phrase in quotes'], [' then the page froze']],
  ['db_password=9f8e7d6c5b4a and then it crashed', ['9f8e7d6c5b4a'], [' and then it crashed']],
  // short or word-like first tokens: a pass phrase, redacted whole
  ['password=abc def ghi', ['abc', 'def', 'ghi'], ['password=']],
  ['password: correct horse battery staple', ['correct', 'horse', 'battery', 'staple'], ['password: ']],
  ['passphrase=Correct horse battery staple. The login still failed', ['Correct', 'horse', 'battery', 'staple'], [' The login still failed']],
  ['password=hunter2 again and again', ['hunter2'], ['password=']],
]
