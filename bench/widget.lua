-- POST /v1/feedback with what a real widget sends: ~200 characters of text, the page URL, a severity,
-- the viewport, five console lines and a little metadata. Bearer pub_ key, JSON.
-- Usage: wrk ... -s bench/widget.lua http://127.0.0.1:PORT -- pub_KEY
-- 64 bodies are formatted once in init() and cycled, so the load tool spends no time building requests.
package.path = debug.getinfo(1, 'S').source:match('^@(.*/)') .. '?.lua;' .. package.path
require('common')

local requests = {}
local n = 0
local severities = { 'low', 'medium', 'high' }
local pages = { '/cart', '/checkout', '/p/red-shoes', '/search?q=lamp', '/account/orders', '/login' }

function init(args)
  local key = args[1] or error('widget.lua: pass the pub_ key after --')
  local headers = {
    ['Authorization'] = 'Bearer ' .. key,
    ['Content-Type'] = 'application/json',
    ['User-Agent'] = 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  }
  for i = 1, 64 do
    local ts = 1763880000000 + i * 1000
    local body = string.format(
      '{"text":"The checkout button does nothing when I click it after adding two items to the cart (report %d). ' ..
      'I tried twice on Firefox and once on my phone; the spinner keeps turning and the order never goes through.",' ..
      '"url":"https://shop.example%s","severity":"%s","viewport":{"w":1440,"h":900,"dpr":2},' ..
      '"consoleLogs":[{"level":"log","message":"app booted in 412ms","ts":%d},' ..
      '{"level":"info","message":"cart loaded: 2 items","ts":%d},' ..
      '{"level":"warn","message":"slow network: /api/cart took 2300ms","ts":%d},' ..
      '{"level":"error","message":"TypeError: Cannot read properties of undefined (reading \'total\')","ts":%d},' ..
      '{"level":"error","message":"POST /api/checkout 500 Internal Server Error","ts":%d}],' ..
      '"metadata":{"release":"2026.11.3","locale":"de-DE","plan":"pro","cartItems":2}}',
      i, pages[i % #pages + 1], severities[i % 3 + 1], ts, ts + 10, ts + 20, ts + 30, ts + 40)
    requests[i] = wrk.format('POST', '/v1/feedback', headers, body)
  end
end

function request()
  n = n % #requests + 1
  return requests[n]
end
