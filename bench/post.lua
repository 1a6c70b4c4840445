-- POST /v1/feedback as the widget sends it: Bearer pub_ key, a small JSON report.
-- Usage: wrk ... -s bench/post.lua http://127.0.0.1:PORT -- pub_KEY
-- 64 bodies are formatted once in init() and cycled, so the load tool spends no time building requests.
package.path = debug.getinfo(1, 'S').source:match('^@(.*/)') .. '?.lua;' .. package.path
require('common')

local requests = {}
local n = 0

function init(args)
  local key = args[1] or error('post.lua: pass the pub_ key after --')
  local headers = { ['Authorization'] = 'Bearer ' .. key, ['Content-Type'] = 'application/json' }
  for i = 1, 64 do
    local body = string.format(
      '{"text":"The checkout button does nothing when I click it (report %d), tried twice on Firefox","url":"https://shop.example/p"}', i)
    requests[i] = wrk.format('POST', '/v1/feedback', headers, body)
  end
end

function request()
  n = n % #requests + 1
  return requests[n]
end
