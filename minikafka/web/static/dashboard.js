// minikafka dashboard: polls GET /api/state and GET /api/events?since= every 500 ms
// and redraws; the record browser asks GET /api/records when told to. Read-only.
// /api/state is asked for one page of partition rows (the topic filter, internal topics or
// not, problem partitions first) and one page of topics: the summary counts every
// partition, so the page stays small however many partitions the cluster has.
// Plain JavaScript, no dependencies, nothing fetched from elsewhere.
"use strict";

const POLL_MS = 500;
const REQUEST_TIMEOUT_MS = 4000;
const MAX_EVENTS = 1000;
// Events shown by default; the others (role changes seen by one broker, ISR writes,
// startup) appear with "show every event".
const KEY_KINDS = new Set([
  "controller_elected", "controller_resigned", "controller_fenced", "zk_session_lost",
  "broker_registered", "broker_lost", "broker_bounced", "controlled_shutdown",
  "leader_elected", "unclean_election", "partition_offline", "replica_offline", "leader_rebalance",
  "isr_shrink", "isr_expand", "isr_shrink_controller",
  "truncate", "recovered", "topic_created", "topic_deleted", "reassign_start", "reassign_done",
  // the transaction coordinator's (each partition's COMMIT/ABORT markers are minor)
  "txn_begin", "txn_commit", "txn_abort", "txn_fenced", "txn_timed_out",
]);
// Key events that come with every transaction: over MAX_EVENTS they go before the others.
const ROUTINE_KINDS = new Set(["txn_begin", "txn_commit"]);
// How an event kind is named on the timeline (otherwise its name with spaces).
const KIND_LABELS = {
  txn_begin: "transaction begun", txn_commit: "transaction committed", txn_abort: "transaction aborted",
  txn_fenced: "producer fenced", txn_timed_out: "transaction timed out",
  txn_commit_marker: "COMMIT marker written", txn_abort_marker: "ABORT marker written",
};

const $ = (id) => document.getElementById(id);
// Kafka's internal topics (__consumer_offsets, __transaction_state): after the others, hidden
// behind "show internal topics", and their events only with "show every event"
const isInternal = (topic) => typeof topic === "string" && topic.startsWith("__");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.setAttribute("style", v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

async function getJSON(url) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
  try {
    const resp = await fetch(url, { cache: "no-store", signal: ctl.signal });
    if (!resp.ok) {
      // the JSON routes answer errors as {error, message}: keep them for the page
      let body = null;
      try { body = await resp.json(); } catch (e) { body = null; }
      const err = new Error(body && body.message ? body.message : `${url}: HTTP ${resp.status}`);
      err.status = resp.status;
      err.kafkaError = body && body.error;
      throw err;
    }
    return await resp.json();
  } finally {
    clearTimeout(timer);
  }
}

function rate(x, unit) {
  if (x === null || x === undefined) return "–";
  const units = unit === "B" ? ["B", "KB", "MB", "GB"] : [""];
  let v = x, i = 0;
  while (unit === "B" && v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  const n = v >= 100 || v === 0 ? v.toFixed(0) : v.toFixed(1);
  return unit === "B" ? `${n} ${units[i]}/s` : `${n} rec/s`;
}

function clock(ts) {
  const d = new Date(ts * 1000);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function setConnection(ok, message) {
  const c = $("connection");
  c.dataset.state = ok ? "ok" : "error";
  c.textContent = ok ? "live" : message;
}

// ------------------------------------------------------------------ state

let lastStateKey = "";
// what the page asks /api/state for: the filter and the pages, from the controls
let rowOffset = 0;
let topicOffset = 0;
const TOPIC_PAGE = 50;

function stateQuery() {
  const q = new URLSearchParams({
    internal: $("show-internal").checked ? "1" : "0",
    problems: $("problems-only").checked ? "only" : "first",
    offset: rowOffset, limit: $("page-size").value,
    topic_offset: topicOffset, topic_limit: TOPIC_PAGE,
    configs: [...openTopics].sort().join(","),  // the topics whose every setting is shown
  });
  const filter = $("topic-filter").value.trim();
  if (filter) q.set("topic", filter);
  return q.toString();
}

const count = (n, what) => `${n.toLocaleString("en")} ${what}${n === 1 ? "" : "s"}`;

function renderPager(page) {
  const size = Number($("page-size").value);
  const pager = $("partition-pager");
  pager.dataset.offset = page.offset;
  pager.dataset.matching = page.matching;
  pager.dataset.problems = page.matching_problems;
  const last = Math.min(page.matching, page.offset + size);
  let text = page.matching ? `${(page.offset + 1).toLocaleString("en")}–${last.toLocaleString("en")} of ` +
    count(page.matching, page.problems === "only" ? "problem partition" : "partition") : "no partition matches";
  if (page.problems !== "only" && page.matching_problems) text += ` (${page.matching_problems.toLocaleString("en")} with problems first)`;
  $("page-info").textContent = text;
  $("page-prev").disabled = page.offset <= 0;
  $("page-next").disabled = page.offset + size >= page.matching;
  const tp = $("topic-pager");
  tp.dataset.offset = page.topic_offset;
  tp.dataset.matching = page.topics_matching;
  const tlast = Math.min(page.topics_matching, page.topic_offset + TOPIC_PAGE);
  $("topic-page-info").textContent = page.topics_matching
    ? `topics ${page.topic_offset + 1}–${tlast} of ${page.topics_matching.toLocaleString("en")}` : "";
  $("topic-prev").disabled = page.topic_offset <= 0;
  $("topic-next").disabled = page.topic_offset + TOPIC_PAGE >= page.topics_matching;
  tp.hidden = page.topics_matching <= TOPIC_PAGE && page.topic_offset === 0;
}

function renderState(s) {
  $("serving-broker").textContent = s.serving_broker;
  $("cluster-id").textContent = s.cluster_id || "?";
  $("updated").textContent = clock(s.ts);
  document.body.dataset.servingBroker = s.serving_broker;

  renderTopics(s.topics || []);
  updateRecordChoices(s.topic_names || []);
  if (s.page) renderPager(s.page);

  const key = JSON.stringify({ c: s.controller, b: s.brokers, p: s.partitions, g: s.groups,
                               t: (s.transactions || {}).open, z: s.zookeeper });
  if (key === lastStateKey) return;
  lastStateKey = key;

  const ctl = $("controller");
  ctl.dataset.controllerId = s.controller.id;
  ctl.dataset.controllerEpoch = s.controller.epoch;
  $("controller-id").textContent = s.controller.id >= 0
    ? `broker ${s.controller.id}${s.controller.alive ? "" : " (gone, election pending)"}` : "none elected";
  $("controller-epoch").textContent = s.controller.epoch;

  const list = $("brokers");
  list.replaceChildren(...s.brokers.map(renderBroker));
  $("zookeeper-servers").replaceChildren(...((s.zookeeper || {}).servers || []).map((z) =>
    el("span", { class: `zk-server zk-${z.mode}`, "data-mode": z.mode, "data-endpoint": `${z.host}:${z.port}`,
                 text: `${z.host}:${z.port} ${z.mode}` })));

  // the partitions the table shows: internal topics' counts only while they are shown
  const sum = $("summary");
  const hidden = $("show-internal").checked ? null : s.summary.internal;
  const shown = (k) => s.summary[k] + (hidden || !s.summary.internal ? 0 : s.summary.internal[k]);
  sum.dataset.partitions = shown("partitions");
  sum.dataset.underReplicated = shown("under_replicated");
  sum.dataset.underMinIsr = shown("under_min_isr");
  sum.dataset.offline = shown("offline");
  $("sum-partitions").textContent = shown("partitions");
  $("sum-urp").textContent = shown("under_replicated");
  $("sum-umi").textContent = shown("under_min_isr");
  $("sum-offline").textContent = shown("offline");

  const alive = new Set(s.live_brokers);
  const body = $("partition-rows");
  const internal = s.summary.internal ? s.summary.internal.partitions : 0;
  const internalCount = $("internal-count");
  internalCount.dataset.hidden = internal;
  internalCount.textContent = internal ? `(${internal} partition${internal === 1 ? "" : "s"})` : "(none yet)";
  if (!s.partitions.length) {
    const filtered = s.page && (s.page.topic || s.page.problems === "only");
    body.replaceChildren(el("tr", { class: "empty" }, filtered
      ? el("td", { colspan: 10 }, s.page.problems === "only"
        ? `no offline or under-replicated partition${s.page.topic ? " among the topics the filter matches" : ""}`
        : "no partition matches the filter")
      : el("td", { colspan: 10 }, "no topics yet: create one with ", el("code", { text: "minikafka topics create" }))));
  } else {
    body.replaceChildren(...s.partitions.map((p) => renderPartition(p, alive)));
  }

  renderTransactions(s.transactions || { open: [], idle_ids: 0 });

  const groups = $("group-rows");
  if (!(s.groups || []).length) {
    groups.replaceChildren(el("tr", { class: "empty" },
      el("td", { colspan: 6 }, "no consumer groups yet: try ", el("code", { text: "minikafka consume TOPIC --group G" }))));
  } else {
    groups.replaceChildren(...s.groups.map(renderGroup));
  }
}

function shortId(memberId) {
  // client-id-uuid: keep the client id and the first block of the uuid
  const m = /^(.*)-([0-9a-f]{8})-[0-9a-f-]{27}$/.exec(memberId || "");
  return m ? `${m[1]}-${m[2]}` : (memberId || "-");
}

function renderGroup(g) {
  const members = g.members.length ? g.members.map((m) => el("div", {
    class: "member" + (m.leader ? " leader" : ""), title: `${m.member_id} (${m.client_id} at ${m.host})`,
    "data-member-id": m.member_id,
  }, `${shortId(m.member_id)}${m.leader ? " ★" : ""}: ${m.partitions.join(", ") || "nothing"}`))
    : [el("span", { class: "muted", text: "no members" })];
  const lag = g.partitions.map((p) => el("div", {
    class: "lag", title: `committed ${p.committed ?? "-"}, high watermark ${p.high_watermark}`,
  }, `${p.topic}-${p.partition}: ${p.lag ?? "-"}`));
  return el("tr", {
    class: "group", id: `g-${g.group}`, "data-group": g.group, "data-state": g.state,
    "data-generation": g.generation, "data-leader": g.leader, "data-members": g.members.length,
  },
    el("td", { class: "topic" }, g.group, el("div", { class: "muted" }, `coordinator broker ${g.coordinator}`)),
    el("td", {}, g.state),
    el("td", { class: "num" }, g.generation),
    el("td", { title: g.leader }, g.leader ? shortId(g.leader) : "-"),
    el("td", {}, ...members),
    el("td", {}, ...lag),
  );
}

function duration(ms) {
  if (ms === null || ms === undefined) return "-";
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 120_000 ? `${Math.round(ms / 1000)} s`
    : `${Math.round(ms / 60_000)} min`;
}

function renderTransactions(t) {
  const body = $("txn-rows");
  const section = $("transactions");
  section.dataset.open = t.open.length;
  $("txn-idle").textContent = t.idle_ids
    ? `${t.idle_ids} transactional id${t.idle_ids === 1 ? "" : "s"} with none open` : "";
  if (!t.open.length) {
    body.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 6 },
      "no open transaction: producers with a ", el("code", { text: "transactional_id" }), " show here between ",
      el("code", { text: "begin_transaction()" }), " and the commit or abort")));
    return;
  }
  body.replaceChildren(...t.open.map((x) => el("tr", {
    class: "txn", "data-transactional-id": x.transactional_id, "data-state": x.state,
    "data-producer-id": x.producer_id, "data-producer-epoch": x.producer_epoch, "data-coordinator": x.coordinator,
    "data-partitions": x.partitions.join(","),
  },
    el("td", { class: "topic" }, x.transactional_id,
      el("div", { class: "muted" }, `coordinator broker ${x.coordinator}`)),
    el("td", {}, x.state),
    el("td", { class: "num" }, `${x.producer_id}`, el("div", { class: "muted" }, `epoch ${x.producer_epoch}`)),
    el("td", { class: "num", title: x.start_ms >= 0 ? `began ${new Date(x.start_ms).toISOString()}` : null },
      duration(x.open_ms)),
    el("td", { class: "num" }, duration(x.timeout_ms)),
    el("td", { class: "txn-partitions" }, ...(x.partitions.length
      ? x.partitions.map((tp) => el("span", { class: isInternal(tp) ? "tp internal" : "tp", text: tp }))
      : [el("span", { class: "muted", text: "none yet" })])),
  )));
}

function renderBroker(b) {
  const badges = [];
  badges.push(b.alive ? el("span", { class: "badge alive", text: "alive" }) : el("span", { class: "badge dead", text: "dead" }));
  if (b.alive && !b.responding) badges.push(el("span", { class: "badge slow", text: "not responding", title: b.error }));
  if (b.controller) badges.push(el("span", { class: "badge ctl", text: "controller" }));
  if (b.serving) badges.push(el("span", { class: "badge you", text: "serving this page" }));
  if (b.zookeeper_session && b.zookeeper_session !== "connected") {
    badges.push(el("span", { class: "badge zk-session", text: `ZooKeeper ${b.zookeeper_session}`,
                             title: "its ZooKeeper session: suspended = disconnected, lost = expired" }));
  }
  return el("li", {
    class: "broker", id: `broker-${b.id}`, "data-broker-id": b.id, "data-alive": b.alive,
    "data-controller": b.controller, "data-responding": b.responding, "data-serving": b.serving,
    "data-zookeeper-session": b.zookeeper_session || "",
  },
    el("div", { class: "name" }, `broker ${b.id}`),
    el("div", { class: "endpoint" }, b.host ? `${b.host}:${b.port}` : "endpoint unknown"),
    ...(b.kafka ? [el("div", { class: "endpoint kafka", title: "Kafka binary protocol (kcat, Kafka clients)" },
                      `kafka ${b.kafka}`)] : []),
    el("div", { class: "badges" }, ...badges),
    el("div", { class: "stats" }, `leads ${b.leader_of} · hosts ${b.replicas} replicas`),
  );
}

function idList(ids, alive, leader) {
  const span = el("span", { class: "idlist" });
  ids.forEach((id, i) => {
    if (i) span.appendChild(document.createTextNode(","));
    const cls = ["id"];
    if (!alive.has(id)) cls.push("dead");
    if (id === leader) cls.push("leader");
    span.appendChild(el("span", { class: cls.join(" "), text: id }));
  });
  return span;
}

function renderPartition(p, alive) {
  const flags = [];
  if (p.offline) flags.push(el("span", { class: "flag offline", text: "OFFLINE" }));
  else if (p.under_replicated) flags.push(el("span", { class: "flag urp", text: "UNDER-REPLICATED" }));
  if (p.under_min_isr) {
    flags.push(el("span", {
      class: "flag umi", text: "UNDER MIN ISR",
      title: `ISR ${p.isr.length} < min.insync.replicas ${p.min_insync_replicas}: acks=all produces fail with NOT_ENOUGH_REPLICAS`,
    }));
  }
  const r = p.rates || {};
  const leaderCell = p.leader >= 0 ? String(p.leader) : "none";
  return el("tr", {
    class: isInternal(p.topic) ? "partition internal" : "partition", id: `p-${p.topic}-${p.partition}`,
    "data-topic": p.topic, "data-partition": p.partition, "data-leader": p.leader,
    "data-leader-epoch": p.leader_epoch, "data-replicas": p.replicas.join(","), "data-isr": p.isr.join(","),
    "data-hw": p.high_watermark, "data-lso": p.last_stable_offset ?? "", "data-leo": p.log_end_offset,
    "data-log-start": p.log_start_offset, "data-open-transactions": (p.ongoing_transactions || []).length,
    "data-under-replicated": p.under_replicated, "data-offline": p.offline,
    "data-under-min-isr": p.under_min_isr === null ? "unknown" : p.under_min_isr,
    "data-min-isr": p.min_insync_replicas ?? "",
  },
    el("td", { class: "topic" }, p.topic,
      el("button", { type: "button", class: "browse", title: "show its last records below", "data-topic": p.topic,
                     "data-partition": p.partition, text: "records" }),
      flags.length ? el("span", { class: "flags" }, ...flags) : null,
      (p.producers || []).length ? el("div", {
        class: "producers",
        title: p.producers.map((x) => `producer ${x.producer_id} epoch ${x.producer_epoch}: ` +
          `last sequence ${x.last_sequence} at offset ${x.last_offset}`).join("\n"),
      }, `${p.producers.length} idempotent producer${p.producers.length > 1 ? "s" : ""}`) : null,
      (p.ongoing_transactions || []).length ? el("div", {
        class: "open-txns",
        title: p.ongoing_transactions.map((x) => `producer ${x.producer_id}: open since offset ${x.first_offset}`)
          .join("\n"),
      }, `${p.ongoing_transactions.length} open transaction${p.ongoing_transactions.length > 1 ? "s" : ""}`) : null),
    el("td", { class: "num" }, p.partition),
    el("td", { class: "num leader" }, leaderCell),
    el("td", { class: "num epoch" }, p.leader_epoch),
    el("td", { class: "ids replicas-ar" }, idList(p.replicas, alive, p.leader)),
    el("td", { class: "ids isr", title: `ISR as reported by ${p.isr_source}` }, idList(p.isr, alive, p.leader)),
    el("td", {
      class: "num hw",
      title: p.size_bytes >= 0 ? `leader's log: start offset ${p.log_start_offset}, ${p.size_bytes} bytes in ` +
        `${p.segments} segment${p.segments === 1 ? "" : "s"}` : "leader unknown",
    }, p.high_watermark >= 0 ? p.high_watermark : "?",
      lsoBehind(p) ? el("div", {
        class: "lso", text: `LSO ${p.last_stable_offset}`,
        title: `last stable offset ${p.last_stable_offset}: a transaction is open from there; ` +
          "read_committed consumers read only below it",
      }) : null,
      p.log_start_offset > 0 ? el("div", { class: "logstart", text: `start ${p.log_start_offset}` }) : null),
    el("td", {}, renderReplicaBars(p)),
    el("td", {
      class: "num rate produce", "data-records-per-s": r.produce_records_per_s ?? "",
      "data-bytes-per-s": r.produce_bytes_per_s ?? "",
    }, rate(r.produce_records_per_s, "rec"), el("div", { class: "bytes" }, rate(r.produce_bytes_per_s, "B"))),
    el("td", {
      class: "num rate fetch", "data-records-per-s": r.fetch_records_per_s ?? "",
      "data-bytes-per-s": r.fetch_bytes_per_s ?? "",
    }, rate(r.fetch_records_per_s, "rec"), el("div", { class: "bytes" }, rate(r.fetch_bytes_per_s, "B"))),
  );
}

// ------------------------------------------------------------------ topics and configs

let lastTopicsKey = "";
const openTopics = new Set();  // topics whose effective values the reader opened

function renderTopics(topics) {
  const key = JSON.stringify(topics);
  if (key === lastTopicsKey) return;
  lastTopicsKey = key;
  const body = $("topic-rows");
  if (!topics.length) {
    body.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 6 },
      $("topic-filter").value.trim() ? "no topic matches the filter" : "no topics yet")));
    return;
  }
  body.replaceChildren(...topics.map(renderTopic));
}

// A setting's name that may break after its dots (<wbr>), so an opened list of settings fits its panel.
function dotted(name) {
  const parts = name.split(".");
  return parts.flatMap((part, i) => (i < parts.length - 1 ? [`${part}.`, el("wbr", {})] : [part]));
}

function renderTopic(t) {
  // every setting is sent only for the topics whose list is open (the page names them)
  const entries = t.configs || [];
  const overrides = Object.entries(t.overrides || {}).map(([name, value]) => ({ name, value }));
  const details = el("details", { class: "configs", "data-topic": t.topic },
    el("summary", {}, t.settings ? `${t.settings} settings` : "not known yet"),
    openTopics.has(t.topic) && !t.configs ? el("div", { class: "muted", text: "reading…" }) : null,
    el("table", { class: "config-table" }, ...entries.map((c) => el("tr", {
      class: `config${c.source === "topic" ? " is-override" : ""}`,
      "data-config": c.name, "data-value": c.value ?? "", "data-source": c.source,
    }, el("td", { class: "name" }, ...dotted(c.name)), el("td", { class: "value", text: c.value ?? "null" }),
      el("td", { class: "source muted", text: c.source })))));
  if (openTopics.has(t.topic)) details.open = true;
  details.addEventListener("toggle", () => {
    if (details.open === openTopics.has(t.topic)) return;  // a redraw, not the reader
    if (details.open) openTopics.add(t.topic); else openTopics.delete(t.topic);
    if (details.open && !t.configs) changed(false);  // its settings, asked for at once
  });
  const problems = [];
  if (t.offline) problems.push(el("span", { class: "flag offline", text: `${t.offline} offline` }));
  if (t.under_replicated) problems.push(el("span", { class: "flag urp", text: `${t.under_replicated} under-replicated` }));
  if (t.under_min_isr) problems.push(el("span", { class: "flag umi", text: `${t.under_min_isr} under min ISR` }));
  const leaders = Object.entries(t.leaders || {});
  return el("tr", {
    class: "topic", "data-topic": t.topic, "data-partitions": t.partitions,
    "data-under-min-isr": t.under_min_isr, "data-offline": t.offline ?? 0,
    "data-under-replicated": t.under_replicated ?? 0,
    "data-leaders": leaders.map(([b, n]) => `${b}:${n}`).join(","),
  },
    el("td", { class: "topic" }, t.topic,
      el("button", { type: "button", class: "only", title: "show only this topic's partitions", "data-topic": t.topic,
                     text: "partitions" }),
      problems.length ? el("div", { class: "problems" }, ...problems) : null,
      el("div", { class: "leaders muted", title: "partitions led by each broker" },
        leaders.length ? `leaders: ${leaders.map(([b, n]) => `b${b} ${n}`).join(" · ")}` : "no live leader"),
      t.topic_id ? el("div", { class: "topic-id muted", title: "topic id (KIP-516)", text: t.topic_id }) : null,
      t.config_error ? el("div", { class: "config-error", text: `configs: ${t.config_error}` }) : null),
    el("td", { class: "num" }, t.partitions),
    el("td", { class: "num" }, t.replication_factor),
    el("td", { class: "num min-isr" }, t.min_insync_replicas ?? "?"),

    el("td", { class: "overrides" }, ...(overrides.length ? overrides.map((c) => el("span", {
      class: "override", "data-config": c.name, "data-value": c.value ?? "",
    }, el("code", { text: `${c.name}=${c.value ?? "null"}` }))) : [el("span", { class: "muted", text: "none" })])),
    el("td", {}, details),
  );
}

// ------------------------------------------------------------------ record browser

let recordChoicesKey = "";
let partitionCounts = new Map();  // topic -> partitions, from the last state

function updateRecordChoices(topicNames) {
  const counts = new Map(topicNames);
  // the application's topics first: the default choice is never __consumer_offsets
  const topics = [...counts.keys()].sort((a, b) => (isInternal(a) - isInternal(b)) || (a < b ? -1 : a > b ? 1 : 0));
  const key = JSON.stringify(topics.map((t) => [t, counts.get(t)]));
  if (key === recordChoicesKey) return;
  recordChoicesKey = key;
  const topicSel = $("rec-topic");
  const was = topicSel.value;
  topicSel.replaceChildren(...topics.map((t) => el("option", {
    value: t, text: t, class: isInternal(t) ? "internal" : null })));
  if (counts.has(was)) topicSel.value = was;
  else if (topics.length) topicSel.value = topics[0];
  partitionCounts = counts;
  updatePartitionChoices();
}

function updatePartitionChoices() {
  const partSel = $("rec-partition");
  const was = partSel.value;
  const n = partitionCounts.get($("rec-topic").value) || 0;
  partSel.replaceChildren(...Array.from({ length: n }, (_, i) => el("option", { value: i, text: i })));
  // keep the reader's choice; otherwise partition 0 (never a blank choice)
  if (n) partSel.value = was !== "" && Number(was) < n ? was : "0";
}

function showBytes(v) {
  if (v === null || v === undefined) return el("span", { class: "null", text: "null" });
  const span = el("span", { class: v.encoding === "hex" ? "bytes-hex" : "bytes-text", title: `${v.size} bytes` },
    v.encoding === "hex" ? `0x${v.data}` : v.data);
  if (v.truncated) span.appendChild(el("span", { class: "muted", text: ` … (${v.size} bytes)` }));
  return span;
}

function renderRecord(r) {
  return el("tr", { class: "record", "data-offset": r.offset, "data-leader-epoch": r.leader_epoch },
    el("td", { class: "num offset" }, r.offset),
    el("td", { class: "num epoch" }, r.leader_epoch),
    el("td", { class: "ts" }, r.timestamp >= 0 ? new Date(r.timestamp).toISOString() : "-"),
    el("td", { class: "key" }, showBytes(r.key)),
    el("td", { class: "value" }, showBytes(r.value)),
    el("td", { class: "headers" }, ...r.headers.map((h) => el("div", {}, `${h.key}: `, showBytes(h.value)))),
  );
}

function recordStatus(state, text, error) {
  const st = $("records-status");
  st.dataset.state = state;
  if (error) st.dataset.error = error; else delete st.dataset.error;
  st.textContent = text;
}

async function showRecords() {
  const topic = $("rec-topic").value;
  const partition = $("rec-partition").value;
  const limit = $("rec-limit").value;
  const q = new URLSearchParams({ topic, partition, limit });
  recordStatus("loading", `reading ${topic}-${partition}…`);
  const rows = $("record-rows");
  try {
    const got = await getJSON(`/api/records?${q}`);
    rows.replaceChildren(...got.records.map(renderRecord));
    rows.dataset.topic = got.topic;
    rows.dataset.partition = got.partition;
    rows.dataset.highWatermark = got.high_watermark;
    recordStatus("ok", `${got.records.length} record${got.records.length === 1 ? "" : "s"} of ` +
      `${got.topic}-${got.partition} below its high watermark ${got.high_watermark} ` +
      `(log start ${got.log_start_offset}), read from leader ${got.leader}`);
  } catch (err) {
    rows.replaceChildren();
    recordStatus("error", err.kafkaError ? `${err.kafkaError}: ${err.message}` : `failed: ${err.message}`,
      err.kafkaError || "UNREACHABLE");
  }
}

function browse(topic, partition) {
  $("rec-topic").value = topic;
  updatePartitionChoices();
  $("rec-partition").value = partition;
  $("records-section").scrollIntoView({ block: "nearest" });
  showRecords();
}

// The LSO is worth showing only below the HW: an open transaction holds it back.
function lsoBehind(p) {
  return typeof p.last_stable_offset === "number" && p.last_stable_offset >= 0 && p.high_watermark >= 0 &&
    p.last_stable_offset < p.high_watermark;
}

function renderReplicaBars(p) {
  const hw = p.high_watermark;
  const leaderLeo = p.log_end_offset;
  let scale = Math.max(1, hw, leaderLeo);
  for (const r of p.replica_states) scale = Math.max(scale, r.leo, r.leo_seen_by_leader);
  const pct = (x) => `${Math.max(0, Math.min(100, (x / scale) * 100)).toFixed(2)}%`;

  const box = el("div", { class: "replicas" });
  for (const r of p.replica_states) {
    const leo = r.reported ? r.leo : r.leo_seen_by_leader;
    const bar = el("div", { class: "bar" });
    if (leo >= 0) {
      const committedEnd = hw >= 0 ? Math.min(leo, hw) : 0;
      const start = Math.max(0, Math.min(r.log_start_offset, committedEnd));
      if (start > 0) {  // below the log start: deleted by retention or DeleteRecords
        bar.appendChild(el("div", { class: "seg deleted", style: `left:0;width:${pct(start)}`,
          title: `log start ${r.log_start_offset}: older records deleted` }));
      }
      bar.appendChild(el("div", { class: "seg committed", style: `left:${pct(start)};width:${pct(committedEnd - start)}` }));
      if (hw >= 0 && leo > hw) {
        bar.appendChild(el("div", { class: "seg uncommitted", style: `left:${pct(hw)};width:${pct(leo - hw)}` }));
      }
      if (leaderLeo > leo) {
        bar.appendChild(el("div", { class: "seg missing", style: `left:${pct(leo)};width:${pct(leaderLeo - leo)}` }));
      }
    }
    if (hw >= 0) bar.appendChild(el("div", { class: "hwmark", style: `left:calc(${pct(hw)} - 1px)`, title: `HW ${hw}` }));
    if (lsoBehind(p)) {
      bar.appendChild(el("div", { class: "lsomark", style: `left:calc(${pct(p.last_stable_offset)} - 1px)`,
        title: `LSO ${p.last_stable_offset}` }));
    }

    const tags = [];
    if (r.is_leader) tags.push(el("span", { class: "tag", text: "L", title: "leader" }));
    if (!r.alive) tags.push(el("span", { class: "tag dead", text: "✕", title: "broker is dead" }));
    else if (!r.in_isr) tags.push(el("span", { class: "tag out", text: "!", title: "not in the ISR" }));

    let nums;
    if (!r.alive) {  // one word for a dead replica, whatever the leader last saw of it
      nums = el("span", { class: "nums dead", title: leo >= 0
        ? `the broker is dead; the leader last saw this replica's LEO at ${leo}` : "the broker is dead" }, "dead");
    } else if (leo < 0) nums = el("span", { class: "nums" }, "no report");
    else {
      let title = r.reported ? `replica HW ${r.hw}, leader epoch ${r.leader_epoch}, role ${r.role}`
        : "the broker did not answer: its LEO as the leader last saw it";
      // The lag shows only for a follower behind by Kafka's rule (out of the ISR, or not
      // caught up within replica.lag.time.max.ms); an in-sync follower a fetch behind is not.
      if (r.lag && !r.behind && !r.is_leader) title += `; ${r.lag} behind the leader's LEO, in sync (caught up within replica.lag.time.max.ms)`;
      nums = el("span", { class: r.reported ? "nums" : "nums stale", title },
        r.reported ? `LEO ${leo}` : `LEO ${leo}?`, r.behind ? el("span", { class: "lag" }, ` · lag ${r.lag}`) : null);
    }
    box.appendChild(el("div", {
      class: "replica", "data-broker-id": r.broker, "data-leo": leo, "data-hw": r.hw, "data-in-isr": r.in_isr,
      "data-alive": r.alive, "data-role": r.role, "data-log-start": r.log_start_offset, "data-lag": r.lag === null ? "" : r.lag,
      "data-behind": !!r.behind,
      title: `broker ${r.broker}: ${r.role}, LEO ${leo}, HW ${r.hw}`,
    }, el("span", { class: "who" }, `b${r.broker} `, ...tags), bar, nums));
  }
  return box;
}

// The page follows the cluster, not one broker, but reads only the broker that served it
// (brokers let no page of another site read their JSON, another broker's page included).
// After two failed polls it moves to the dashboard of the next live broker of the last
// state that answers; a browser that authenticated asks for the user and password again
// there (another site).
let failures = 0;
let pollTimer = null;
let polling = false;
let pollAgain = false;
let knownBrokers = [];       // [{id, host, port}] from the last state
let sourceBroker = null;
let moving = false;

// Whether a broker answers at all: an opaque answer (no-cors) reads nothing from it.
async function answers(b) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
  try {
    await fetch(`${location.protocol}//${b.host}:${b.port}/static/dashboard.css`,
      { mode: "no-cors", cache: "no-store", signal: ctl.signal });
    return true;
  } catch (e) {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

// Go to the dashboard of the first other live broker that answers; its id, or null.
async function moveToLiveBroker() {
  for (const b of knownBrokers.filter((k) => k.host && k.id !== sourceBroker)) {
    if (await answers(b)) {
      window.location.assign(`${location.protocol}//${b.host}:${b.port}/`);
      return b.id;
    }
  }
  return null;
}

async function pollState() {
  clearTimeout(pollTimer);
  if (polling) { pollAgain = true; return; }  // a control changed while a poll was out: ask again after it
  polling = true;
  pollAgain = false;
  try {
    const asked = stateQuery();
    const s = await getJSON(`/api/state?${asked}`);
    failures = 0;
    sourceBroker = s.serving_broker;
    knownBrokers = s.brokers.filter((b) => b.alive).map((b) => ({ id: b.id, host: b.host, port: b.port }));
    if (asked === stateQuery()) renderState(s);  // not rows of a filter or page already left
    else pollAgain = true;
    setConnection(true);
  } catch (err) {
    failures += 1;
    let message = "serving broker unreachable, retrying";
    if (failures >= 2 && !moving) {
      moving = true;
      const to = await moveToLiveBroker();
      moving = false;
      if (to !== null) message = `broker ${sourceBroker} unreachable: moving to broker ${to}`;
    }
    setConnection(false, message);
  } finally {
    polling = false;
    pollTimer = setTimeout(pollState, pollAgain ? 0 : POLL_MS);
  }
}

// a new filter or page: from its first row, asked for at once
function changed(resetRows = true) {
  if (resetRows) { rowOffset = 0; topicOffset = 0; }
  pollState();
}

// ------------------------------------------------------------------ events

const seen = new Set();
let newestTs = 0;
let firstBatch = true;

function eventKey(e) { return `${e.ts}|${e.broker}|${e.kind}|${e.text}`; }

function isMinor(e) {
  return !KEY_KINDS.has(e.kind) || isInternal(e.topic);
}

function kindLabel(kind) {
  return KIND_LABELS[kind] || kind.replace(/_/g, " ");
}

function renderEvent(e) {
  const li = el("li", {
    class: `event${isMinor(e) ? " minor" : ""}${isInternal(e.topic) ? " internal" : ""}${firstBatch ? "" : " fresh"}`,
    "data-kind": e.kind, "data-broker": e.broker, "data-ts": e.ts,
    "data-topic": e.topic, "data-partition": e.partition, "data-transactional-id": e.transactional_id,
  },
    el("time", { datetime: new Date(e.ts * 1000).toISOString() }, clock(e.ts)),
    el("span", { class: "kind" }, kindLabel(e.kind), el("span", { class: "src", text: `broker ${e.broker}` })),
    el("span", { class: "text" }, e.text),
  );
  return li;
}

function addEvents(events) {
  const list = $("events");
  const fresh = events.filter((e) => !seen.has(eventKey(e)));
  if (!fresh.length) return;
  fresh.sort((a, b) => a.ts - b.ts || a.broker - b.broker);
  for (const e of fresh) {
    seen.add(eventKey(e));
    newestTs = Math.max(newestTs, e.ts);
    // newest first; an event that arrives late (from a slow broker) goes to its place in time
    const node = renderEvent(e);
    let before = list.firstChild;
    while (before && Number(before.dataset.ts) > e.ts) before = before.nextSibling;
    list.insertBefore(node, before);
  }
  // over MAX_EVENTS: drop the oldest minor events (role changes, internal topics) first,
  // then the transactions' begin and commit events, so that a burst of them never pushes
  // out the broker, controller and leader events
  let excess = list.children.length - MAX_EVENTS;
  if (excess > 0) {
    const minor = [...list.querySelectorAll("li.event.minor")].reverse();  // oldest first
    const key = [...list.children].reverse().filter((n) => !n.classList.contains("minor"));
    const routine = key.filter((n) => ROUTINE_KINDS.has(n.dataset.kind));
    const rest = key.filter((n) => !ROUTINE_KINDS.has(n.dataset.kind));
    for (const node of minor.concat(routine, rest)) {
      if (excess <= 0) break;
      seen.delete(`${node.dataset.ts}|${node.dataset.broker}|${node.dataset.kind}|${node.querySelector(".text").textContent}`);
      list.removeChild(node);
      excess -= 1;
    }
  }
  firstBatch = false;
}

async function pollEvents() {
  try {
    // ask a little before the newest event held: another broker's event with an
    // earlier timestamp may arrive later; duplicates are skipped
    const since = newestTs > 0 ? newestTs - 5 : 0;
    const got = await getJSON(`/api/events?since=${since}&limit=500`);
    addEvents(got.events);
  } catch (err) {
    // the state poll reports the connection
  } finally {
    setTimeout(pollEvents, POLL_MS);
  }
}

// ------------------------------------------------------------------ start

$("show-all-events").addEventListener("change", (ev) => {
  $("events").classList.toggle("all", ev.target.checked);
});
$("show-internal").addEventListener("change", (ev) => {
  $("partitions").classList.toggle("show-internal", ev.target.checked);
  changed();
});
let filterTimer = null;
$("topic-filter").addEventListener("input", () => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => changed(), 250);  // asked once typing pauses
});
$("problems-only").addEventListener("change", () => changed());
$("page-size").addEventListener("change", () => changed());
$("page-prev").addEventListener("click", () => {
  rowOffset = Math.max(0, rowOffset - Number($("page-size").value));
  changed(false);
});
$("page-next").addEventListener("click", () => {
  rowOffset += Number($("page-size").value);
  changed(false);
});
$("topic-prev").addEventListener("click", () => { topicOffset = Math.max(0, topicOffset - TOPIC_PAGE); changed(false); });
$("topic-next").addEventListener("click", () => { topicOffset += TOPIC_PAGE; changed(false); });
$("topic-rows").addEventListener("click", (ev) => {
  const b = ev.target.closest("button.only");
  if (!b) return;
  $("topic-filter").value = b.dataset.topic;  // a name matches itself (and names that contain it)
  changed();
  $("partitions-section").scrollIntoView({ block: "start" });
});
$("records-form").addEventListener("submit", (ev) => { ev.preventDefault(); showRecords(); });
$("rec-topic").addEventListener("change", () => updatePartitionChoices());
$("partition-rows").addEventListener("click", (ev) => {
  const b = ev.target.closest("button.browse");
  if (b) browse(b.dataset.topic, b.dataset.partition);
});
pollState();
pollEvents();
