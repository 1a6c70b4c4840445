-- GET /v1/feedback?limit=50 with an sk_ key: the newest page, or (with a cursor file) a page after a
-- cursor picked at random from seeded ids for each request.
-- Usage: wrk ... -s bench/list.lua http://127.0.0.1:PORT -- sk_KEY [CURSOR_FILE]
package.path = debug.getinfo(1, 'S').source:match('^@(.*/)') .. '?.lua;' .. package.path
require('common')

local requests = {}

function init(args)
  local key = args[1] or error('list.lua: pass the sk_ key after --')
  local headers = { ['Authorization'] = 'Bearer ' .. key }
  local file = args[2]
  if file then
    for line in io.lines(file) do
      if #line == 24 then
        requests[#requests + 1] = wrk.format('GET', '/v1/feedback?limit=50&cursor=' .. line, headers)
      end
    end
    if #requests == 0 then error('list.lua: no cursors in ' .. file) end
  else
    requests[1] = wrk.format('GET', '/v1/feedback?limit=50', headers)
  end
  math.randomseed(os.time() + tonumber(tostring({}):match('0x(%x+)') or '0', 16) % 1000003)
end

function request()
  return requests[math.random(#requests)]
end
