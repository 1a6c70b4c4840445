/**
 * The Lua lines that set `now` (epoch ms) in a shared-limit script: the Redis server's clock (TIME), one
 * clock for every node, unless a test that injects a clock passes its time as the script's argument `arg`.
 */
export const luaNowMs = (arg: string): string => `local now = tonumber(${arg})
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`
