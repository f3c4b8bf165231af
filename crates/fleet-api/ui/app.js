// hostping web UI: the fleet overview, the host page and the job page, filled from the read
// API. One script for the collector (/, /hosts/{host}, /job) and the agent (/, its own host);
// the jobs' pages add jobs.js (the jobs list at /jobs, the job page's collectives and its
// picture of hosts and switches), which uses the helpers this script shares as `hostping`.
// It only reads, but for the job page's probe form: given a probe token by its reader, it
// asks the collector for the verdict with follow-up probes (`probe=1`), as `hostping job
// --probe` does. The token goes in the request's Authorization header, never in the URL.
// Every string from the API enters the DOM as a text node or an attribute value, never as
// markup. Optional endpoints (baselines, slow hosts, racks) are used when they answer and
// skipped quietly when they do not.
"use strict";
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";

  // Elements: attributes by setAttribute, children as nodes or text nodes.
  function fill(e, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  const h = (tag, attrs, ...children) => fill(document.createElement(tag), attrs, children);
  const s = (tag, attrs, ...children) => fill(document.createElementNS(SVG_NS, tag), attrs, children);
  const $ = (id) => document.getElementById(id);

  // The answer, or an error in words: the API's own refusal (`{"error": ...}`) when it
  // gives one, or that the server did not answer.
  async function getJson(url, token) {
    let r;
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    try {
      r = await fetch(url, { headers });
    } catch (e) {
      throw new Error(url + ": the server did not answer (" + e.message + ")");
    }
    if (!r.ok) {
      const body = await r.json().catch(() => null);
      const why = body && typeof body.error === "string" ? ": " + body.error : "";
      const e = new Error(url + ": HTTP " + r.status + why);
      // A 404 is an answer for some reads ("not judged"), not a failure: callers tell.
      e.status = r.status;
      throw e;
    }
    return r.json();
  }
  // An endpoint another part of the fleet may not have (404, or an older collector).
  async function optionalJson(url) {
    try { return await getJson(url); } catch (e) { return null; }
  }

  const CAUSES = {
    link_failure: "Link failure", link_flapping: "Link flapping",
    link_overloaded: "Link overloaded", pcie_misconfiguration: "PCIe misconfiguration",
    rnic_misconfiguration: "RNIC misconfiguration", iommu_congestion: "IOMMU congestion",
    memory_bus_congestion: "Memory bus congestion", odp_stall: "ODP stall",
    // The job verdict's fabric and job causes (DESIGN 4.7).
    link_degraded: "Link degraded", link_errors: "Link errors", link_down: "Link down",
    background_traffic: "Background traffic", pattern: "Communication pattern",
    mapping: "Rank mapping",
    // A rank that starts its collectives late (DESIGN 4.8).
    straggler: "Straggler",
  };
  const causeWords = (c) => CAUSES[c] || String(c);
  // Why part of a host was not judged (DESIGN 4.3 not_judged.reason).
  const NOT_JUDGED = {
    no_baseline: "No baseline", not_probed: "Not probed", probe_failed: "Probe failed",
    not_measurable: "Not measurable",
  };
  // A host's health as the server says (`health`), or from the fields an older server sends.
  function hostHealth(x) {
    if (typeof x.health === "string") return x.health;
    if (x.inconclusive === true) return "inconclusive";
    return x.healthy === true ? "healthy" : x.healthy === false ? "unhealthy" : "none";
  }
  // A run that found nothing wrong but could not judge every link: neither healthy nor
  // unhealthy (as analyze::fleet::is_inconclusive reads a report).
  const inconclusiveRun = (r) => r.inconclusive === true && !(r.diagnoses || []).length &&
    !(r.paths || []).some((p) => p.status === "abnormal" || (p.error && !p.unavailable));
  const isNum = (v) => typeof v === "number" && isFinite(v);
  const fmt = (v, digits) => (isNum(v) ? v.toFixed(digits) : "—");
  function when(ms) {
    if (!isNum(ms)) return "never";
    return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }
  // A time as typed in the job form, in ms: Unix seconds or RFC 3339 with its offset, the
  // two forms the collector reads (model::time::unix_seconds), which checks it; the page
  // sends the text as typed and reads it here only to show the window.
  function instantMs(text) {
    const t = String(text).trim();
    return /^[0-9]+$/.test(t) ? 1000 * Number(t) : Date.parse(t);
  }
  function ago(ms) {
    if (!isNum(ms)) return "";
    const s = Math.round((Date.now() - ms) / 1000);
    if (s < 0) return "";
    if (s < 120) return s + " s ago";
    if (s < 7200) return Math.round(s / 60) + " min ago";
    if (s < 172800) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " d ago";
  }
  // "gpu10" after "gpu9"; memory nodes before GPUs.
  function naturalKey(id) {
    const m = /^(.*?)(\d+)$/.exec(id);
    const prefix = m ? m[1] : id;
    return [prefix === "mem" ? 0 : 1, prefix, m ? Number(m[2]) : -1];
  }
  function naturalCompare(a, b) {
    const x = naturalKey(a), y = naturalKey(b);
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
  }
  const distinct = (values) => [...new Set(values)].sort(naturalCompare);
  function fail(where, e) {
    where.textContent = "Could not load: " + e.message;
    where.classList.add("error");
  }

  // ---- Fleet overview ------------------------------------------------------------------

  // The slow-host ranking, whatever its envelope: a list, or a list under "hosts".
  function slowHosts(answer) {
    const list = Array.isArray(answer) ? answer : answer && Array.isArray(answer.hosts) ? answer.hosts : [];
    const byHost = new Map();
    list.forEach((item, i) => {
      if (item && typeof item.host === "string") byHost.set(item.host, { rank: i + 1, item });
    });
    return byHost;
  }

  function setOptions(select, values, chosen) {
    if (chosen && !values.includes(chosen)) values = values.concat([chosen]);
    for (const v of values) select.append(h("option", { value: v }, v));
    select.value = chosen || "";
  }

  async function overview() {
    let hosts;
    try {
      hosts = await getJson("/api/hosts");
    } catch (e) {
      return fail($("summary"), e);
    }
    const slow = slowHosts(await optionalJson("/api/fleet/slow-hosts"));
    const hasRack = hosts.some((x) => "rack" in x);
    const params = new URLSearchParams(location.search);
    const filters = {
      cause: $("filter-cause"), kind: $("filter-kind"), rack: $("filter-rack"),
      health: $("filter-health"),
    };
    setOptions(filters.cause, distinct(hosts.flatMap((x) => x.causes || [])), params.get("cause"));
    setOptions(filters.kind, distinct(hosts.map((x) => x.kind)), params.get("kind"));
    if (hasRack) {
      $("filter-rack-label").hidden = false;
      document.querySelectorAll(".rack-col").forEach((c) => (c.hidden = false));
      setOptions(filters.rack, distinct(hosts.map((x) => x.rack).filter((r) => typeof r === "string")), params.get("rack"));
    }
    if (slow.size) document.querySelectorAll(".slow-col").forEach((c) => (c.hidden = false));
    filters.health.value = params.get("health") || "";

    function render() {
      const want = {};
      for (const [k, sel] of Object.entries(filters)) want[k] = sel.value;
      const shown = hosts.filter((x) =>
        (!want.cause || (x.causes || []).includes(want.cause)) &&
        (!want.kind || x.kind === want.kind) &&
        (!want.rack || x.rack === want.rack) &&
        (!want.health || hostHealth(x) === want.health));
      const body = $("hosts").tBodies[0];
      body.replaceChildren(...shown.map((x) => hostRow(x, hasRack, slow)));
      $("hosts-empty").hidden = shown.length > 0;
      const count = (word) => hosts.filter((x) => hostHealth(x) === word).length;
      $("summary").textContent = hosts.length + " hosts: " + count("healthy") + " healthy, " +
        count("unhealthy") + " unhealthy, " + count("inconclusive") + " inconclusive, " +
        count("stale") + " stale" + (slow.size ? ", " + slow.size + " below their fleet baseline" : "") +
        (shown.length === hosts.length ? "" : "; " + shown.length + " shown");
    }
    for (const [k, sel] of Object.entries(filters)) {
      sel.addEventListener("change", () => {
        if (sel.value) params.set(k, sel.value); else params.delete(k);
        const q = params.toString();
        history.replaceState(null, "", q ? "?" + q : location.pathname);
        render();
      });
    }
    render();
  }

  const HEALTH_TITLES = {
    healthy: "every link judged, no bottleneck found",
    unhealthy: "a bottleneck found",
    inconclusive: "some links could not be judged, so the host is not called healthy",
    stale: "no recent run: its latest verdict is too old to speak for it",
  };
  function healthBadge(health) {
    if (health in HEALTH_TITLES) return h("span", { class: "badge " + health, title: HEALTH_TITLES[health] }, health);
    return h("span", { class: "badge" }, "no runs");
  }

  function hostRow(x, hasRack, slow) {
    const health = hostHealth(x);
    const slowEntry = slow.get(x.host);
    let slowCell = null;
    if (slow.size) {
      let text = "";
      if (slowEntry) {
        const it = slowEntry.item;
        text = "#" + slowEntry.rank + (isNum(it.score) ? " (score " + fmt(it.score, 2) + ")" : "");
      }
      const title = slowEntry && typeof slowEntry.item.evidence === "string" ? slowEntry.item.evidence : null;
      slowCell = h("td", { title }, text);
    }
    return h("tr", { "data-host": x.host, "data-health": health, "data-kind": x.kind },
      h("td", null, h("a", { href: "/hosts/" + encodeURIComponent(x.host) }, x.host)),
      h("td", null, healthBadge(health)),
      h("td", null, x.kind, x.kind_known === false ? h("span", { class: "badge flag", title: "no built-in model of this kind" }, " unknown kind") : null),
      hasRack ? h("td", null, typeof x.rack === "string" ? x.rack : "—") : null,
      h("td", { title: when(x.last_run_unix_ms) }, isNum(x.last_run_unix_ms) ? when(x.last_run_unix_ms) + " (" + ago(x.last_run_unix_ms) + ")" : "never"),
      h("td", null, isNum(x.runs) ? x.runs : ""),
      h("td", null, (x.causes || []).map((c) => h("span", { class: "badge cause", "data-cause": c, title: c }, causeWords(c)))),
      slowCell);
  }

  // ---- Host page -----------------------------------------------------------------------

  async function hostPage() {
    const m = /^\/hosts\/([^/]+)\/?$/.exec(location.pathname);
    let host;
    try {
      if (m) {
        host = decodeURIComponent(m[1]);
        $("back").hidden = false;
      } else {
        // An agent: the one host it watches.
        host = (await getJson("/api/hosts"))[0].host;
      }
    } catch (e) {
      return fail($("host-summary"), e);
    }
    document.title = host + " · hostping";
    $("host-name").textContent = host;
    const api = "/api/hosts/" + encodeURIComponent(host);
    let runs;
    try {
      runs = await getJson(api + "/runs?limit=1");
    } catch (e) {
      return fail($("host-summary"), e);
    }
    const baseline = await optionalJson(api + "/baseline");
    if (!runs.length) {
      $("host-summary").textContent = "No run stored yet.";
      return;
    }
    const run = runs[0];
    const health = inconclusiveRun(run) ? "inconclusive" : run.healthy === true ? "healthy" : "unhealthy";
    $("host-name").replaceChildren(host + " ", healthBadge(health));
    $("host-summary").textContent = [
      "kind " + run.host + (run.kind_known === false ? " (unknown kind)" : ""),
      typeof baseline?.rack === "string" ? "rack " + baseline.rack : null,
      "latest run " + run.id + " at " + when(run.started_unix_ms) + " (" + ago(run.started_unix_ms) + ")",
      (run.trigger ? "trigger " + run.trigger + ", " : "") + (run.mode || "") + " mode",
      run.provenance === "simulated" ? "simulated host" : null,
    ].filter(Boolean).join(" · ");
    diagnoses(run);
    notJudged(run);
    const baselines = baselineMap(baseline, run);
    const select = (rnic, endpoint) => timeline(api, rnic, endpoint, baselines.get(rnic + "|" + endpoint));
    heatmap(run, baselines, select);
    topology(run.links || []);
    const params = new URLSearchParams(location.search);
    const paths = run.paths || [];
    const first = paths.find((p) => p.rnic === params.get("rnic") && p.endpoint === params.get("endpoint")) ||
      paths.find((p) => p.status === "abnormal") || paths[0];
    if (first) select(first.rnic, first.endpoint);
  }

  function diagnoses(run) {
    const list = $("diagnoses");
    const items = (run.diagnoses || []).map((d) => {
      const where = [];
      if (d.links && d.links.length) where.push((d.links.length > 1 ? "links " : "link ") + d.links.join(", "));
      if (d.rnic) where.push("RNIC " + d.rnic);
      if (d.setting) where.push("setting " + d.setting);
      return h("li", { "data-cause": d.cause },
        h("strong", null, causeWords(d.cause)), where.length ? " on " + where.join("; ") : "",
        d.evidence ? h("span", { class: "evidence" }, d.evidence) : null);
    });
    if (!items.length) {
      const words = run.healthy ? "No bottleneck found: every path is normal."
        : inconclusiveRun(run) ? "No bottleneck found in what was judged, but some links could not be judged (below)."
        : "Unhealthy, with no cause named.";
      items.push(h("li", null, words));
    }
    list.replaceChildren(...items);
  }

  // What the run could not judge, and why (DESIGN 4.3 not_judged).
  function notJudged(run) {
    const entries = Array.isArray(run.not_judged) ? run.not_judged : [];
    $("not-judged-section").hidden = entries.length === 0;
    $("not-judged").replaceChildren(...entries.map((n) => {
      const where = [];
      if (Array.isArray(n.links) && n.links.length) where.push((n.links.length > 1 ? "links " : "link ") + n.links.join(", "));
      if (Array.isArray(n.paths) && n.paths.length) where.push((n.paths.length > 1 ? "paths " : "path ") + n.paths.join(", "));
      return h("li", { "data-reason": n.reason },
        h("strong", null, NOT_JUDGED[n.reason] || String(n.reason)), where.length ? ": " + where.join("; ") : "",
        n.detail ? h("span", { class: "evidence" }, n.detail) : null);
    }));
  }

  // Per path: the baseline the collector judges it by (own or fleet, GET .../baseline), else
  // the one in the run's report.
  function baselineMap(answer, run) {
    const map = new Map();
    const fleet = answer && Array.isArray(answer.paths) ? answer.paths : [];
    for (const p of run.paths || []) {
      map.set(p.rnic + "|" + p.endpoint, {
        source: "report" + (run.baseline ? " (" + run.baseline + ")" : ""),
        latency_us: p.baseline_latency_us, bandwidth_gbps: p.baseline_bandwidth_gbps,
      });
    }
    for (const b of fleet) {
      if (!b || typeof b.rnic !== "string" || typeof b.endpoint !== "string" || b.source === "none") continue;
      map.set(b.rnic + "|" + b.endpoint, b);
    }
    const counts = {};
    for (const b of fleet) counts[b.source] = (counts[b.source] || 0) + 1;
    $("baseline-note").textContent = fleet.length
      ? "Baselines from the collector: " + Object.entries(counts).map(([k, n]) => n + " " + k).join(", ") + "."
      : "Baselines from the run's report" + (run.baseline ? " (" + run.baseline + ")" : "") + ".";
    return map;
  }

  function pathText(p, b) {
    const parts = [p.rnic + " to " + p.endpoint + ": " + p.status];
    parts.push("bandwidth " + fmt(p.bandwidth_gbps, 1) + " Gb/s" + (b && isNum(b.bandwidth_gbps) ? " (baseline " + fmt(b.bandwidth_gbps, 1) + ")" : ""));
    parts.push("latency " + fmt(p.latency_us, 2) + " µs" + (b && isNum(b.latency_us) ? " (baseline " + fmt(b.latency_us, 2) + ")" : ""));
    if (b) {
      let src = "baseline: " + b.source;
      if (isNum(b.hosts)) src += ", " + b.hosts + " hosts";
      if (isNum(b.deficit_pct)) src += ", " + fmt(b.deficit_pct, 1) + " % below";
      if (typeof b.verdict === "string") src += ", verdict " + b.verdict;
      parts.push(src);
    }
    if (p.error) parts.push("probe error: " + p.error);
    return parts.join("; ");
  }

  // Hostping Fig. 8: one row per RNIC, one column per endpoint, coloured by path status.
  function heatmap(run, baselines, select) {
    const paths = run.paths || [];
    const rnics = distinct(paths.map((p) => p.rnic));
    const endpoints = distinct(paths.map((p) => p.endpoint));
    const byKey = new Map(paths.map((p) => [p.rnic + "|" + p.endpoint, p]));
    const table = $("heatmap");
    const head = h("tr", null, h("th", { scope: "col" }, "RNIC \\ endpoint"), endpoints.map((e) => h("th", { scope: "col" }, e)));
    const rows = rnics.map((r) => h("tr", null, h("th", { scope: "row" }, r), endpoints.map((e) => {
      const p = byKey.get(r + "|" + e);
      if (!p) return h("td", { class: "none", "data-rnic": r, "data-endpoint": e, "data-status": "none" }, h("button", { type: "button", disabled: true, "aria-label": r + " to " + e + ": not probed" }, ""));
      const text = pathText(p, baselines.get(r + "|" + e));
      const button = h("button", { type: "button", title: text, "aria-label": text }, isNum(p.bandwidth_gbps) ? fmt(p.bandwidth_gbps, 0) : "—");
      button.addEventListener("click", () => select(r, e));
      return h("td", { class: p.status, "data-rnic": r, "data-endpoint": e, "data-status": p.status }, button);
    })));
    table.replaceChildren(h("caption", { class: "sr-only" }, "Path status by RNIC (rows) and endpoint (columns); cell text is bandwidth in Gb/s"), h("thead", null, head), h("tbody", null, rows));
  }

  // Hostping Fig. 9: the path's bandwidth and latency run after run. Only the latest choice
  // is drawn, whichever answer arrives last.
  let chosen = 0;
  async function timeline(api, rnic, endpoint, baseline) {
    const mine = ++chosen;
    document.querySelectorAll("#heatmap td.selected").forEach((c) => c.classList.remove("selected"));
    const cell = [...document.querySelectorAll("#heatmap td")].find((c) => c.dataset.rnic === rnic && c.dataset.endpoint === endpoint);
    if (cell) cell.classList.add("selected");
    const params = new URLSearchParams(location.search);
    params.set("rnic", rnic);
    params.set("endpoint", endpoint);
    history.replaceState(null, "", "?" + params.toString());
    const q = "?rnic=" + encodeURIComponent(rnic) + "&endpoint=" + encodeURIComponent(endpoint);
    let answer;
    try {
      answer = await getJson(api + "/timeline" + q);
    } catch (e) {
      if (mine === chosen) fail($("timeline-path"), e);
      return;
    }
    if (mine !== chosen) return;
    const points = answer.points || [];
    $("timeline-path").textContent = rnic + " to " + endpoint + ": " + points.length + " runs" +
      (points.length ? ", " + when(points[0].started_unix_ms) + " to " + when(points[points.length - 1].started_unix_ms) : "");
    const chart = s("svg", { viewBox: "0 0 760 350", width: 760, height: 350, role: "img", "aria-label": "bandwidth and latency of " + rnic + " to " + endpoint + " over " + points.length + " runs", "data-rnic": rnic, "data-endpoint": endpoint });
    panel(chart, points, "bandwidth", "bandwidth_gbps", "Gb/s", 1, baseline && baseline.bandwidth_gbps, 22);
    panel(chart, points, "latency", "latency_us", "µs", 2, baseline && baseline.latency_us, 190);
    if (points.length) {
      chart.append(s("text", { x: 60, y: 345 }, when(points[0].started_unix_ms)));
      chart.append(s("text", { x: 740, y: 345, "text-anchor": "end" }, when(points[points.length - 1].started_unix_ms)));
    }
    $("timeline").replaceChildren(chart);
    $("timeline-values").replaceChildren(
      h("thead", null, h("tr", null, ["Run", "Started", "Bandwidth (Gb/s)", "Latency (µs)", "Status"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, points.map((p) => h("tr", null, h("td", null, p.run_id), h("td", null, when(p.started_unix_ms)), h("td", null, fmt(p.bandwidth_gbps, 1)), h("td", null, fmt(p.latency_us, 2)), h("td", null, p.status)))));
  }

  // One metric over runs in a 700 x 120 box at (60, top): a line through the measured
  // points, a dot per run in its status colour, the baseline dashed.
  function panel(chart, points, metric, field, unit, digits, baseline, top) {
    const left = 60, width = 680, height = 120;
    const values = points.map((p) => p[field]).filter(isNum);
    const max = Math.max(1e-9, ...values, isNum(baseline) ? baseline : 0) * 1.1;
    const x = (i) => left + (points.length > 1 ? (i * width) / (points.length - 1) : width / 2);
    const y = (v) => top + height - (v / max) * height;
    const g = s("g", { class: "points", "data-metric": metric });
    chart.append(s("text", { x: left, y: top - 8, class: "title" }, metric + " (" + unit + ")" + (isNum(baseline) ? ", dashed: baseline" : "")),
      s("line", { class: "axis", x1: left, y1: top + height, x2: left + width, y2: top + height }),
      s("line", { class: "axis", x1: left, y1: top, x2: left, y2: top + height }),
      s("text", { x: left - 4, y: top + 8, "text-anchor": "end" }, fmt(max, digits)),
      s("text", { x: left - 4, y: top + height, "text-anchor": "end" }, "0"));
    if (isNum(baseline)) {
      chart.append(s("line", { class: "baseline", x1: left, y1: y(baseline), x2: left + width, y2: y(baseline) }, s("title", null, "baseline " + fmt(baseline, digits) + " " + unit)));
    }
    const line = points.map((p, i) => (isNum(p[field]) ? x(i).toFixed(1) + "," + y(p[field]).toFixed(1) : null)).filter(Boolean);
    if (line.length > 1) chart.append(s("polyline", { class: "series", points: line.join(" ") }));
    points.forEach((p, i) => {
      const v = p[field];
      if (!isNum(v)) return;
      g.append(s("circle", { class: p.status, cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 3.5, "data-run": p.run_id, "data-value": v, "data-status": p.status },
        s("title", null, "run " + p.run_id + ", " + when(p.started_unix_ms) + ": " + fmt(v, digits) + " " + unit + " (" + p.status + ")")));
    });
    chart.append(g);
  }

  // The host's components laid out from its link ids ("downstream--upstream", DESIGN 4.1):
  // sockets in a row with their memory above, everything under a socket (root port, switches,
  // RNICs, GPUs) as a tree below; each link drawn in its status colour.
  function topology(links) {
    const edges = links.map((l) => {
      const [down, up] = String(l.id).split("--");
      return { l, down, up };
    }).filter((e) => e.down && e.up);
    const children = new Map(), hasParent = new Set(), sockets = new Set(), memories = [];
    for (const e of edges) {
      if (e.l.kind === "inter_socket") { sockets.add(e.down); sockets.add(e.up); }
      else if (e.l.kind === "memory_channel") { memories.push(e); sockets.add(e.up); }
      else {
        if (!children.has(e.up)) children.set(e.up, []);
        children.get(e.up).push(e.down);
        hasParent.add(e.down);
      }
    }
    const roots = distinct([...sockets, ...[...children.keys()].filter((n) => !hasParent.has(n))]);
    const pos = new Map();
    let next = 0, depthMax = 1;
    function place(n, depth, seen) {
      if (pos.has(n) || seen.has(n)) return;
      seen.add(n);
      depthMax = Math.max(depthMax, depth);
      const kids = distinct(children.get(n) || []);
      kids.forEach((k) => place(k, depth + 1, seen));
      const xs = kids.filter((k) => pos.has(k)).map((k) => pos.get(k).x);
      pos.set(n, { x: xs.length ? (Math.min(...xs) + Math.max(...xs)) / 2 : next++, depth });
    }
    roots.forEach((r) => place(r, 1, new Set()));
    const perSocket = new Map();
    for (const e of memories) {
      const list = perSocket.get(e.up) || [];
      list.push(e.down);
      perSocket.set(e.up, list);
    }
    for (const [socket, mems] of perSocket) {
      const base = pos.has(socket) ? pos.get(socket).x : next++;
      mems.forEach((m, i) => pos.set(m, { x: base + (i - (mems.length - 1) / 2) * 1.1, depth: 0 }));
    }
    const colW = 70, rowH = 64, nodeW = 60, nodeH = 22;
    const xs = [...pos.values()].map((p) => p.x);
    const minX = Math.min(0, ...xs), maxX = Math.max(0, ...xs);
    const px = (n) => 10 + (pos.get(n).x - minX) * colW + nodeW / 2;
    const py = (n) => 10 + pos.get(n).depth * rowH + nodeH / 2;
    const w = (maxX - minX) * colW + nodeW + 20, ht = (depthMax + 1) * rowH + 10;
    const chart = s("svg", { viewBox: "0 0 " + w + " " + ht, width: w, height: ht, role: "img", "aria-label": "host topology: " + edges.length + " links, coloured by status" });
    for (const e of edges) {
      if (!pos.has(e.down) || !pos.has(e.up)) continue;
      chart.append(s("line", { class: "link " + e.l.status, x1: px(e.down), y1: py(e.down), x2: px(e.up), y2: py(e.up), "data-link": e.l.id, "data-status": e.l.status },
        s("title", null, e.l.id + " (" + e.l.kind + "): " + e.l.status + (e.l.abnormal_cnt ? ", abnormal for " + e.l.abnormal_cnt + " RNICs" : ""))));
    }
    for (const [n] of pos) {
      const cls = (/^[a-z]+/.exec(n) || [""])[0];
      chart.append(s("g", { "data-node": n },
        s("rect", { class: "node " + cls, x: px(n) - nodeW / 2, y: py(n) - nodeH / 2, width: nodeW, height: nodeH, rx: 3 }),
        s("text", { x: px(n), y: py(n) + 4, "text-anchor": "middle" }, n)));
    }
    $("topology").replaceChildren(chart);
    $("links").replaceChildren(
      h("thead", null, h("tr", null, ["Link", "Kind", "Status", "Abnormal for RNICs", "Utilisation"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, links.map((l) => h("tr", { "data-link": l.id, "data-status": l.status }, h("td", null, l.id), h("td", null, l.kind), h("td", null, l.status), h("td", null, l.abnormal_cnt), h("td", null, isNum(l.utilisation) ? fmt(100 * l.utilisation, 0) + " %" : "—")))));
  }

  // ---- Job page ------------------------------------------------------------------------

  // The job verdict (GET /api/jobs/verdict, DESIGN 4.7) for the nodes and window in the URL;
  // bare, the form asks for them.
  const JOB_FIELDS = ["nodes", "since", "until", "job"];
  // A verdict's colour: the infrastructure at fault red, healthy green, not judged blue.
  const VERDICT_HEALTH = {
    host: "unhealthy", network: "unhealthy", both: "unhealthy", neither: "healthy",
    inconclusive: "inconclusive",
  };
  const LAYERS = { host: "Host", rnic: "RNIC", fabric: "Fabric", job: "Job" };

  async function jobPage() {
    const params = new URLSearchParams(location.search);
    const form = $("job-form");
    for (const k of JOB_FIELDS) form.elements[k].value = params.get(k) || "";
    // The CSP forbids submitting forms (form-action 'none'): the script navigates instead.
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      for (const k of JOB_FIELDS) {
        const v = form.elements[k].value.trim();
        if (v) q.set(k, v);
      }
      location.search = q.toString();
    });
    const job = params.get("job");
    if (!params.has("nodes")) {
      // `/job?job=ID` alone: the collector's own verdict or the job's symptom (jobs.js).
      if (job && window.hostpingJobs) return window.hostpingJobs.jobAlone(job);
      $("job-status").textContent = "Enter the job's nodes and window, then Judge.";
      return;
    }
    const q = new URLSearchParams();
    for (const k of JOB_FIELDS) if (params.get(k)) q.set(k, params.get(k));
    $("job-status").textContent = "Judging…";
    let report;
    try {
      report = await getJson("/api/jobs/verdict?" + q.toString());
    } catch (e) {
      fail($("job-status"), e);
      // The job's own collectives say what they say without a verdict.
      if (job && window.hostpingJobs) window.hostpingJobs.collectives(job);
      return;
    }
    showJob(report, params);
    probeOffer(report, params, q);
    if (job && window.hostpingJobs) window.hostpingJobs.collectives(job);
  }

  // The verdict drawn, whether asked with probes or not.
  function showJob(report, params) {
    const name = report.job ? "Job " + report.job : "Job verdict";
    $("job-title").textContent = name;
    document.title = name + " · hostping";
    const span = params.get("since") && params.get("until")
      ? when(instantMs(params.get("since"))) + " to " + when(instantMs(params.get("until")))
      : "the collector's default window";
    $("job-status").textContent = report.nodes.length + " hosts, " + span +
      (report.simulated ? " · simulated measurements" : "");
    $("job-report").hidden = false;
    $("job-details").hidden = false;
    const portStates = new Map((report.ports || []).map((p) => [p.port, p.state]));
    const culpritHosts = new Set((report.culprits || []).map((c) => c.host).filter(Boolean));
    $("verdict").replaceChildren(
      h("span", { class: "badge " + (VERDICT_HEALTH[report.verdict] || ""), "data-verdict": report.verdict }, report.verdict),
      report.simulated ? h("span", { class: "badge simulated", id: "verdict-simulated" }, "SIMULATED") : "",
      " ", h("span", { id: "verdict-summary" }, report.summary));
    $("culprits").replaceChildren(...(report.culprits || []).map(culpritItem));
    listSection("job-not-judged", report.not_judged, (n) =>
      h("li", { "data-what": n.what }, h("strong", null, n.what), ": " + n.why));
    listSection("not-the-jobs", report.not_the_jobs, culpritItem);
    jobHosts(report.hosts || [], culpritHosts);
    if (window.hostpingJobs) window.hostpingJobs.picture(report);
    switchPorts(report.ports || [], report.ports_unread);
    jobPairs(report.pairs || [], portStates);
    listSection("follow-ups", report.follow_ups, (f) =>
      h("li", { "data-kind": f.kind }, h("strong", null, f.kind + " " + f.target), ": " + f.outcome,
        h("span", { class: "evidence" }, "why: " + f.why)));
    whatIf(report.what_if);
  }

  // A value as one shell word: as it is when it holds nothing a shell reads, else quoted
  // (a hostlist's brackets are a glob).
  function shellWord(v) {
    return /^[A-Za-z0-9._:\/,=@+-]+$/.test(v) ? v : "'" + v.replace(/'/g, "'\\''") + "'";
  }

  // Where the verdict says follow-up probes would judge more (no pair probed between its
  // hosts, or a host without a check), the command that runs them, to copy, and a form that
  // asks this collector for them with a probe token (GET /api/jobs/verdict with probe=1).
  function probeOffer(report, params, q) {
    const unprobed = (report.pairs || []).length === 0 && (report.nodes || []).length > 1;
    const unchecked = (report.hosts || []).some((x) => x.healthy !== true && x.healthy !== false);
    $("probe-section").hidden = !(unprobed || unchecked);
    if ($("probe-section").hidden) return;
    const args = ["hostping", "job", "--collector", location.origin, "--nodes", params.get("nodes")];
    for (const k of ["since", "until"]) if (params.get(k)) args.push("--" + k, params.get(k));
    args.push("--probe", "--token-file", "FILE");
    $("probe-command").textContent = args.map(shellWord).join(" ");
    $("probe-copy").onclick = async () => {
      const text = $("probe-command").textContent;
      try {
        await navigator.clipboard.writeText(text);
        $("probe-status").textContent = "Command copied.";
      } catch (e) {
        // No clipboard outside a secure context: the command is selected to copy by hand.
        getSelection().selectAllChildren($("probe-command"));
      }
    };
    $("probe-form").onsubmit = async (ev) => {
      ev.preventDefault();
      const token = $("probe-token").value.trim();
      const status = $("probe-status");
      status.classList.remove("error");
      status.textContent = "Probing the job's pairs and hosts through their agents…";
      const probed = new URLSearchParams(q);
      probed.set("probe", "1");
      let answer;
      try {
        answer = await getJson("/api/jobs/verdict?" + probed.toString(), token);
      } catch (e) {
        status.textContent = "Not probed: " + e.message;
        status.classList.add("error");
        return;
      }
      $("probe-token").value = "";
      showJob(answer, params);
      status.textContent = "Probed: the verdict above includes the follow-up probes.";
      status.dataset.probed = "true";
    };
  }

  // A list section, hidden when the list is empty.
  function listSection(id, items, item) {
    const list = Array.isArray(items) ? items : [];
    $(id + "-section").hidden = list.length === 0;
    $(id).replaceChildren(...list.map(item));
  }

  // A culprit (or a fault that is not the job's): where, cause, score, evidence, action.
  function culpritItem(c) {
    const where = [];
    if (c.host) where.push(h("a", { href: "/hosts/" + encodeURIComponent(c.host) }, c.host));
    if (c.component) where.push(c.component);
    return h("li", { class: "culprit", "data-layer": c.layer, "data-host": c.host, "data-component": c.component, "data-cause": c.cause },
      h("strong", null, (LAYERS[c.layer] || c.layer) + ": " + causeWords(c.cause)),
      where.length ? [" on ", where.flatMap((w, i) => (i ? [" ", w] : [w]))] : "",
      isNum(c.score) ? " · score " + fmt(c.score, 2) : "",
      h("span", { class: "evidence" }, c.evidence),
      c.candidates && c.candidates.length ? h("span", { class: "evidence" }, "one of: " + c.candidates.join(", ")) : null,
      c.action ? h("span", { class: "action" }, "Action: " + c.action) : null);
  }

  function jobHosts(hosts, culpritHosts) {
    const head = h("tr", null, ["Host", "Health", "Causes", "In the verdict"].map((t) => h("th", { scope: "col" }, t)));
    const rows = hosts.map((x) => {
      const health = x.healthy === true ? "healthy" : x.healthy === false ? "unhealthy" : "not_judged";
      const badge = health === "not_judged"
        ? h("span", { class: "badge inconclusive", title: "no run in the window: not judged" }, "not judged")
        : healthBadge(health);
      return h("tr", { "data-host": x.host, "data-health": health },
        h("td", null, h("a", { href: "/hosts/" + encodeURIComponent(x.host) }, x.host)),
        h("td", null, badge),
        h("td", null, (x.causes || []).map((c) => h("span", { class: "badge cause", "data-cause": c, title: c }, causeWords(c)))),
        h("td", null, culpritHosts.has(x.host) ? h("span", { class: "badge unhealthy" }, "culprit") : ""));
    });
    $("job-hosts").replaceChildren(h("thead", null, head), h("tbody", null, rows));
  }

  // A port id is `<switch>/<port>`; a switch's name may hold '/' itself (`MF0;ib1:SX6036/U1`).
  function splitPort(id) {
    const i = id.lastIndexOf("/");
    return i > 0 ? [id.slice(0, i), id.slice(i + 1)] : [id, ""];
  }

  function portText(p) {
    return p.port + ": " + p.state + (p.on_job_route ? ", on the job's routes" : ", off the job's routes") +
      "; errors " + fmt(p.errors_per_s, 3) + "/s, XmitWait " + fmt(p.xmit_wait_per_s, 1) + "/s";
  }

  // The ports the verdict read, one box per switch (those on the job's routes first), each
  // port a cell coloured by its state, the job's route ports outlined.
  // `unread`: why no port was read, when the collector says (it has no fabric).
  function switchPorts(ports, unread) {
    const bySwitch = new Map();
    for (const p of ports) {
      const [sw, n] = splitPort(String(p.port));
      if (!bySwitch.has(sw)) bySwitch.set(sw, []);
      bySwitch.get(sw).push({ p, n });
    }
    const onRoute = (sw) => bySwitch.get(sw).some((x) => x.p.on_job_route);
    const switches = [...bySwitch.keys()].sort((a, b) => (onRoute(b) - onRoute(a)) || naturalCompare(a, b));
    const boxes = switches.map((sw) => {
      const list = bySwitch.get(sw).sort((a, b) => naturalCompare(a.n, b.n));
      const routed = list.filter((x) => x.p.on_job_route).length;
      const bad = list.filter((x) => x.p.state !== "normal").length;
      return h("div", { class: "switch", "data-switch": sw },
        h("h3", null, sw, h("span", { class: "counts" }, list.length + (list.length === 1 ? " port, " : " ports, ") + routed + " on the job's routes, " + bad + " not normal")),
        h("div", { class: "ports" }, list.map(({ p, n }) => h("span", {
          class: "port " + p.state + (p.on_job_route ? " route" : ""), "data-port": p.port,
          "data-state": p.state, "data-route": String(p.on_job_route), title: portText(p),
          role: "img", "aria-label": portText(p) }, n || p.port))));
    });
    const none = unread
      ? "No switch port was read for this job: " + unread + "."
      : "No switch port was read for this job (see Not judged).";
    $("switches").replaceChildren(...(boxes.length ? boxes : [h("p", { class: "note", id: "switches-note" }, none)]));
    $("ports").replaceChildren(
      h("thead", null, h("tr", null, ["Port", "On the job's routes", "State", "Errors/s", "XmitWait/s"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, ports.map((p) => h("tr", { "data-port": p.port, "data-state": p.state },
        h("td", null, p.port), h("td", null, p.on_job_route ? "yes" : "no"), h("td", null, p.state),
        h("td", null, fmt(p.errors_per_s, 3)), h("td", null, fmt(p.xmit_wait_per_s, 1))))));
  }

  // The pairs probed, each with its parts and its route (ports coloured by their state when
  // the verdict read them).
  function jobPairs(pairs, portStates) {
    $("pairs-note").textContent = pairs.length
      ? pairs.length + " RNIC-to-RNIC pairs; route: switch ports from A to B."
      : "No RNIC-to-RNIC pair was probed (hostping job --probe runs them).";
    $("pairs").hidden = pairs.length === 0;
    const end = (e, endpoint) => e.host + "/" + e.rnic + (endpoint ? " (" + endpoint + ")" : "");
    const part = (us, status) => h("td", { class: "part " + status }, fmt(us, 2) + " · " + status);
    $("pairs").replaceChildren(
      h("thead", null, h("tr", null, ["A", "B", "Pair", "Latency (µs)", "Bandwidth (Gb/s)", "Host A (µs)", "Network (µs)", "Host B (µs)", "Route", "Why"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, pairs.map((p) => h("tr", { "data-pair": end(p.a) + "<->" + end(p.b), "data-status": p.status },
        h("td", null, end(p.a, p.endpoint_a)), h("td", null, end(p.b, p.endpoint_b)),
        h("td", { class: "part " + p.status }, p.status),
        h("td", null, fmt(p.latency_us, 2)), h("td", null, fmt(p.bandwidth_gbps, 1)),
        part(p.host_a_us, p.host_a_status), part(p.network_us, p.network_status), part(p.host_b_us, p.host_b_status),
        h("td", null, (p.route || []).length
          ? p.route.map((port) => h("span", { class: "chip " + (portStates.get(port) || "unread"), title: port + ": " + (portStates.get(port) || "counters not read") }, port))
          : "unknown"),
        h("td", null, p.reason || "")))));
  }

  function whatIf(w) {
    $("what-if-section").hidden = !w;
    if (!w) return;
    $("what-if").textContent = "Replayed " + w.traffic + "; explains: " + w.explains +
      (w.element ? " (" + w.element + ")" : "") + ". " + w.evidence +
      (w.suggested_mapping && w.suggested_mapping.length ? " Suggested mapping: " + w.suggested_mapping.join(", ") + "." : "");
    $("what-if-scenarios").replaceChildren(
      h("thead", null, h("tr", null, ["Scenario", "Setting", "Time (µs)", "Packets"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, (w.scenarios || []).map((x) => h("tr", null, h("td", null, x.name), h("td", null, x.setting), h("td", null, fmt(x.time_us, 1)), h("td", null, x.packets)))));
  }

  // What jobs.js uses (it runs after this script, before the page is filled).
  window.hostping = {
    h, s, $, getJson, fail, when, ago, fmt, isNum, causeWords, naturalCompare, splitPort,
    showJob, probeOffer, VERDICT_HEALTH, LAYERS,
  };

  document.addEventListener("DOMContentLoaded", () => {
    const page = document.body.dataset.page;
    if (page === "overview") overview();
    else if (page === "job") jobPage();
    else if (page === "jobs") window.hostpingJobs.jobsPage();
    else if (page === "actions") window.hostpingJobs.actionsPage();
    else hostPage();
  });
})();
