"""What each configuration field means, in English and Chinese, keyed by
`Model.field`: the words of the generated reference (gen_config_reference.py
renders them beside what the schema itself says)."""

from __future__ import annotations

NOTES: dict[str, tuple[str, str]] = {
    # Root
    "Root.listen": ("HOST:PORT of the public listener (port 1-65535; 0 picks a free "
                    "one); `serve --listen` overrides it.",
                    "公共监听地址 HOST:PORT（端口 1-65535；0 表示任选空闲端口）；"
                    "`serve --listen` 可覆盖。"),
    "Root.admin": ("The admin listener; absent means none.", "管理监听器；不写则不启动。"),
    "Root.routes": ("The routes, matched exact URI first, then the longest prefix (`/v1/*`).",
                    "路由列表。先精确匹配 URI，再匹配最长前缀（`/v1/*`）。"),
    "Root.consumers": ("Clients that authenticate with `key-auth`.",
                       "通过 `key-auth` 认证的客户端。"),
    "Root.shutdown_grace": ("Seconds in-flight requests and streams may run after SIGTERM.",
                            "收到 SIGTERM 后，进行中的请求和流最多还能运行的秒数。"),
    "Root.client_body_timeout": ("Seconds a client has to send its whole request body; a "
                                 "slower one gets 408 and the connection is closed.",
                                 "客户端发送完整请求体的最长秒数；超时返回 408 并关闭连接。"),
    "Root.client_keepalive_timeout": ("Seconds a client connection may sit idle (before its "
                                      "first request or between requests) before it is "
                                      "closed. Read at start; a reload does not change it.",
                                      "客户端连接空闲（首个请求之前或两次请求之间）多少秒后"
                                      "被关闭。启动时读取，重载不会改变它。"),
    # Admin
    "Admin.listen": ("HOST:PORT of the admin listener (port 1-65535; 0 picks a free one).",
                     "管理监听地址 HOST:PORT（端口 1-65535；0 表示任选空闲端口）。"),
    "Admin.key": ("Value clients must send in `X-API-KEY`. Required unless the next field "
                  "allows a keyless loopback listener.",
                  "客户端必须在 `X-API-KEY` 中发送的值。除非下一项允许无 key 的回环监听，"
                  "否则必填。"),
    "Admin.allow_no_key_on_loopback": ("Start without `key` when `listen` is a loopback "
                                       "address.",
                                       "当 `listen` 是回环地址时，允许不设 `key` 启动。"),
    "Admin.allow_env": ("Environment variables that credentials sent over the admin API "
                        "may name (`${NAME}`, `$env://NAME`). Empty: admin writes may keep "
                        "the references the file has where it has them, and name no other "
                        "variable.",
                        "通过管理 API 写入的凭据可以引用的环境变量（`${NAME}`、"
                        "`$env://NAME`）。为空时，管理写入只能在文件原有的位置保留文件中"
                        "已有的引用，不能引用其他任何变量。"),
    # Route
    "Route.id": ("Unique id; used in metrics, logs and admin URLs.",
                 "唯一 id，用于指标、日志和管理 API 的 URL。"),
    "Route.uri": ("Exact path, or a prefix ending in `*`.", "精确路径，或以 `*` 结尾的前缀。"),
    "Route.methods": ("Accepted methods; others get 405.", "允许的方法；其他方法返回 405。"),
    "Route.plugins": ("The plugin that serves the route.", "处理该路由的插件。"),
    "Route.status": ("APISIX route status: `0` disables the route (404), still validated.",
                     "APISIX 路由状态：`0` 禁用该路由（返回 404），但仍会校验。"),
    "Route.name": ("APISIX metadata, kept and not used.", "APISIX 元数据，保留但不使用。"),
    "Route.desc": ("APISIX metadata, kept and not used.", "APISIX 元数据，保留但不使用。"),
    "Route.labels": ("APISIX metadata, kept and not used.", "APISIX 元数据，保留但不使用。"),
    "Route.create_time": ("APISIX metadata (Unix seconds), kept and not used.",
                          "APISIX 元数据（Unix 秒），保留但不使用。"),
    "Route.update_time": ("APISIX metadata (Unix seconds), kept and not used.",
                          "APISIX 元数据（Unix 秒），保留但不使用。"),
    # Plugins
    "Plugins.ai_proxy_multi": ("Several instances with a balancer.", "多实例加均衡器。"),
    "Plugins.ai_proxy": ("One instance.", "单个实例。"),
    "Plugins.key_auth": ("Require a consumer key on this route.",
                         "该路由要求提供 consumer key。"),
    # AIProxyMulti
    "AIProxyMulti.instances": ("The LLM instances of the route.", "该路由的 LLM 实例。"),
    "AIProxyMulti.balancer": ("How an instance is chosen.", "实例的选择方式。"),
    "AIProxyMulti.embeddings": ("Embedding model for `algorithm: semantic`.",
                                "`algorithm: semantic` 使用的向量模型。"),
    "AIProxyMulti.semantic_opts": ("APISIX 3.18 form of the semantic settings; use instead "
                                   "of `embeddings` and `balancer.threshold`.",
                                   "APISIX 3.18 形式的语义设置，可代替 `embeddings` 与 "
                                   "`balancer.threshold`。"),
    "AIProxyMulti.fallback_strategy": ("Which answers fail over to the next instance: "
                                       "`http_429` adds 429, `http_5xx` adds 500-599; "
                                       "`instance_health_and_rate_limiting` "
                                       "(`rate_limiting` in a list) adds no status. Transport "
                                       "errors always fail over.",
                                       "哪些响应会切换到下一个实例：`http_429` 加入 429，"
                                       "`http_5xx` 加入 500-599；"
                                       "`instance_health_and_rate_limiting`（列表中写作 "
                                       "`rate_limiting`）不加入状态码。传输错误总会切换。"),
    "AIProxyMulti.fallback_http_statuses": ("More statuses that fail over.",
                                            "额外触发切换的状态码。"),
    "AIProxyMulti.max_retries": ("At most this many extra attempts per request; unset "
                                 "means every instance may be tried.",
                                 "每个请求最多额外尝试的次数；不设则可尝试所有实例。"),
    "AIProxyMulti.retry_on_failure_within_ms": ("Fail over only when the failed attempt "
                                                "took at most this many ms.",
                                                "只有失败的那次尝试耗时不超过该毫秒数时"
                                                "才切换。"),
    "AIProxyMulti.timeout": ("Upstream timeout in ms for each wait: connect, each read, "
                             "each SSE event.",
                             "上游每次等待的超时（毫秒）：连接、每次读取、每个 SSE 事件。"),
    "AIProxyMulti.keepalive": ("Reuse upstream connections.", "复用上游连接。"),
    "AIProxyMulti.keepalive_timeout": ("Idle time in ms before a pooled connection closes.",
                                       "连接池中空闲连接关闭前的时间（毫秒）。"),
    "AIProxyMulti.keepalive_pool": ("Idle connections kept open per upstream origin; more are "
                                    "closed as they come back to the pool. Unset: all are "
                                    "kept (APISIX's default is 30).",
                                    "每个上游源站保留的空闲连接数；超出的连接在归还连接池时关闭。"
                                    "不设置时全部保留（APISIX 的默认值是 30）。"),
    "AIProxyMulti.ssl_verify": ("Verify upstream TLS certificates.", "校验上游 TLS 证书。"),
    "AIProxyMulti.attempt_timeout": ("Deadline in ms for one whole non-streamed upstream attempt "
                                  "(headers and body); unset: `timeout`. A stream gets it for "
                                  "its headers, then `timeout` per event.",
                                  "一次非流式上游尝试（响应头加响应体）的总时限（毫秒）；不设则"
                                  "等于 `timeout`。流式响应的响应头受它约束，之后每个事件受 "
                                  "`timeout` 约束。"),
    "AIProxyMulti.max_resp_body_size": ("Largest non-streamed upstream body in bytes, after "
                                     "gzip/deflate decoding; larger: 502, connection dropped.",
                                     "非流式上游响应体上限（字节，按 gzip/deflate 解码后计）；"
                                     "超过返回 502 并断开该连接。"),
    "AIProxyMulti.max_sse_event_size": ("Largest single SSE event in bytes; a larger one ends "
                                     "the stream with an error event.",
                                     "单个 SSE 事件上限（字节）；超过则以错误事件结束该流。"),
    "AIProxyMulti.max_connections_per_origin": ("Open connections per upstream origin; further "
                                             "requests wait in a queue.",
                                             "每个上游源站的最大连接数；更多请求排队等待。"),
    "AIProxyMulti.proxy": ("HTTP proxy URL for upstream calls (`http://user:pw@host:port`); `\"\"` "
                        "means none. Unset: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, read at "
                        "config load. https upstreams go through CONNECT.",
                        "上游调用使用的 HTTP 代理 URL（`http://user:pw@host:port`）；`\"\"` "
                        "表示不用代理。不设则在加载配置时读取 `HTTPS_PROXY`/`HTTP_PROXY`/"
                        "`NO_PROXY`。https 上游经 CONNECT 隧道。"),
    "AIProxyMulti.max_req_body_size": ("Largest request body in bytes; larger gets 413.",
                                       "请求体上限（字节）；超过返回 413。"),
    "AIProxyMulti.logging": ("Access-log options.", "访问日志选项。"),
    "AIProxyMulti.debug_headers": ("Send `X-AI-Instance` (and `X-AI-Failover` after a "
                                   "failover). Reveals instance names.",
                                   "发送 `X-AI-Instance`（发生切换时还有 `X-AI-Failover`）。"
                                   "会暴露实例名。"),
    "AIProxyMulti.strict_models": ("A request whose `model` no instance serves (by its "
                                   "model, name or alias) gets 404 `model_not_found`; "
                                   "otherwise it is served as `auto` is.",
                                   "请求的 `model` 没有任何实例提供（按模型名、实例名或别名）"
                                   "时返回 404 `model_not_found`；否则按 `auto` 处理。"),
    # Instance
    "Instance.name": ("Unique within the route; appears in headers, metrics and logs.",
                      "路由内唯一；出现在响应头、指标和日志中。"),
    "Instance.provider": ("Provider module: `openai`, `openai-compatible`, `azure-openai`, "
                          "`deepseek`, `openrouter`, `mistral`, `gemini`, `anthropic` "
                          "(Anthropic's OpenAI-compatible endpoint), `anthropic-messages` "
                          "(Anthropic's native Messages API), `echo`.",
                          "提供方：`openai`、`openai-compatible`、`azure-openai`、`deepseek`、"
                          "`openrouter`、`mistral`、`gemini`、`anthropic`（Anthropic 的 "
                          "OpenAI 兼容端点）、`anthropic-messages`（Anthropic 原生 "
                          "Messages API）、`echo`。"),
    "Instance.priority": ("Higher tiers take all traffic while any of their instances is "
                          "usable.", "优先级高的层级只要还有可用实例就承接全部流量。"),
    "Instance.weight": ("Share of traffic within its priority tier (0 = none).",
                        "在同一优先级层级内的流量权重（0 表示不分配）。"),
    "Instance.auth": ("Credentials for the upstream.", "上游凭据。"),
    "Instance.options": ("Keys written over the request body (`model` included).",
                         "覆盖请求体的键（包括 `model`）。"),
    "Instance.proxy": ("This instance's proxy; overrides the route's `proxy`.",
                       "该实例的代理；覆盖路由的 `proxy`。"),
    "Instance.tls": ("PEM files for TLS to this instance (CA bundle, client certificate).",
                     "连接该实例所用的 TLS PEM 文件（CA 证书包、客户端证书）。"),
    "Instance.override": ("Upstream URL override.", "上游 URL 覆盖。"),
    "Instance.checks": ("Active and passive health checks.", "主动与被动健康检查。"),
    "Instance.examples": ("Phrases this instance should serve (semantic routing).",
                          "该实例应当处理的示例语句（语义路由）。"),
    "Instance.negative_examples": ("Phrases it must not serve: a prompt closer to one of "
                                   "these than to any example is not a match.",
                                   "不应由它处理的语句：若提示词离其中某条比离任何示例都近，"
                                   "就不算匹配。"),
    "Instance.threshold": ("Lowest score that counts as a match; overrides the balancer's.",
                           "算作匹配的最低分；覆盖均衡器的阈值。"),
    "Instance.catchall": ("Serves prompts that match no instance.",
                          "处理没有匹配任何实例的提示词。"),
    "Instance.aliases": ("More names a client may send as `model` to get this instance "
                         "(besides its `options.model` and its name); listed by "
                         "`GET /v1/models`.",
                         "客户端可作为 `model` 发送以选中该实例的其他名字（除 `options.model` "
                         "和实例名之外）；会出现在 `GET /v1/models` 中。"),
    # Tls
    "Tls.ca_file": ("CA bundle that signs the upstream's certificate (instead of the "
                    "system store).", "签发上游证书的 CA 证书包（代替系统证书库）。"),
    "Tls.cert_file": ("Client certificate for mTLS upstreams.",
                      "mTLS 上游所需的客户端证书。"),
    "Tls.key_file": ("Key of the client certificate (when not in `cert_file`).",
                     "客户端证书的私钥（不在 `cert_file` 中时）。"),
    # Auth
    "Auth.header": ("Headers added to upstream requests.", "附加到上游请求的请求头。"),
    "Auth.query": ("Query parameters added to the upstream URL.", "附加到上游 URL 的查询参数。"),
    # Override
    "Override.endpoint": ("URL of the upstream (http or https): a bare host gets the "
                          "provider's API path; a base URL ending in its start (`.../v1`) "
                          "gets the rest (`/chat/completions`); any other path is used "
                          "as given.",
                          "上游 URL（http 或 https）：只有主机时补上提供方的 API 路径；"
                          "以该路径开头部分结尾的 base URL（`.../v1`）补上其余部分"
                          "（`/chat/completions`）；其他路径原样使用。"),
    # Checks
    "Checks.active": ("Background probes.", "后台探测。"),
    "Checks.passive": ("Failures of real requests.", "真实请求的失败统计。"),
    # ActiveChecks
    "ActiveChecks.type": ("Probe kind.", "探测方式。"),
    "ActiveChecks.timeout": ("Seconds before a probe counts as a timeout.",
                             "探测超时秒数。"),
    "ActiveChecks.concurrency": ("Probes of the route in flight at once (the smallest value "
                                 "among its instances applies).",
                                 "同一路由同时进行的探测数上限（取其各实例中的最小值）。"),
    "ActiveChecks.http_path": ("Path requested by http(s) probes.", "http(s) 探测请求的路径。"),
    "ActiveChecks.host": ("Host header of the probe.", "探测请求的 Host 头。"),
    "ActiveChecks.port": ("Port to probe instead of the instance's.", "代替实例端口的探测端口。"),
    "ActiveChecks.https_verify_certificate": ("Verify TLS on https probes.",
                                              "https 探测时校验证书。"),
    "ActiveChecks.req_headers": ("Extra probe headers as `Name: value` strings.",
                                 "附加的探测请求头，格式为 `Name: value`。"),
    "ActiveChecks.healthy": ("Rules for becoming healthy.", "恢复健康的规则。"),
    "ActiveChecks.unhealthy": ("Rules for becoming unhealthy.", "判为不健康的规则。"),
    # HealthyChecks
    "HealthyChecks.interval": ("Seconds between probes while healthy.",
                               "健康状态下的探测间隔（秒）。"),
    "HealthyChecks.successes": ("Successes in a row that mark it healthy.",
                                "连续成功多少次后判为健康。"),
    "HealthyChecks.http_statuses": ("Statuses that count as success.", "算作成功的状态码。"),
    # UnhealthyChecks
    "UnhealthyChecks.interval": ("Seconds between probes while unhealthy.",
                                 "不健康状态下的探测间隔（秒）。"),
    "UnhealthyChecks.http_failures": ("Failing statuses in a row that mark it unhealthy.",
                                      "连续出现失败状态码多少次后判为不健康。"),
    "UnhealthyChecks.tcp_failures": ("Connection failures in a row that mark it unhealthy.",
                                     "连续连接失败多少次后判为不健康。"),
    "UnhealthyChecks.timeouts": ("Timeouts in a row that mark it unhealthy.",
                                 "连续超时多少次后判为不健康。"),
    "UnhealthyChecks.http_statuses": ("Statuses that count as failure.", "算作失败的状态码。"),
    # PassiveChecks
    "PassiveChecks.failures": ("Failures within `window` that trip the breaker.",
                               "`window` 内达到该失败次数即熔断。"),
    "PassiveChecks.window": ("Sliding window in seconds.", "滑动窗口（秒）。"),
    "PassiveChecks.cooldown": ("Seconds out of rotation before one probe request.",
                               "熔断后等待多少秒再放行一个探测请求。"),
    "PassiveChecks.http_statuses": ("Statuses that count as failures; transport errors "
                                    "always do.",
                                    "计为失败的状态码；传输错误总是计为失败。"),
    # Balancer
    "Balancer.algorithm": ("Weighted round-robin, consistent hash or semantic.",
                           "加权轮询、一致性哈希或语义路由。"),
    "Balancer.hash_on": ("What `chash` hashes.", "`chash` 的哈希依据。"),
    "Balancer.key": ("Header, cookie or variable name (`vars_combinations`: a template "
                     "such as `$remote_addr$http_x_user`).",
                     "请求头、cookie 或变量名（`vars_combinations` 为模板，如 "
                     "`$remote_addr$http_x_user`）。"),
    "Balancer.threshold": ("Default lowest score that counts as a match, between -1 and 1; "
                           "or `auto`: each instance without its own threshold learns one "
                           "from its examples and a shipped background set (see "
                           "accurate-mode.md).",
                           "算作匹配的默认最低分，取值 -1 到 1；或 `auto`：没有自己阈值的"
                           "实例根据自身示例和随包附带的背景语句集自动学习阈值（见 "
                           "accurate-mode.md）。"),
    "Balancer.expose_scores": ("Send the `X-AI-Semantic-*` headers. For tuning only.",
                               "发送 `X-AI-Semantic-*` 响应头。仅用于调试。"),
    "Balancer.aggregation": ("How an instance's example cosines become its score: the best "
                             "one (`max`), the mean of the best k (`top_k_mean`), the mean "
                             "of the best and the centroid (`max_centroid`), or thirds of "
                             "the best, the centroid and the centroid of the k nearest "
                             "examples (`max_local_centroid`).",
                             "如何把一个实例各示例的余弦值合成为它的得分：最高的一个"
                             "（`max`）、最高 k 个的平均（`top_k_mean`）、最高值与质心的"
                             "平均（`max_centroid`），或最高值、质心与最近 k 个示例的质心"
                             "各占三分之一（`max_local_centroid`）。"),
    "Balancer.k": ("Examples averaged by `top_k_mean`; nearest examples whose centroid "
                   "`max_local_centroid` uses.",
                   "`top_k_mean` 平均的示例数；`max_local_centroid` 取其质心的最近示例数。"),
    "Balancer.min_margin": ("Send near-ties (winner leads by less) to the catchall; 0 = off.",
                            "领先第二名不足该值时交给兜底实例；0 表示关闭。"),
    "Balancer.center": ("Subtract the mean example direction before comparing; rescales "
                        "scores, so recalibrate thresholds.",
                        "比较前减去示例的平均方向；会改变分数尺度，需要重新校准阈值。"),
    "Balancer.background_weight": ("Take this times the prompt's closeness to the shipped "
                                   "background set off every score, so everyday talk must "
                                   "score higher to clear a threshold (not used by the strong "
                                   "stage of model: accurate); "
                                   "0 = off. Recalibrate after.",
                                   "从每个分数中减去该值乘以提示与内置背景集的接近度，使日常闲聊"
                                   "需要更高分数才能过阈值（model: accurate 的强模型阶段不使用）；0 表示关闭。"
                                   "修改后需重新校准。"),
    "Balancer.shadow": ("A semantic table tried on live traffic, off the request path; it "
                        "never serves (semantic-routing.md, Shadow routing).",
                        "在真实流量上试运行的语义路由表，不在请求路径上执行，从不服务请求"
                        "（见 semantic-routing.md 的影子路由一节）。"),
    # Shadow
    "Shadow.threshold": ("The shadow's default threshold; default: the route's (semantic) "
                         "or 0.", "影子表的默认阈值；缺省取路由自己的（语义路由）或 0。"),
    "Shadow.thresholds": ("Per-instance thresholds, by instance name.",
                          "逐实例阈值，以实例名为键。"),
    "Shadow.examples": ("Examples by instance name; required unless the route is semantic "
                        "(then its own examples).",
                        "以实例名为键的示例；路由不是语义路由时必填（否则取路由自己的示例）。"),
    "Shadow.catchall": ("Instance the shadow picks when nothing clears; default: the route's "
                        "catchall, else the first instance without shadow examples.",
                        "没有实例过阈值时影子表选择的实例；缺省取路由的兜底实例，否则取第一个"
                        "没有影子示例的实例。"),
    "Shadow.embeddings": ("Embedding model of the shadow; required unless the route is "
                          "semantic.", "影子表的向量模型；路由不是语义路由时必填。"),
    "Shadow.min_margin": ("As `balancer.min_margin`, for the shadow.",
                          "与 `balancer.min_margin` 相同，作用于影子表。"),
    "Balancer.context": ("`last_user` routes on the last user message (APISIX); "
                         "`conversation` keeps the conversation's instance unless the new "
                         "turn clearly belongs elsewhere.",
                         "`last_user` 按最后一条用户消息路由（与 APISIX 相同）；`conversation` "
                         "除非新一轮明显属于别处，否则沿用对话已在的实例。"),
    "Balancer.conversation": ("Settings of `context: conversation`.",
                              "`context: conversation` 的设置。"),
    "Conversation.max_turns": ("User turns looked at, the newest included.",
                               "参与决策的用户轮次数（含最新一轮）。"),
    "Conversation.switch_margin": ("A turn moves the conversation only if it scores its own "
                                   "pick this much above the current instance.",
                                   "新一轮对自己首选实例的得分须比当前实例高出该值才会切换。"),
    "Conversation.followup_margin": ("A turn leads only if it scores its own pick this much "
                                     "above the topic-free follow-ups semproxy ships (scored "
                                     "as one more instance); below, it is a follow-up.",
                                     "一轮只有在对自己首选实例的得分比 semproxy 自带的无主题"
                                     "追问语句（作为一个额外实例打分）高出该值时才能主导；"
                                     "否则视为追问。"),
    "Conversation.cue_margin": ("Added to `followup_margin` for a turn whose wording points "
                                "back at the conversation (\"that\", \"too\", \"instead\", a "
                                "leading \"and\"); 0 turns the cue off.",
                                "措辞指回对话的一轮（“that”“too”“instead”、以“and”开头等）"
                                "须在 `followup_margin` 之上再高出该值；0 表示关闭。"),
    "Conversation.max_turn_chars": ("Longer user turns (pasted logs, files) are skipped.",
                                    "超过该长度的用户轮次（粘贴的日志、文件）被跳过。"),
    # Embeddings
    "Embeddings.provider": ("`local` (in-process model) or an HTTP provider with an "
                            "embeddings API.",
                            "`local`（进程内模型）或带 embeddings 接口的 HTTP 提供方。"),
    "Embeddings.model": ("Model name sent to the provider. With `local`: `wordllama` or "
                         "`fast` (the default), `accurate` (wordllama, with an int8 MiniLM "
                         "re-scoring ambiguous prompts; optional extra, see "
                         "accurate-mode.md) or `all-MiniLM-L6-v2` (optional package, "
                         "~100x slower; see semantic-routing.md).",
                         "发送给提供方的模型名。`local` 时：`wordllama` 或 `fast`（默认）、"
                         "`accurate`（wordllama 先判，含糊的提示再由 int8 MiniLM 重新打分；"
                         "可选依赖，见 accurate-mode.md）或 `all-MiniLM-L6-v2`（可选包，"
                         "慢约 100 倍；见 semantic-routing.md）。"),
    "Embeddings.auth": ("Credentials for the embeddings endpoint.", "embeddings 接口的凭据。"),
    "Embeddings.override": ("Embeddings URL override.", "embeddings URL 覆盖。"),
    "Embeddings.timeout": ("Embedding call timeout in ms.", "embedding 调用超时（毫秒）。"),
    "Embeddings.ssl_verify": ("Verify TLS of the embeddings endpoint.",
                              "校验 embeddings 接口的 TLS 证书。"),
    "Embeddings.proxy": ("Proxy for the embeddings endpoint, as the route's `proxy`.",
                         "embeddings 接口的代理，含义同路由的 `proxy`。"),
    "Embeddings.tls": ("PEM files for TLS to the embeddings endpoint.",
                       "连接 embeddings 接口所用的 TLS PEM 文件。"),
    "Embeddings.cache_size": ("Prompt vectors kept in the LRU cache; 0 disables it.",
                              "LRU 缓存保存的提示词向量数；0 表示关闭。"),
    "Embeddings.breaker_failures": ("Consecutive failures that open the breaker.",
                                    "连续失败多少次后断路器打开。"),
    "Embeddings.breaker_cooldown": ("Seconds the breaker stays open before one probe.",
                                    "断路器打开后等待多少秒再放行一次探测。"),
    # SemanticOpts
    "SemanticOpts.threshold": ("Lowest score that counts as a match.", "算作匹配的最低分。"),
    "SemanticOpts.debugging": ("Send the score headers, plus "
                               "`X-AI-Semantic-Picked-Instance`.",
                               "发送打分响应头，并额外发送 `X-AI-Semantic-Picked-Instance`。"),
    "SemanticOpts.fallback": ("Name of the catchall instance.", "兜底实例的名称。"),
    "SemanticOpts.embeddings": ("Embedding model.", "向量模型。"),
    # Logging
    "Logging.summaries": ("Keep this route's access log line (model, status, latency, tokens) "
                          "even when the gateway runs with --no-access-log.",
                          "即使网关以 --no-access-log 运行，也保留该路由的访问日志行"
                          "（模型、状态、延迟、token 数）。"),
    "Logging.payloads": ("Add request and response bodies (first 4 KiB) to the access log.",
                         "在访问日志中加入请求体和响应体（前 4 KiB）。"),
    # AIProxy
    "AIProxy.provider": ("Provider module; also the instance name.",
                         "提供方；同时作为实例名。"),
    "AIProxy.auth": ("Credentials for the upstream.", "上游凭据。"),
    "AIProxy.options": ("Keys written over the request body.", "覆盖请求体的键。"),
    "AIProxy.override": ("Upstream URL override.", "上游 URL 覆盖。"),
    "AIProxy.timeout": ("Upstream timeout in ms.", "上游超时（毫秒）。"),
    "AIProxy.keepalive": ("Reuse upstream connections.", "复用上游连接。"),
    "AIProxy.keepalive_timeout": ("Idle time in ms before a pooled connection closes.",
                                  "连接池中空闲连接关闭前的时间（毫秒）。"),
    "AIProxy.keepalive_pool": ("Idle connections kept open per upstream origin; more are "
                               "closed as they come back to the pool. Unset: all are "
                               "kept (APISIX's default is 30).",
                               "每个上游源站保留的空闲连接数；超出的连接在归还连接池时关闭。"
                               "不设置时全部保留（APISIX 的默认值是 30）。"),
    "AIProxy.ssl_verify": ("Verify upstream TLS certificates.", "校验上游 TLS 证书。"),
    "AIProxy.attempt_timeout": ("Deadline in ms for one whole non-streamed upstream attempt "
                                  "(headers and body); unset: `timeout`. A stream gets it for "
                                  "its headers, then `timeout` per event.",
                                  "一次非流式上游尝试（响应头加响应体）的总时限（毫秒）；不设则"
                                  "等于 `timeout`。流式响应的响应头受它约束，之后每个事件受 "
                                  "`timeout` 约束。"),
    "AIProxy.max_resp_body_size": ("Largest non-streamed upstream body in bytes, after "
                                     "gzip/deflate decoding; larger: 502, connection dropped.",
                                     "非流式上游响应体上限（字节，按 gzip/deflate 解码后计）；"
                                     "超过返回 502 并断开该连接。"),
    "AIProxy.max_sse_event_size": ("Largest single SSE event in bytes; a larger one ends "
                                     "the stream with an error event.",
                                     "单个 SSE 事件上限（字节）；超过则以错误事件结束该流。"),
    "AIProxy.max_connections_per_origin": ("Open connections per upstream origin; further "
                                             "requests wait in a queue.",
                                             "每个上游源站的最大连接数；更多请求排队等待。"),
    "AIProxy.proxy": ("HTTP proxy URL for upstream calls (`http://user:pw@host:port`); `\"\"` "
                        "means none. Unset: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, read at "
                        "config load. https upstreams go through CONNECT.",
                        "上游调用使用的 HTTP 代理 URL（`http://user:pw@host:port`）；`\"\"` "
                        "表示不用代理。不设则在加载配置时读取 `HTTPS_PROXY`/`HTTP_PROXY`/"
                        "`NO_PROXY`。https 上游经 CONNECT 隧道。"),
    "AIProxy.max_req_body_size": ("Largest request body in bytes.", "请求体上限（字节）。"),
    "AIProxy.logging": ("Access-log options.", "访问日志选项。"),
    "AIProxy.debug_headers": ("Send `X-AI-Instance`.", "发送 `X-AI-Instance`。"),
    "AIProxy.strict_models": ("A `model` the instance does not serve gets 404 "
                              "`model_not_found`.",
                              "实例不提供的 `model` 返回 404 `model_not_found`。"),
    "Plugins.cors": ("Browser access from other origins (APISIX `cors`).",
                     "允许其他源的浏览器访问（APISIX `cors`）。"),
    # Cors
    "Cors.allow_origins": ("Origins allowed, comma-separated (`scheme://host:port`); `*` any "
                           "origin (not with credentials), `**` any origin even then.",
                           "允许的源，逗号分隔（`scheme://host:port`）；`*` 表示任意源（不可与"
                           "凭据同用），`**` 表示即使带凭据也允许任意源。"),
    "Cors.allow_methods": ("Methods allowed, comma-separated; `*` any, `**` every method.",
                           "允许的方法，逗号分隔；`*` 任意，`**` 全部方法。"),
    "Cors.allow_headers": ("Request headers allowed, comma-separated; `*` any, `**` those "
                           "the preflight asks for.",
                           "允许的请求头，逗号分隔；`*` 任意，`**` 即预检请求所要求的那些。"),
    "Cors.expose_headers": ("Response headers a page may read, comma-separated; `*` any.",
                            "页面可读取的响应头，逗号分隔；`*` 任意。"),
    "Cors.max_age": ("Seconds a browser may keep a preflight's answer; -1: not at all.",
                     "浏览器可缓存预检结果的秒数；-1 表示不缓存。"),
    "Cors.allow_credential": ("Let pages send cookies and credentials; then no `*` "
                              "anywhere.", "允许页面携带 cookie 等凭据；此时各项都不能用 `*`。"),
    "Cors.allow_origins_by_regex": ("Regular expressions an origin must match in full; "
                                    "when given they decide instead of `allow_origins`.",
                                    "源必须完整匹配的正则表达式；配置后由它们决定，"
                                    "`allow_origins` 不再生效。"),
    # KeyAuth
    "KeyAuth.header": ("Header carrying the key (`Authorization: Bearer` also works).",
                       "携带 key 的请求头（`Authorization: Bearer` 同样有效）。"),
    "KeyAuth.query": ("Query parameter carrying the key.", "携带 key 的查询参数。"),
    # Consumers
    "Consumer.username": ("Consumer name, used in logs and by `hash_on: consumer`.",
                          "consumer 名称，用于日志和 `hash_on: consumer`。"),
    "Consumer.plugins": ("The consumer's credentials.", "consumer 的凭据。"),
    "ConsumerPlugins.key_auth": ("The key-auth credential.", "key-auth 凭据。"),
    "ConsumerKey.key": ("The secret key; only its sha256 is kept after load.",
                        "密钥；加载后只保留其 sha256。"),
}

from config_reference_cache import CACHE_NOTES  # noqa: E402
from config_reference_governance import GOVERNANCE_NOTES  # noqa: E402

NOTES.update(GOVERNANCE_NOTES)
NOTES.update(CACHE_NOTES)
