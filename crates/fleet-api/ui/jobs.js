// hostping web UI, the jobs' part (DESIGN 4.8, 4.9): the jobs list (/jobs), the actions taken
// on their verdicts (/actions) and, on the job page
// (/job), the job's collectives (its symptom, each communicator's bus bandwidth over time,
// its stragglers), the collector's own verdict for `/job?job=ID` alone, and the picture of
// the job's hosts, leaves and spines with the verdict's culprits marked. It runs after
// app.js and uses the helpers app.js shares (`window.hostping`); like app.js it puts every
// string from the API into the page as text or as an attribute value, never as markup.
"use strict";
(function () {
  const {
    h, s, $, getJson, fail, when, ago, fmt, isNum, causeWords, naturalCompare, splitPort,
    showJob, probeOffer, VERDICT_HEALTH,
  } = window.hostping;

  const jobApi = (job) => "/api/jobs/" + encodeURIComponent(job);
  const jobLink = (job) => "/job?job=" + encodeURIComponent(job);
  // Unix seconds, as the jobs' API gives times, in words.
  const secs = (t) => (isNum(t) ? when(1000 * t) : "—");
  const clock = (t) => when(1000 * t).slice(11);
  // collector::slow_jobs: a job whose collectives ended less than this ago is running, and
  // its verdict's window starts LEAD_S before the onset.
  const RUNNING_S = 600, LEAD_S = 60;
  const JUDGES = "it judges a job by itself when its collectives slow";
  // A 404 is an answer here (no verdict, no collectives), any other refusal a failure.
  const orNull = (e) => {
    if (e.status === 404) return null;
    throw e;
  };
  function bytesText(n) {
    const units = ["B", "KiB", "MiB", "GiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1 && n % 1024 === 0) { n /= 1024; i++; }
    return n + " " + units[i];
  }

  // ---- Jobs list (/jobs) ---------------------------------------------------------------

  // GET /api/jobs, slow first as the collector sorts them; each job links to its page.
  async function jobsPage() {
    let jobs;
    try {
      jobs = await getJson("/api/jobs");
    } catch (e) {
      return fail($("jobs-summary"), e);
    }
    const now = Date.now() / 1000;
    const slow = jobs.filter((j) => j.slow).length;
    const running = jobs.filter((j) => now - j.last_seen < RUNNING_S).length;
    $("jobs-summary").textContent = jobs.length
      ? jobs.length + (jobs.length === 1 ? " job: " : " jobs: ") + slow + " slow, " + running + " running"
      : "No job yet.";
    $("jobs").hidden = jobs.length === 0;
    $("jobs-empty").hidden = jobs.length > 0;
    $("jobs-agent-command").textContent =
      "hostping agent --collector " + location.origin + " --token-file FILE --nccl-dir DIR";
    $("jobs").tBodies[0].replaceChildren(...jobs.map((j) => jobRow(j, now)));
  }

  function jobRow(j, now) {
    const state = j.slow
      ? h("span", { class: "badge unhealthy", title: "its collectives' bus bandwidth dropped" }, "slow")
      : h("span", { class: "badge healthy", title: "its collectives kept their level" }, "not slow");
    const bw = isNum(j.busbw_gbs)
      ? fmt(j.busbw_gbs, 1) + (isNum(j.expected_gbs) ? " of " + fmt(j.expected_gbs, 1) + " expected" : "")
      : "—";
    const verdict = j.verdict
      ? [h("span", { class: "badge " + (VERDICT_HEALTH[j.verdict] || ""), "data-verdict": j.verdict }, j.verdict),
        " at " + secs(j.verdict_at)]
      : j.slow ? "not judged yet" : "not judged (not slow)";
    const seen = 1000 * j.last_seen;
    const nodes = j.nodes || [];
    return h("tr", { "data-job": j.job, "data-slow": String(j.slow) },
      h("td", null, h("a", { href: jobLink(j.job) }, j.job)),
      h("td", null, state),
      h("td", null, secs(j.since)),
      h("td", { title: "the hardest-hit communicator's bus bandwidth (during the slowdown when slow)" +
        (isNum(j.expected_gbs) ? "" : "; what its links allow is not known") }, bw),
      h("td", { class: "nodes", title: nodes.join(", ") }, nodes.length + (nodes.length === 1 ? " node" : " nodes")),
      h("td", { class: "verdict-cell" }, verdict),
      h("td", null, when(seen) + " (" + (now - j.last_seen < RUNNING_S ? "running, " : "") + ago(seen) + ")"));
  }

  // ---- Actions (/actions, DESIGN 4.9) ---------------------------------------------------

  // GET /api/actions, newest first: each action's state, target, why and what it wins back;
  // a refused one names the limit that refused it.
  async function actionsPage() {
    let actions;
    try {
      actions = await getJson("/api/actions");
    } catch (e) {
      return fail($("actions-summary"), e);
    }
    const count = (state) => actions.filter((a) => a.state === state).length;
    $("actions-summary").textContent = actions.length
      ? actions.length + (actions.length === 1 ? " action: " : " actions: ") + count("taken") + " taken, " +
        count("proposed") + " proposed, " + count("refused") + " refused"
      : "No action.";
    $("actions").hidden = actions.length === 0;
    $("actions-empty").hidden = actions.length > 0;
    $("actions").tBodies[0].replaceChildren(...actions.map(actionRow));
  }

  const ACTION_HEALTH = { taken: "unhealthy", failed: "unhealthy", refused: "inconclusive", proposed: "inconclusive",
    resumed: "healthy", resolved: "healthy", undone: "healthy" };

  function actionRow(a) {
    const target = a.host || (a.ends && a.ends.length ? a.ends.join(" – ") : a.component || "—");
    const won = a.wins_back
      ? (a.wins_back.to_us / 1000).toFixed(1) + " ms from " + (a.wins_back.from_us / 1000).toFixed(1) + " ms"
      : "not estimated";
    const why = [a.why];
    if (a.refused_by) why.unshift(h("strong", { class: "refused-by" }, "refused: " + a.refused_by), " ");
    if (a.outcome) why.push(" ", h("em", null, a.outcome));
    return h("tr", { "data-id": String(a.id), "data-kind": a.kind, "data-state": a.state },
      h("td", null, isNum(a.at_unix_ms) ? when(a.at_unix_ms) : "—"),
      h("td", null, a.kind, h("br"), h("code", { class: "reason" }, a.reason)),
      h("td", null, h("span", { class: "badge " + (ACTION_HEALTH[a.state] || "") }, a.state)),
      h("td", { title: (a.hosts || []).length ? "hosts whose jobs cross it: " + a.hosts.join(", ") : "" }, target),
      h("td", null, a.cause + (a.component && a.host ? " at " + a.component : "")),
      h("td", null, a.job ? h("a", { href: jobLink(a.job) }, a.job) : "—"),
      h("td", { class: "wins-back" }, won),
      h("td", { class: "why" }, ...why));
  }

  // ---- Job page: the job alone ---------------------------------------------------------

  // `/job?job=ID` without nodes or window: the collector's own verdict on the job when it
  // reached one (GET /api/jobs/{job}/verdict), the form filled with the job's hosts (its
  // entry in GET /api/jobs) and the verdict's window; without one, the job's symptom and
  // that the collector has not judged it.
  async function jobAlone(job) {
    const name = () => {
      $("job-title").textContent = "Job " + job;
      document.title = "Job " + job + " · hostping";
    };
    name();
    $("job-status").textContent = "Reading job " + job + "…";
    let stored, entry;
    try {
      stored = await getJson(jobApi(job) + "/verdict").catch(orNull);
      entry = (await getJson("/api/jobs")).find((j) => j.job === job) || null;
    } catch (e) {
      return fail($("job-status"), e);
    }
    const nodes = entry ? entry.nodes : stored ? stored.report.nodes : [];
    const form = $("job-form");
    if (nodes.length) form.elements.nodes.value = nodes.join(",");
    if (stored) {
      // The window the collector judged over (collector::slow_jobs), for the form and the
      // probe follow-up.
      const judgedOver = new URLSearchParams({
        nodes: nodes.join(","), since: String(Math.floor(stored.onset_s) - LEAD_S),
        until: String(Math.ceil(stored.judged_at)), job,
      });
      form.elements.since.value = judgedOver.get("since");
      form.elements.until.value = judgedOver.get("until");
      showJob(stored.report, judgedOver);
      // (showJob names the page after the report's job, which a report need not name.)
      name();
      probeOffer(stored.report, judgedOver, judgedOver);
      $("job-status").textContent = "Judged by the collector by itself at " + secs(stored.judged_at) +
        (stored.probed ? ", with probes" : ", on what it held (no probes)") + "; " +
        stored.report.nodes.length + " hosts, " + secs(stored.onset_s - LEAD_S) + " to " + secs(stored.judged_at);
    }
    const held = await collectives(job, stored);
    if (!stored) {
      $("job-status").textContent = held
        ? "Not judged by the collector: " + JUDGES + ". Judge it with the form (its hosts are filled in)."
        : "The collector holds no collectives of job " + job + ": enter its nodes and window, then Judge.";
    }
  }

  // ---- Job page: collectives -----------------------------------------------------------

  // The job's symptom (GET /api/jobs/{job}/symptom) and series (GET /api/jobs/{job}/busbw)
  // over the collector's default window (the last 24 h); hidden when it holds none. `stored`:
  // the collector's own verdict, null when it has none, undefined when not asked yet (the
  // page shows another verdict: this one is linked). Whether the collector holds
  // collectives of the job.
  async function collectives(job, stored) {
    const section = $("collectives-section");
    const elsewhere = stored === undefined;
    let symptom;
    try {
      symptom = await getJson(jobApi(job) + "/symptom").catch(orNull);
      if (symptom && elsewhere) stored = await getJson(jobApi(job) + "/verdict").catch(orNull);
    } catch (e) {
      section.hidden = false;
      fail($("symptom-summary"), e);
      return false;
    }
    if (!symptom) return false;
    section.hidden = false;
    const judged = $("job-judged");
    judged.dataset.judged = String(Boolean(stored));
    if (stored) {
      judged.replaceChildren("The collector judged this job by itself at " + secs(stored.judged_at) + ": ",
        h("span", { class: "badge " + (VERDICT_HEALTH[stored.report.verdict] || "") }, stored.report.verdict),
        " for the slowdown from " + secs(stored.onset_s),
        ...(elsewhere ? [" (", h("a", { href: jobLink(job) }, "its verdict"), ")"] : []), ".");
    } else {
      judged.textContent = "The collector has not judged this job: " + JUDGES + ".";
    }
    symptomSummary(symptom);
    stragglers(symptom.stragglers || []);
    communicators(symptom.communicators || []);
    try {
      const busbw = await getJson(jobApi(job) + "/busbw");
      busbwChart(busbw, symptom);
    } catch (e) {
      fail($("busbw-chart"), e);
    }
    return true;
  }

  function symptomSummary(x) {
    const bw = x.busbw_gbs || {};
    const expected = isNum(bw.expected) ? ", " + fmt(bw.expected, 1) + " GB/s expected" : "";
    const el = $("symptom-summary");
    el.dataset.slow = String(x.slow);
    const badge = x.slow
      ? h("span", { class: "badge unhealthy" }, "slow")
      : h("span", { class: "badge healthy" }, "not slow");
    let words;
    if (x.slow && isNum(bw.before)) {
      words = "Slow since " + secs(x.since) + ": the hardest-hit communicator's bus bandwidth fell from " +
        fmt(bw.before, 1) + " to " + fmt(bw.during, 1) + " GB/s" + expected + ".";
    } else if (x.slow) {
      words = "Slow since " + secs(x.since) + ": " + fmt(bw.during, 1) + " GB/s, under half of what a ring of its size reaches on its links" + expected + ".";
    } else {
      words = "No slowdown: its collectives kept their level (" + fmt(bw.before, 1) + " GB/s" + expected + ").";
    }
    el.replaceChildren(badge, " ", words, h("span", { class: "evidence" },
      x.records + " records read" + (x.skipped && x.skipped.bad_records ? ", " + x.skipped.bad_records + " bad" : "") + "."));
  }

  // DESIGN 4.8's series: each communicator, collective and size as one line, the median
  // over its ranks per time bucket (x time, y GB/s), the onset a vertical line, the expected
  // rate dashed. The axes' scale is in the chart's data attributes, as drawn.
  function busbwChart(answer, symptom) {
    const series = answer.series || [];
    const points = series.flatMap((x) => x.points);
    const legend = $("busbw-legend");
    if (!points.length) {
      $("busbw-chart").replaceChildren(h("p", { class: "note" }, "No bucket to draw."));
      legend.replaceChildren();
      return;
    }
    const W = 760, H = 290, left = 60, top = 24, width = 680, height = 220;
    const t0 = Math.min(...points.map((p) => p.start_s));
    const t1 = Math.max(...points.map((p) => p.start_s));
    const span = t1 > t0 ? t1 - t0 : 1;
    const expected = symptom.busbw_gbs ? symptom.busbw_gbs.expected : null;
    const ymax = Math.max(1e-9, ...points.map((p) => p.busbw_gbs), isNum(expected) ? expected : 0) * 1.1;
    const xOf = (t) => left + ((t - t0) / span) * width;
    const yOf = (v) => top + height - (v / ymax) * height;
    const chart = s("svg", {
      id: "busbw-svg", viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
      "aria-label": "bus bandwidth over time of " + series.length + " communicator series",
      "data-t0": t0, "data-t1": t1, "data-left": left, "data-width": width, "data-top": top,
      "data-height": height, "data-ymax": ymax,
    },
    s("text", { x: left, y: top - 10, class: "title" }, "bus bandwidth (GB/s)"),
    s("line", { class: "axis", x1: left, y1: top + height, x2: left + width, y2: top + height }),
    s("line", { class: "axis", x1: left, y1: top, x2: left, y2: top + height }),
    s("text", { x: left - 4, y: top + 8, "text-anchor": "end" }, fmt(ymax, 1)),
    s("text", { x: left - 4, y: top + height, "text-anchor": "end" }, "0"),
    s("text", { x: left, y: H - 8 }, secs(t0)),
    s("text", { x: left + width, y: H - 8, "text-anchor": "end" }, secs(t1)));
    if (isNum(expected)) {
      chart.append(s("line", { class: "expected", x1: left, y1: yOf(expected), x2: left + width, y2: yOf(expected), "data-gbs": expected },
        s("title", null, "expected " + fmt(expected, 1) + " GB/s (what the job's links allow)")));
    }
    series.forEach((line, i) => {
      const name = line.communicator + " " + line.collective + " " + bytesText(line.bytes);
      const coords = line.points.map((p) => xOf(p.start_s).toFixed(1) + "," + yOf(p.busbw_gbs).toFixed(1));
      const attrs = {
        class: "busbw c" + (i % 8), "data-communicator": line.communicator, "data-collective": line.collective,
        "data-bytes": line.bytes, "data-points": line.points.length,
      };
      const title = s("title", null, name + ", " + line.ranks + " ranks: " + line.points.length + " points");
      chart.append(coords.length > 1
        ? s("polyline", Object.assign(attrs, { points: coords.join(" ") }), title)
        : s("circle", Object.assign(attrs, { cx: coords[0].split(",")[0], cy: coords[0].split(",")[1], r: 3 }), title));
    });
    const onset = symptom.since;
    if (isNum(onset) && onset >= t0 && onset <= t1) {
      const ox = xOf(onset).toFixed(1);
      chart.append(
        s("line", { id: "busbw-onset", class: "onset", x1: ox, y1: top, x2: ox, y2: top + height, "data-onset-s": onset },
          s("title", null, "onset " + secs(onset))),
        s("text", { class: "onset", x: Number(ox) + 4, y: top + 10 }, "onset " + clock(onset)));
    }
    $("busbw-chart").replaceChildren(chart);
    legend.replaceChildren(...series.map((line, i) => {
      const last = line.points[line.points.length - 1];
      return h("li", { "data-communicator": line.communicator },
        h("span", { class: "swatch c" + (i % 8) }),
        line.communicator + " " + line.collective + " " + bytesText(line.bytes) + " · " + line.ranks + " ranks · now " +
          fmt(last.busbw_gbs, 1) + " GB/s");
    }));
    if (answer.truncated) legend.append(h("li", { class: "note" }, "Older collectives in the window were not read (the collector's cap)."));
  }

  // The ranks that start their collectives late, again and again (DESIGN 4.8).
  function stragglers(list) {
    $("stragglers-note").textContent = list.length
      ? "Ranks that start the same collective late, again and again, while the others wait: their hosts are culprits."
      : "No straggler: no rank starts its collectives late again and again.";
    $("stragglers").hidden = list.length === 0;
    $("stragglers").replaceChildren(
      h("thead", null, h("tr", null, ["Rank", "Host", "GPU", "Communicator", "Late by (ms)", "Collectives late"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, list.map((x) => h("tr", { "data-rank": x.rank, "data-host": x.host },
        h("td", null, x.rank),
        h("td", null, h("a", { href: "/hosts/" + encodeURIComponent(x.host) }, x.host)),
        h("td", null, x.gpu || "—"), h("td", null, x.communicator),
        h("td", null, fmt(x.late_us / 1000, 1)), h("td", null, x.collectives)))));
  }

  // The GPU index every rank of a communicator across hosts drives (its rail), and the
  // RNICs nearest it where the verdict placed them; a dash when it has no rail.
  function railText(c) {
    if (c.rail === null || c.rail === undefined) return "\u2014";
    const rnics = [...new Set((c.places || []).map((p) => p.rnic).filter(Boolean))];
    return "rail " + c.rail + " (gpu" + c.rail + (rnics.length ? " through " + rnics.join(" or ") : "") + ")";
  }

  function communicators(list) {
    $("communicators").replaceChildren(
      h("thead", null, h("tr", null, ["Communicator", "Collective", "Size", "Ranks", "Hosts", "Rail", "Slow since", "Bus bandwidth (GB/s)"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, list.map((c) => h("tr", { "data-communicator": c.id, "data-slow": String(c.slow) },
        h("td", null, c.id), h("td", null, c.collective), h("td", null, bytesText(c.bytes)), h("td", null, c.ranks),
        h("td", { title: (c.hosts || []).join(", ") }, c.nnodes), h("td", { class: "rail" }, railText(c)),
        h("td", null, c.slow ? secs(c.since) : "not slow"),
        h("td", null, fmt(c.busbw_gbs, 1))))));
  }

  // ---- Job page: hosts, leaves and spines ----------------------------------------------

  // The job's hosts (bottom row), the switches the verdict names (its ports, its pairs'
  // routes, its fabric culprits' components; `spine...` on top, the others in the middle)
  // and the lines the pairs' routes give (host to its first switch, switch to switch, last
  // switch to the other host), culprits in the abnormal colour with their causes as titles.
  // Only what the report says is drawn (DESIGN 4.7, 4.8): without a named switch, the hosts
  // alone.
  function picture(report) {
    const hosts = new Set(report.nodes || []);
    const causes = new Map();
    const mark = (name, why) => causes.set(name, (causes.get(name) || []).concat([why]));
    const cables = new Map();
    const switches = new Set();
    for (const c of report.culprits || []) {
      const why = causeWords(c.cause) + (c.component ? " (" + c.component + ")" : "");
      if (c.host) {
        hosts.add(c.host);
        mark(c.host, why);
      } else if (c.layer === "fabric") {
        // A cable is named by either end (DESIGN 4.6): a switch port, or a host's RNIC; when
        // the evidence leaves several, the culprit is one of its candidates, and their switch
        // is marked only when they all lie on one.
        const ports = c.component ? [c.component] : c.candidates || [];
        const ends = new Set(ports.map((p) => splitPort(p)[0]));
        const said = c.component ? why : why + ", one of " + ports.join(", ");
        for (const p of ports) cables.set(p, said);
        if (ends.size !== 1) continue;
        const [end] = ends;
        if (!hosts.has(end)) switches.add(end);
        mark(end, said);
      }
    }
    for (const p of report.ports || []) switches.add(splitPort(String(p.port))[0]);
    const wires = new Map();
    const wire = (a, b, ports) => {
      const key = a < b ? a + "|" + b : b + "|" + a;
      const w = wires.get(key) || { a, b, ports: new Set() };
      ports.forEach((p) => w.ports.add(p));
      wires.set(key, w);
    };
    for (const p of report.pairs || []) {
      const route = (p.route || []).map(String);
      if (!route.length) continue;
      // The route's ports by switch, in order: hops between consecutive switches.
      const hops = [];
      for (const port of route) {
        const [sw] = splitPort(port);
        switches.add(sw);
        if (!hops.length || hops[hops.length - 1].sw !== sw) hops.push({ sw, ports: [] });
        hops[hops.length - 1].ports.push(port);
      }
      const first = hops[0], last = hops[hops.length - 1];
      wire(p.a.host, first.sw, [first.ports[0], p.a.host + "/" + p.a.rnic]);
      for (let i = 1; i < hops.length; i++) {
        wire(hops[i - 1].sw, hops[i].sw, [hops[i - 1].ports[hops[i - 1].ports.length - 1], hops[i].ports[0]]);
      }
      wire(last.sw, p.b.host, [last.ports[last.ports.length - 1], p.b.host + "/" + p.b.rnic]);
    }
    for (const x of hosts) switches.delete(x);
    const isSpine = (n) => /^spine/i.test(n);
    const rows = [
      [...switches].filter(isSpine).sort(naturalCompare),
      [...switches].filter((n) => !isSpine(n)).sort(naturalCompare),
      [...hosts].sort(naturalCompare),
    ].filter((r) => r.length);
    const kind = (n) => (hosts.has(n) ? "host" : isSpine(n) ? "spine" : "leaf");
    const gap = 16, nodeH = 24, rowH = 80;
    const nodeW = (n) => Math.max(72, 7 * n.length + 14);
    const rowWidth = (r) => r.reduce((sum, n) => sum + nodeW(n) + gap, -gap);
    const W = Math.max(...rows.map(rowWidth)) + 20;
    const pos = new Map();
    rows.forEach((r, i) => {
      let xx = 10 + (W - 20 - rowWidth(r)) / 2;
      for (const n of r) {
        pos.set(n, { x: xx, y: 10 + i * rowH, w: nodeW(n) });
        xx += nodeW(n) + gap;
      }
    });
    const mid = (n) => [pos.get(n).x + pos.get(n).w / 2, pos.get(n).y + nodeH / 2];
    const H = 10 + (rows.length - 1) * rowH + nodeH + 10;
    const chart = s("svg", { id: "picture-svg", viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
      "aria-label": "the job's " + hosts.size + " hosts and " + switches.size + " switches, culprits marked" });
    for (const w of wires.values()) {
      if (!pos.has(w.a) || !pos.has(w.b)) continue;
      const bad = [...w.ports].filter((p) => cables.has(p));
      const [x1, y1] = mid(w.a), [x2, y2] = mid(w.b);
      chart.append(s("line", { class: "wire" + (bad.length ? " culprit" : ""), x1, y1, x2, y2, "data-from": w.a, "data-to": w.b },
        s("title", null, w.a + " – " + w.b + ": " + [...w.ports].join(", ") + (bad.length ? "; " + bad.map((p) => cables.get(p)).join("; ") : ""))));
    }
    for (const [n, p] of pos) {
      const why = causes.get(n);
      chart.append(s("g", { "data-node": n, "data-kind": kind(n), "data-culprit": String(Boolean(why)) },
        s("title", null, n + (why ? ": " + why.join("; ") : "")),
        s("rect", { class: "node " + kind(n) + (why ? " culprit" : ""), x: p.x, y: p.y, width: p.w, height: nodeH, rx: 3 }),
        s("text", { class: why ? "on-culprit" : null, x: p.x + p.w / 2, y: p.y + 16, "text-anchor": "middle" }, n)));
    }
    $("picture").replaceChildren(chart);
    $("picture-note").textContent = switches.size
      ? switches.size + " switches named by the verdict's ports, routes and culprits; lines where its routes link them" +
        ((report.pairs || []).length ? "." : " (no pair was probed: no route links them to the hosts).")
      : "The verdict names no switch: the fabric is not known to the collector (hostping collector --fabric FILE), so only the job's hosts are drawn.";
  }

  window.hostpingJobs = { jobsPage, jobAlone, collectives, picture, actionsPage };
})();
