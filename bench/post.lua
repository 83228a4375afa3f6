-- wrk script: POST OpenAI-style chat bodies and print one parseable result line.
--
-- Environment:
--   BENCH_PROMPTS  fixed  (default) one body, built once, no per-request Lua
--                  small  rotate through 8 prompts (embedding cache hits)
--                  varied every request a new prompt (embedding cache misses)
--   BENCH_MODEL    value of "model" in the body (default "auto")
--   BENCH_SHAPE    chat (default): a Chat Completions body; messages: an Anthropic
--                  Messages body (max_tokens 64); responses: an OpenAI Responses body
--   BENCH_SEED     offset for the varied serials; give each wrk run its own so
--                  that prompts never repeat across runs of one invocation
--
-- Output (from done()), one line:
--   BENCHRESULT requests=N duration_us=N rps=F p50_us=F p99_us=F max_us=F
--               err_connect=N err_read=N err_write=N err_timeout=N non2xx=N

local mode = os.getenv("BENCH_PROMPTS") or "fixed"
local model = os.getenv("BENCH_MODEL") or "auto"
local seed = tonumber(os.getenv("BENCH_SEED") or "0")

local shape = os.getenv("BENCH_SHAPE") or "chat"

local function body_for(prompt)
  if shape == "responses" then
    return '{"model":"' .. model .. '","input":"' .. prompt .. '"}'
  end
  local limit = shape == "messages" and '"max_tokens":64,' or ""
  return '{"model":"' .. model .. '",' .. limit .. '"messages":[{"role":"user","content":"'
    .. prompt .. '"}]}'
end

local small = {
  "write a python function that reverses a linked list",
  "translate this sentence into french please",
  "what is the integral of x squared",
  "summarize the plot of hamlet in two lines",
  "why does my docker container exit immediately",
  "give me a recipe for a quick tomato soup",
  "explain the difference between tcp and udp",
  "how many moons does jupiter have",
}

-- Word lists for the varied set: the serial walks every verb x topic x style
-- combination, and is appended too, so no prompt repeats within a run.
local verbs = { "explain", "summarize", "rewrite", "translate", "debug", "compare",
  "describe", "outline", "critique", "simplify", "estimate", "list" }
local topics = { "a recursive sql query", "the french revolution", "a rust borrow error",
  "photosynthesis in desert plants", "a kubernetes crashloop", "the causes of inflation",
  "a sonnet about autumn rain", "binary search on rotated arrays", "the rules of cricket",
  "a marketing email for running shoes", "quantum entanglement", "a failing pytest fixture",
  "the history of the printing press", "a budget for a small bakery" }
local styles = { "for a beginner", "in three bullet points", "with an example",
  "as briefly as possible", "for a senior engineer", "in plain english", "step by step" }

local serial = 0  -- thread_id is a global set per thread by setup()
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

local function varied_prompt()
  serial = serial + 1
  local n = seed + (thread_id or 0) * 10000000 + serial
  local t = math.floor(n / #verbs)
  local s = math.floor(t / #topics)
  return verbs[(n % #verbs) + 1] .. " " .. topics[(t % #topics) + 1] .. " "
    .. styles[(s % #styles) + 1] .. " (ref " .. n .. ")"
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = body_for(small[1])

if mode == "small" then
  -- Built in init(): wrk adds the Host header to wrk.headers only then.
  local prebuilt = {}
  init = function(args)
    for i, p in ipairs(small) do
      prebuilt[i] = wrk.format("POST", nil, nil, body_for(p))
    end
  end
  local i = 0
  request = function()
    i = (i % #prebuilt) + 1
    return prebuilt[i]
  end
elseif mode == "varied" then
  request = function()
    return wrk.format("POST", nil, nil, body_for(varied_prompt()))
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "BENCHRESULT requests=%d duration_us=%d rps=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f "
    .. "err_connect=%d err_read=%d err_write=%d err_timeout=%d non2xx=%d\n",
    summary.requests, summary.duration, summary.requests / secs,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.timeout, e.status))
end
