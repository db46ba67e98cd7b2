/**
 * The few Lua scripts this backend adds to BullMQ's own. Each runs atomically in Redis, which is what makes it safe
 * for several processes to share a queue.
 */

/**
 * The head of each type's queue: for every type (KEYS: prioritized, delayed triples) its best priority among the
 * prioritized set's head and the delayed jobs whose time has come, with the ready time of that job (0 for a job
 * BullMQ already promoted: it became ready before anything still delayed). -1 when nothing of the type is ready.
 * ARGV: now, then each type's job key prefix. At most 50 ready delayed jobs are looked at per type: the claim only
 * has to pick a type, and BullMQ's moveToActive then takes that type's next job in its own order.
 */
export const headsScript = `
local now = tonumber(ARGV[1])
local maxScore = (now + 1) * 0x1000 - 1
local out = {}
for i = 1, #KEYS / 2 do
  local best, bestReady = -1, 0
  local head = redis.call('ZRANGE', KEYS[i * 2 - 1], 0, 0, 'WITHSCORES')
  if head[2] then best = math.floor(tonumber(head[2]) / 0x100000000) end
  local ready = redis.call('ZRANGEBYSCORE', KEYS[i * 2], 0, maxScore, 'WITHSCORES', 'LIMIT', 0, 50)
  for j = 1, #ready, 2 do
    local priority = tonumber(redis.call('HGET', ARGV[i + 1] .. ready[j], 'priority')) or 0
    if best == -1 or priority < best then
      best = priority
      bestReady = math.floor(tonumber(ready[j + 1]) / 0x1000)
    end
  end
  out[#out + 1] = best
  out[#out + 1] = bestReady
end
return out
`;

/**
 * Takes over the lock of an active job whose owner is gone, so that exactly one recoverer moves it on: the lock
 * must still hold the gone owner's token, or have expired. KEYS: lock, active list. ARGV: expected token (empty
 * when the claim was never recorded), new token, lease in ms, job id. Returns 1 when taken.
 */
export const takeOverScript = `
if not redis.call('LPOS', KEYS[2], ARGV[4]) then return 0 end
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

/**
 * A sliding window of task creations per type: drops entries older than the window, refuses when \`max\` are left
 * (with the time the oldest that counts leaves it) if asked to check, else records the new one. KEYS: the window's
 * sorted set. ARGV: now, window ms, max, member, check (1/0). Returns {1} or {0, retryAtMs, count}.
 */
export const rateWindowScript = `
local now, per, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - per)
if ARGV[5] == '1' then
  local count = redis.call('ZCARD', KEYS[1])
  if count >= max then
    local oldest = redis.call('ZRANGE', KEYS[1], count - max, count - max, 'WITHSCORES')
    return {0, tonumber(oldest[2]) + per, count}
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], per)
return {1}
`;

/**
 * Takes a type's dedup key for a job that did not go through BullMQ's deduplication (a manual enqueue, a retry by
 * hand) when nobody holds it, and sets the job's `deid` so BullMQ drops the key when the job finishes. When another
 * job holds the key, this one waits in the key's successors, to take it when that job finishes (handOverDedupKeyScript).
 * KEYS: the dedup key, the job's hash, the successors' set. ARGV: the job id, the dedup id. Returns 1 when taken.
 */
export const holdDedupKeyScript = `
if redis.call('HEXISTS', KEYS[2], 'finishedOn') == 1 or redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SADD', KEYS[3], ARGV[1])
  return 0
end
redis.call('HSET', KEYS[2], 'deid', ARGV[2])
return 1
`;

/**
 * After a job finished (or was removed): when the dedup key is free, hands it to the first of its successors that is
 * still pending or active, so an identical task that waits behind it still counts as a duplicate. KEYS: the dedup key,
 * the successors' set. ARGV: the finished job's id, the dedup id, the prefix of job hashes (`bull:{type}:`). Returns
 * the id that took the key, or false.
 */
export const handOverDedupKeyScript = `
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
while true do
  local id = redis.call('SPOP', KEYS[2])
  if not id then return false end
  local job = ARGV[3] .. id
  if redis.call('EXISTS', job) == 1 and redis.call('HEXISTS', job, 'finishedOn') == 0 then
    redis.call('SET', KEYS[1], id)
    redis.call('HSET', job, 'deid', ARGV[2])
    return id
  end
end
`;

/**
 * Removes the claim of a job its holder has just moved on (done, failed or back to pending), run in the same MULTI as
 * BullMQ's move so that no process killed between the two leaves a claim behind. Only while the claim is still the
 * holder's (its lock token) and the job is no longer active: when the move was refused (the lock was lost, or Redis
 * refused it), the claim stays, for the holder's retry or for recovery. KEYS: the claims hash, the type's active list.
 * ARGV: the job id, the holder's lock token. Returns 1 when removed.
 */
export const releaseClaimScript = `
if redis.call('LPOS', KEYS[2], ARGV[1]) then return 0 end
local text = redis.call('HGET', KEYS[1], ARGV[1])
if not text then return 0 end
local ok, claim = pcall(cjson.decode, text)
if not ok or type(claim) ~= 'table' or claim.token ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;

/**
 * Removes a claim whose job is no longer active (finished, back to pending, or gone): left by a worker of an older
 * version killed between finishing a job and removing its claim. Only while the claim is still the text the sweep
 * read (a fresh claim of the same job carries a new lock token) and the job is not in its type's active list, so a
 * live claim is never removed. KEYS: the claims hash, then the type's active list unless the job's type is unknown
 * (the job was removed). ARGV: the job id, the claim's text as read. Returns 1 when removed.
 */
export const sweepClaimScript = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if KEYS[2] and redis.call('LPOS', KEYS[2], ARGV[1]) then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;

/**
 * Replaces a claim's record with the holder's new text (its parked mark set or cleared) while the claim is still the
 * holder's (its lock token): a claim recovery took over, or a later claim of the job, is left alone. KEYS: the claims
 * hash. ARGV: the job id, the holder's lock token, the new text. Returns 1 when replaced.
 */
export const markClaimScript = `
local text = redis.call('HGET', KEYS[1], ARGV[1])
if not text then return 0 end
local ok, claim = pcall(cjson.decode, text)
if not ok or type(claim) ~= 'table' or claim.token ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;
