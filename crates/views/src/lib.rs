//! Views for people, as strings, for the commands to print: the bandwidth matrix of Hostping
//! Figure 8 with the diagnoses in plain words (`check`), a host's topology and what discovery
//! found (`topology`), the configuration lint, the counters and the IOTLB sweep. Colour only
//! when writing to a terminal (and `NO_COLOR` unset); every status also has a text marker, so
//! plain text and colour-blind readers lose nothing. A library, like ripgrep's printer, so
//! that the binary holds flags and wiring, and the views are tested without it.
//!
//! It must not: print, read a file or a device, or judge (the reports it shows were judged
//! by `analyze`).

#![deny(missing_docs)]

use model::{
    CounterReport, HostTopology, LinkStatus, LinkTraining, PathReport, PathStatus, Provenance,
    Report, SourceStatus,
};
use std::fmt::Write;

/// ANSI styling, on or off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Whether to emit colour codes.
    pub color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is not set.
    pub fn for_stdout() -> Style {
        use std::io::IsTerminal;
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// `text` in the SGR colour `code`, when colour is on.
    pub fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Healthy, normal.
    pub fn green(self, t: &str) -> String {
        self.paint("32", t)
    }
    /// A finding.
    pub fn red(self, t: &str) -> String {
        self.paint("1;31", t)
    }
    /// The colour of "inconclusive": neither healthy green nor finding red.
    pub fn yellow(self, t: &str) -> String {
        self.paint("1;33", t)
    }
    /// What matters less: notes, units, what was not judged.
    pub fn gray(self, t: &str) -> String {
        self.paint("90", t)
    }
    /// A heading.
    pub fn bold(self, t: &str) -> String {
        self.paint("1", t)
    }
}

const CELL: usize = 8;

/// How a matrix cell is judged: a path status, or not at all (a streaming result).
#[derive(Debug, Clone, Copy)]
enum Judged {
    Status(PathStatus),
    Unjudged,
}

fn cell(style: Style, value: Option<f64>, judged: Judged, decimals: usize) -> String {
    let Some(v) = value else {
        return style.gray(&format!("{:>w$}", "fail?", w = CELL));
    };
    let marker = match judged {
        Judged::Status(PathStatus::Abnormal) => '*',
        Judged::Status(PathStatus::Uncertain) => '~',
        Judged::Status(PathStatus::Normal) | Judged::Unjudged => ' ',
    };
    let text = format!("{:>w$.d$}{marker}", v, w = CELL - 1, d = decimals);
    match judged {
        Judged::Status(PathStatus::Abnormal) => style.red(&text),
        Judged::Status(PathStatus::Uncertain) => style.gray(&text),
        Judged::Status(PathStatus::Normal) => style.green(&text),
        Judged::Unjudged => text,
    }
}

fn matrix(
    out: &mut String,
    style: Style,
    host: &HostTopology,
    report: &Report,
    title: &str,
    value: impl Fn(&PathReport) -> (Option<f64>, Judged),
    decimals: usize,
) {
    let endpoints: Vec<_> = host.endpoints().map(|e| e.id.clone()).collect();
    out.push_str(&style.bold(&format!("{title:<14}")));
    for e in &endpoints {
        let _ = write!(out, "{:>w$}", e.as_str(), w = CELL);
    }
    out.push('\n');
    for rnic in host.rnics() {
        let _ = write!(out, "{:<14}", rnic.id.as_str());
        for e in &endpoints {
            match report
                .paths
                .iter()
                .find(|p| p.rnic == rnic.id && &p.endpoint == e)
            {
                Some(p) => {
                    let (v, judged) = value(p);
                    out.push_str(&cell(style, v, judged, decimals));
                }
                None => {
                    let _ = write!(out, "{}", style.gray(&format!("{:>w$}", ".", w = CELL)));
                }
            }
        }
        out.push('\n');
    }
}

/// The report of one run: matrices, links that are not normal, and the diagnoses.
pub fn report(host: &HostTopology, report: &Report, runs: u32, style: Style) -> String {
    let mut out = String::new();
    let mode = match report.mode {
        model::Mode::Idle => "idle: full mesh",
        model::Mode::Busy => "busy: affinitive paths only",
    };
    let provenance = match report.provenance {
        model::Provenance::Simulated => "SIMULATED (virtual host)",
        model::Provenance::Measured => "MEASURED (libibverbs)",
    };
    let _ = writeln!(
        out,
        "{} - run {}/{} - {} ({} paths) - {}",
        style.bold(&report.host),
        report.run + 1,
        runs,
        mode,
        report.paths.len(),
        provenance
    );
    if let Some(kind) = report.baseline {
        let against = match kind {
            model::BaselineKind::Recorded => "the baseline file",
            model::BaselineKind::Simulated => "a healthy virtual host of the same model",
            model::BaselineKind::Relative => {
                "no baseline file: line rate (affinitive paths of hardware RNICs) and like paths of this run"
            }
        };
        let _ = writeln!(out, "judged against {against}");
    }
    out.push('\n');
    matrix(
        &mut out,
        style,
        host,
        report,
        "Gb/s (eq. 3)",
        |p| (p.bandwidth_gbps, Judged::Status(p.status)),
        1,
    );
    out.push('\n');
    matrix(
        &mut out,
        style,
        host,
        report,
        "latency us",
        |p| {
            let status = if p.latency_abnormal {
                PathStatus::Abnormal
            } else {
                PathStatus::Normal
            };
            (p.latency_us, Judged::Status(status))
        },
        2,
    );
    if let Some(stream) = report.paths.iter().find_map(|p| p.stream.as_ref()) {
        out.push('\n');
        let title = format!("stream {}x{}", stream.qps, stream.depth);
        // Streams are reported, not judged: no colour, no marker.
        let value = |p: &PathReport| {
            (
                p.stream.as_ref().map(|s| s.bandwidth_gbps),
                Judged::Unjudged,
            )
        };
        matrix(&mut out, style, host, report, &title, value, 1);
    }
    let _ = writeln!(
        out,
        "\n  {}  * abnormal (below baseline by Abnormal_th, or latency above it)   ~ uncertain   . not probed",
        style.gray("legend:")
    );

    let odd: Vec<_> = report
        .links
        .iter()
        .filter(|l| matches!(l.status, LinkStatus::Abnormal | LinkStatus::Gray))
        .collect();
    if !odd.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("links"));
        for l in odd {
            let status = match l.status {
                LinkStatus::Abnormal => style.red("abnormal"),
                _ => style.gray("gray    "),
            };
            let util = l
                .utilisation
                .map(|u| format!("  utilisation {:.0} %", u * 100.0))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<16} {:<15} {}  abnormal_cnt {}{}",
                l.id.as_str(),
                l.kind.as_str(),
                status,
                l.abnormal_cnt,
                util
            );
        }
    }

    let failed: Vec<&PathReport> = report.paths.iter().filter(|p| p.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("paths not measured"));
        for p in &failed {
            let error = p.error.as_deref().unwrap_or_default();
            let line = format!("{}->{}: {error}", p.rnic, p.endpoint);
            let line = if p.unavailable {
                style.gray(&line)
            } else {
                style.red(&line)
            };
            let _ = writeln!(out, "  {line}");
        }
    }

    out.push('\n');
    let abnormal = report
        .paths
        .iter()
        .any(|p| p.status == PathStatus::Abnormal);
    if report.healthy {
        let _ = writeln!(
            out,
            "{}",
            style.green("healthy: every link judged, every path meets its baseline; no intra-host bottleneck.")
        );
    } else if !report.diagnoses.is_empty() {
        let _ = writeln!(out, "{}", style.bold("diagnosis"));
        for (i, d) in report.diagnoses.iter().enumerate() {
            let mut head = d.cause.as_str().to_string();
            if !d.links.is_empty() {
                let links: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
                head.push_str(&format!(" on {}", links.join(", ")));
            }
            if let Some(r) = &d.rnic {
                head.push_str(&format!(" (rnic {r})"));
            }
            let _ = writeln!(out, "  {}. {}", i + 1, style.red(&head));
            for line in wrap(&d.evidence, 92) {
                let _ = writeln!(out, "     {line}");
            }
        }
    } else if abnormal {
        let _ = writeln!(
            out,
            "{}",
            style.red("abnormal paths, but every link on them is also on a normal path (gray): a link may be flapping. Run again (--runs 3): gray in 3 consecutive runs is flapping.")
        );
    } else if !check::pipeline::failed_paths(report).is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.red("no bottleneck among the measured paths, but some probes failed (above): the check is incomplete.")
        );
    }
    bounded(&mut out, report, style);
    not_judged(&mut out, report, style);
    out
}

/// Links judged only by latency-bound paths (DESIGN 4.3 `links[].bound`): normal, but only
/// down to the loss those paths could have shown, which is said for each.
fn bounded(out: &mut String, report: &Report, style: Style) {
    let bounded: Vec<_> = report
        .links
        .iter()
        .filter_map(|l| l.bound.as_ref().map(|b| (l, b)))
        .collect();
    if bounded.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n{}",
        style.bold(
            "judged down to a bound (only latency-bound paths cross these links, Hostping 3.2.2)"
        )
    );
    for (l, b) in bounded {
        let _ = writeln!(
            out,
            "  {:<16} normal: a loss above {:.0} % of its capacity (below {:.1} Gb/s) would have shown on {} ({} path(s))",
            l.id.as_str(),
            b.loss_above * 100.0,
            b.below_gbps,
            b.path,
            b.paths.len()
        );
    }
}

/// What was not judged and why (DESIGN 4.3 `not_judged`), under the word "inconclusive"
/// when it leaves links unjudged.
fn not_judged(out: &mut String, report: &Report, style: Style) {
    if report.not_judged.is_empty() && !report.inconclusive {
        return;
    }
    if report.inconclusive {
        let also = if report.diagnoses.is_empty() {
            ""
        } else {
            "also "
        };
        let _ = writeln!(
            out,
            "\n{}",
            style.yellow(&format!(
                "{also}inconclusive: some links could not be judged, so the host is not called healthy (exit status 3 unless a finding above gives 1)."
            ))
        );
    } else {
        let _ = writeln!(
            out,
            "\n{}",
            style.bold("not judged (every link was judged by other paths)")
        );
    }
    for n in &report.not_judged {
        let _ = writeln!(out, "  {}", style.yellow(n.reason.as_str()));
        if !n.paths.is_empty() {
            let _ = writeln!(out, "    paths ({}): {}", n.paths.len(), some_of(&n.paths));
        }
        if !n.links.is_empty() {
            let links: Vec<&str> = n.links.iter().map(|l| l.as_str()).collect();
            let _ = writeln!(out, "    links ({}): {}", links.len(), some_of(&links));
        }
        for line in wrap(&n.detail, 90) {
            let _ = writeln!(out, "    {line}");
        }
    }
}

/// The first few of a list, and how many more (`--format json` has them all).
fn some_of<T: AsRef<str>>(items: &[T]) -> String {
    const SHOWN: usize = 8;
    let mut text = items
        .iter()
        .take(SHOWN)
        .map(|i| i.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text += &format!(" and {} more", items.len() - SHOWN);
    }
    text
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The topology: components, links, paths and affinity.
pub fn topology(host: &HostTopology) -> String {
    use model::ComponentKind as K;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}\n", host.name, host.description);
    let _ = writeln!(out, "components ({})", host.components().len());
    for c in host.components() {
        let detail = match &c.kind {
            K::Cpu { p2p_forward_ns } => format!("root-complex P2P forwarding {p2p_forward_ns} ns"),
            K::Memory { access_ns } => format!("DRAM access {access_ns} ns"),
            K::PcieSwitch => String::new(),
            K::Gpu { access_ns } => format!("memory access {access_ns} ns"),
            K::Rnic(r) => format!(
                "{} Gb/s, T_proc {} ns, read window {} B, QP window {} B",
                r.line_rate_gbps, r.proc_ns, r.read_window_bytes, r.qp_window_bytes
            ),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:<12} socket {:<5} {}",
            c.id.as_str(),
            c.class().as_str(),
            c.socket.as_str(),
            detail
        );
    }
    let _ = writeln!(out, "\nlinks ({})", host.links().len());
    let _ = writeln!(
        out,
        "  {:<14} {:<15} {:>12} {:>10}",
        "id", "kind", "capacity", "latency"
    );
    for l in host.links() {
        // A placeholder capacity is not shown as one (a VM's emulated bridges).
        let capacity = match l.capacity_known {
            true => format!("{:.1} Gb/s", l.capacity_gbps),
            false => "unknown".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<14} {:<15} {:>12} {:>7} ns",
            l.id.as_str(),
            l.kind.as_str(),
            capacity,
            l.latency_ns
        );
    }
    let _ = writeln!(
        out,
        "\npaths ({}; A = affinitive, RC = peer-to-peer through a root complex)",
        host.paths().len()
    );
    for p in host.paths() {
        let tag = match (p.affinitive, p.p2p_through_cpu) {
            (true, _) => "A ",
            (false, true) => "RC",
            (false, false) => "  ",
        };
        let links: Vec<&str> = p.links.iter().map(|l| l.as_str()).collect();
        let _ = writeln!(
            out,
            "  {:<6} -> {:<6} {}  {}",
            p.rnic.as_str(),
            p.endpoint.as_str(),
            tag,
            links.join("  ")
        );
    }
    let _ = writeln!(out, "\naffinity (endpoints each RNIC reaches at line rate)");
    for r in host.rnics() {
        let eps: Vec<&str> = host
            .affinitive_endpoints(&r.id)
            .map(|e| e.as_str())
            .collect();
        let _ = writeln!(out, "  {:<8} {}", r.id.as_str(), eps.join(" "));
    }
    out
}

/// The topology as JSON: the model plus an `affinity` map.
pub fn topology_json(host: &HostTopology) -> serde_json::Value {
    let mut v = serde_json::to_value(host).expect("topology serialises");
    let affinity: serde_json::Map<String, serde_json::Value> = host
        .rnics()
        .map(|r| {
            let eps: Vec<&str> = host
                .affinitive_endpoints(&r.id)
                .map(|e| e.as_str())
                .collect();
            (r.id.to_string(), serde_json::json!(eps))
        })
        .collect();
    v["affinity"] = serde_json::Value::Object(affinity);
    v
}

/// What discovery found on a real host (`hostping topology` without `--sim`): NUMA nodes,
/// RDMA ports, GPUs and notes, then the host model built from them, if any.
pub fn discovery(d: &rdma::sysfs::Discovery) -> String {
    let mut out = String::new();
    let b = &d.bindings;
    let _ = writeln!(
        out,
        "discovered from sysfs: host {}\n",
        d.hostname.as_deref().unwrap_or("(no hostname)")
    );
    let _ = writeln!(out, "NUMA nodes ({})", d.numa_nodes.len());
    for n in &d.numa_nodes {
        let memory = n
            .mem_total_kib
            .map(|k| format!("{:.1} GiB", k as f64 / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "memory not reported".into());
        let model_id = b
            .memory
            .iter()
            .find(|(_, node)| *node == n.id)
            .map(|(id, _)| id.as_str());
        let _ = writeln!(
            out,
            "  node{:<3} cpus {:<12} {:<14} {}",
            n.id,
            if n.cpulist.is_empty() {
                "-"
            } else {
                &n.cpulist
            },
            memory,
            model_id.map(|m| format!("-> {m}")).unwrap_or_default()
        );
    }
    let _ = writeln!(out, "\nsockets ({})", d.sockets.sockets.len());
    for s in &d.sockets.sockets {
        let nodes: Vec<String> = s.memory_nodes.iter().map(|n| format!("node{n}")).collect();
        let _ = writeln!(out, "  cpu{:<5} memory {}", s.package, nodes.join(" "));
    }
    let links: Vec<String> = d
        .sockets
        .links
        .iter()
        .map(|(a, b)| format!("cpu{a}--cpu{b}"))
        .collect();
    let _ = writeln!(
        out,
        "  inter-socket links: {}",
        if links.is_empty() {
            "none".to_string()
        } else {
            links.join(" ")
        }
    );
    if d.virtual_machine {
        let _ = writeln!(
            out,
            "  a virtual machine: its PCIe bridges' link values are not the hardware's"
        );
    }
    let _ = writeln!(out, "\nRDMA ports ({})", d.rdma_ports.len());
    if d.rdma_ports.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for p in &d.rdma_ports {
        let model_id = b
            .rnics
            .iter()
            .find(|(_, r)| r.device == p.device && r.port == p.port)
            .map(|(id, _)| format!("-> {id}"));
        let rate = p
            .rate
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "rate ?".into());
        let attach = match (&p.pci, &p.netdev) {
            (Some(pci), Some(n)) => format!("pci {pci} netdev {n}"),
            (Some(pci), None) => format!("pci {pci}"),
            (None, Some(n)) => format!("netdev {n}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<8} port {} {:<7} {:<22} {:?}{}  {}  {}",
            p.device,
            p.port,
            p.state.to_string(),
            rate,
            p.link_layer,
            if p.software { " (software)" } else { "" },
            attach,
            model_id.unwrap_or_default()
        );
    }
    let _ = writeln!(out, "\nGPUs ({})", d.gpus.len());
    if d.gpus.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for g in &d.gpus {
        let model_id = b
            .gpus
            .iter()
            .find(|(_, a)| *a == g.pci)
            .map(|(id, _)| format!("-> {id}"));
        let _ = writeln!(
            out,
            "  {}  {:04x}:{:04x}  numa {}  {}",
            g.pci,
            g.vendor,
            g.device,
            g.numa_node
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into()),
            model_id.unwrap_or_default()
        );
    }
    if !d.notes.is_empty() {
        let _ = writeln!(out, "\nnotes");
        for n in &d.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    match &d.host {
        Some(host) => {
            let _ = writeln!(out, "\nhost model\n");
            out.push_str(&topology(host));
        }
        None => {
            let _ = writeln!(
                out,
                "\nno host model: no ACTIVE RDMA port, so there is nothing to probe from \
                 (hostping check --sim MODEL checks a simulated host)"
            );
        }
    }
    out
}

/// [`discovery`] as JSON: the discovery itself, and the model as [`topology_json`] shows it.
pub fn discovery_json(d: &rdma::sysfs::Discovery) -> serde_json::Value {
    let mut v = serde_json::to_value(d).expect("discovery serialises");
    if let Some(host) = &d.host {
        v["host"] = topology_json(host);
    }
    v
}

/// `hostping lint` for people: each finding with what was read, why it matters and where
/// the reason comes from; then what could not be read.
pub fn lint(
    host: Option<&HostTopology>,
    config: &model::HostConfig,
    findings: &[analyze::lint::LintFinding],
    style: Style,
) -> String {
    let mut out = String::new();
    let provenance = match config.provenance {
        Some(model::Provenance::Simulated) => " (SIMULATED configuration)",
        _ => "",
    };
    match host {
        Some(h) => {
            let _ = writeln!(
                out,
                "{}{provenance}",
                style.bold(&format!("lint: {}", h.name))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "lint: no RDMA device found, so there are no RNIC or GPU paths to check"
            );
        }
    }
    if findings.is_empty() && host.is_some() {
        let _ = writeln!(out, "{}", style.green("no risky configuration found"));
    }
    for f in findings {
        let label = match f.severity {
            analyze::lint::Severity::Warning => style.red("warning"),
            analyze::lint::Severity::Notice => style.bold("notice"),
        };
        let _ = writeln!(out, "\n{label} {} [{}] {}", f.subject, f.rule, f.detail);
        for line in wrap(f.why, 92) {
            let _ = writeln!(out, "    {line}");
        }
        let _ = writeln!(out, "    {}", style.gray(&format!("source: {}", f.source)));
    }
    if !config.unavailable.is_empty() {
        let _ = writeln!(out, "\nnot checked:");
        for u in &config.unavailable {
            let _ = writeln!(out, "  {}", style.gray(u));
        }
    }
    out
}

/// `hostping counters` for people.
pub fn counters(report: &CounterReport, style: Style) -> String {
    let mut out = String::new();
    let sim = if report.provenance == Provenance::Simulated {
        " (SIMULATED)"
    } else {
        ""
    };
    let host = report
        .host
        .as_deref()
        .unwrap_or("this host (no RDMA device)");
    let _ = writeln!(out, "{}{sim}", style.bold(&format!("counters: {host}")));
    let _ = writeln!(out, "\nsources:");
    for s in &report.sources {
        let status = match s.status {
            SourceStatus::Ok => style.green("ok"),
            SourceStatus::Unavailable => style.gray("unavailable"),
            SourceStatus::Error => style.red("error"),
        };
        let detail = s
            .detail
            .as_deref()
            .map(|d| format!("  {d}"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<13} {status}{detail}", s.source);
    }
    let m = &report.monitor;
    if !m.rnics.is_empty() {
        let _ = writeln!(out, "\nRNICs:            throughput  tx pause    drops");
        for r in &m.rnics {
            let _ = writeln!(
                out,
                "  {:<14} {:>11} {:>9} {:>8}",
                r.id.as_str(),
                opt(r.throughput_gbps.map(|v| format!("{v:.2} Gb/s"))),
                opt(r.tx_pause_ratio.map(|v| format!("{:.2} %", v * 100.0))),
                opt(r.drops.map(|v| v.to_string())),
            );
        }
    }
    if !m.gpus.is_empty() {
        let busy: Vec<String> = m
            .gpus
            .iter()
            .map(|g| {
                format!(
                    "{} {}",
                    g.id,
                    opt(g.busy.map(|b| if b { "busy" } else { "idle" }.to_string()))
                )
            })
            .collect();
        let _ = writeln!(out, "\nGPUs: {}", busy.join(", "));
    }
    if !m.links.is_empty() {
        let _ = writeln!(out, "\nlink utilisation:");
        for l in &m.links {
            let _ = writeln!(
                out,
                "  {:<16} {}",
                l.id.as_str(),
                opt(l.utilisation.map(|u| format!("{:.1} %", u * 100.0)))
            );
        }
    }
    interconnect(&mut out, report);
    let c = &report.config;
    let down: Vec<&LinkTraining> = c.links.iter().filter(|t| t.downtrained()).collect();
    let _ = writeln!(
        out,
        "\nconfiguration: {} PCIe links read ({} downtrained), ACS on {} switch ports ({} redirecting), ATS on {} devices ({} off)",
        c.links.len(),
        down.len(),
        c.acs.len(),
        c.acs.iter().filter(|a| a.redirect).count(),
        c.ats.len(),
        c.ats.iter().filter(|a| !a.enabled).count()
    );
    if let Some(i) = &c.iommu {
        let _ = writeln!(
            out,
            "  IOMMU {} ({}), {} huge pages, THP {}",
            match i.translated {
                Some(true) => "translating RNIC DMA",
                Some(false) => "not translating RNIC DMA",
                None => "translation of RNIC DMA unknown",
            },
            i.mode,
            i.hugepages_total
                .map_or("unknown".to_string(), |n| n.to_string()),
            i.thp.as_deref().unwrap_or("unknown")
        );
    }
    for t in &c.transport_timeouts {
        let _ = writeln!(
            out,
            "  {} transport timeout floor {} ({})",
            t.rnic,
            opt(t.floor_ms.map(|ms| format!("{ms} ms"))),
            t.source
        );
    }
    for u in &c.unavailable {
        let _ = writeln!(out, "  {}", style.gray(&format!("not read: {u}")));
    }
    let _ = writeln!(out, "\n(--format json has every counter of every source; `hostping lint` judges the configuration)");
    out
}

/// The host-interconnect facts of a counter report: each RNIC's IOMMU translation and IOTLB,
/// each memory node's bandwidth by who moves it, each RNIC's transport errors, and the ODP
/// memory regions in use (HotNets'22 3.1, 3.2; ISPASS'21). `-` is a value not read.
fn interconnect(out: &mut String, report: &CounterReport) {
    let m = &report.monitor;
    let c = &report.config;
    if !m.iommu.is_empty() {
        let _ = writeln!(
            out,
            "\nIOMMU per RNIC:   group      translated  page     IOTLB lookups   misses  miss ratio"
        );
        for a in &m.iommu {
            let group = c.iommu_groups.iter().find(|g| g.device == a.rnic);
            let group = group.map(|g| {
                format!(
                    "{} {}",
                    opt(g.group.map(|n| n.to_string())),
                    g.kind.as_deref().unwrap_or("-")
                )
            });
            let _ = writeln!(
                out,
                "  {:<14} {:<10} {:>10}  {:<7} {:>14} {:>8} {:>11}",
                a.rnic.as_str(),
                opt(group),
                opt(a
                    .translated
                    .map(|t| if t { "yes" } else { "no" }.to_string())),
                opt(a.page_bytes.map(|b| format!("{} KiB", b / 1024))),
                opt(a.iotlb_lookups.map(|v| v.to_string())),
                opt(a.iotlb_misses.map(|v| v.to_string())),
                opt(a.miss_ratio().map(|r| format!("{:.1} %", r * 100.0))),
            );
        }
    }
    if !m.memory.is_empty() {
        let _ = writeln!(
            out,
            "\nmemory bandwidth:      total   RNIC DMA      cores   capacity"
        );
        let gbps = |v: Option<f64>| opt(v.map(|g| format!("{g:.1} Gb/s")));
        for b in &m.memory {
            let _ = writeln!(
                out,
                "  {:<14} {:>12} {:>10} {:>10} {:>10}",
                b.node.as_str(),
                gbps(b.total_gbps),
                gbps(b.rnic_dma_gbps),
                gbps(b.cores_gbps()),
                gbps(b.capacity_gbps),
            );
        }
    }
    if !m.transport.is_empty() {
        let _ = writeln!(
            out,
            "\ntransport errors:  ack timeouts  seq NAKs  out of seq  duplicates  (in the interval)"
        );
        let n = |v: Option<u64>| opt(v.map(|v| v.to_string()));
        for t in &m.transport {
            let _ = writeln!(
                out,
                "  {:<14} {:>13} {:>9} {:>11} {:>11}",
                t.rnic.as_str(),
                n(t.local_ack_timeout_err),
                n(t.packet_seq_err),
                n(t.out_of_sequence),
                n(t.duplicate_request),
            );
        }
    }
    let regions = if m.odp.is_empty() { &c.odp } else { &m.odp };
    if !regions.is_empty() {
        let _ = writeln!(
            out,
            "\nODP memory regions: kind          bytes  page faults  invalidations  owner"
        );
        for r in regions {
            let owner = match (&r.process, r.pid) {
                (Some(n), Some(p)) => format!("{n} (pid {p})"),
                (Some(n), None) => n.clone(),
                (None, Some(p)) => format!("pid {p}"),
                (None, None) => "-".into(),
            };
            let _ = writeln!(
                out,
                "  {:<14} {:<9} {:>12} {:>12} {:>14}  {owner}",
                r.rnic.as_str(),
                match r.kind {
                    model::OdpKind::Explicit => "explicit",
                    model::OdpKind::Implicit => "implicit",
                },
                opt(r.bytes.map(|b| b.to_string())),
                opt(r.page_faults.map(|v| v.to_string())),
                opt(r.page_invalidations.map(|v| v.to_string())),
            );
        }
    }
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// The table view: one row per curve, one column per working set, and the knee.
pub fn iotlb(report: &check::iotlb::IotlbReport) -> String {
    let mut out = format!(
        "IOTLB sweep ({}; HotNets'22 3.1, Figures 3-5): stream Gb/s by working set\n",
        report.provenance.as_str()
    );
    let Some(first) = report.curves.first() else {
        for note in &report.notes {
            out += &format!("  {note}\n");
        }
        return out;
    };
    out += &format!("  {:<20}", "rnic -> mem, page");
    for p in &first.points {
        out += &format!(
            " {:>8}",
            check::iotlb::size_text(p.working_set_bytes).replace(' ', "")
        );
    }
    out += "\n";
    for c in &report.curves {
        out += &format!(
            "  {:<20}",
            format!("{} -> {}, {}", c.rnic, c.endpoint, c.page)
        );
        for p in &c.points {
            out += &format!(" {:>8.1}", p.gbps);
        }
        out += "\n";
    }
    for c in &report.curves {
        out += &match &c.knee {
            Some(k) => format!(
                "  {} -> {} {}: falls off between {} and {} (IOTLB reach {}): {:.1} -> {:.1} Gb/s\n",
                c.rnic,
                c.endpoint,
                c.page,
                check::iotlb::size_text(k.last_full_bytes),
                check::iotlb::size_text(k.first_low_bytes),
                check::iotlb::size_text(c.reach_bytes),
                k.plateau_gbps,
                k.floor_gbps
            ),
            None => format!(
                "  {} -> {} {}: no fall-off up to {} (IOTLB reach {})\n",
                c.rnic,
                c.endpoint,
                c.page,
                check::iotlb::size_text(c.points.last().map_or(0, |p| p.working_set_bytes)),
                check::iotlb::size_text(c.reach_bytes)
            ),
        };
    }
    for note in &report.notes {
        out += &format!("  {note}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_whole() {
        assert_eq!(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
        assert!(wrap("", 10).is_empty());
    }

    #[test]
    fn plain_cells_carry_markers() {
        let s = Style { color: false };
        assert_eq!(
            cell(s, Some(126.04), Judged::Status(PathStatus::Abnormal), 1),
            "  126.0*"
        );
        assert_eq!(
            cell(s, Some(125.5), Judged::Status(PathStatus::Uncertain), 1),
            "  125.5~"
        );
        assert_eq!(
            cell(s, Some(199.0), Judged::Status(PathStatus::Normal), 1),
            "  199.0 "
        );
        assert!(cell(
            Style { color: true },
            Some(1.0),
            Judged::Status(PathStatus::Abnormal),
            1
        )
        .contains("\x1b[1;31m"));
        assert_eq!(
            cell(Style { color: true }, Some(1.0), Judged::Unjudged, 1),
            "    1.0 "
        );
    }

    #[test]
    fn topology_json_has_affinity() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let v = topology_json(&host);
        assert_eq!(
            v["affinity"]["rnic1"],
            serde_json::json!(["mem0", "mem1", "gpu2", "gpu3"])
        );
        assert_eq!(v["links"].as_array().unwrap().len(), 27);
        assert_eq!(v["paths"].as_array().unwrap().len(), 40);
        assert_eq!(v["links"][0]["id"], "mem0--cpu0");
        assert_eq!(v["links"][0]["kind"], "memory_channel");
    }
}
