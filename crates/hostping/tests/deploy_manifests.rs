//! The deployment files in packaging/ hold what docs/agent.md promises of them: the
//! DaemonSet's security settings (hostNetwork, IPC_LOCK and nothing broader, never
//! privileged, /dev/infiniband and /sys read-only), resources no smaller than the agent's
//! measured footprint (BENCHMARKS.md), probes on endpoints a real agent answers with its
//! ConfigMap's configuration, and an image whose runtime holds only the libraries the agent
//! dlopens.

mod common;

use common::{agent, http_get, temp_dir};
use serde_norway::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

fn read(relative: &str) -> String {
    let path = repo_file(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents of the DaemonSet file, by kind.
fn manifest(kind: &str) -> Value {
    let text = read("packaging/kubernetes/agent-daemonset.yaml");
    let found = serde_norway::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == kind);
    found.unwrap_or_else(|| panic!("agent-daemonset.yaml has no {kind}"))
}

fn text<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v:?}"))
}

fn agent_container(ds: &Value) -> &Value {
    let containers = ds["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .unwrap();
    assert_eq!(containers.len(), 1, "one container: {containers:?}");
    &containers[0]
}

/// A Kubernetes memory quantity ("32Mi", "128M", "1Gi") in bytes.
fn bytes(quantity: &str) -> f64 {
    let units = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ];
    for (suffix, scale) in units {
        if let Some(n) = quantity.strip_suffix(suffix) {
            return n.parse::<f64>().unwrap() * scale;
        }
    }
    quantity.parse().unwrap()
}

/// A Kubernetes CPU quantity ("10m", "1", "0.5") in cores.
fn cores(quantity: &str) -> f64 {
    match quantity.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().unwrap() / 1000.0,
        None => quantity.parse().unwrap(),
    }
}

/// The agent's measured peak resident memory in bytes, from BENCHMARKS.md's table ("resident
/// memory (end / peak over 60 s) | 8.4 MiB / 8.4 MiB | ...").
fn measured_peak_memory() -> f64 {
    let benchmarks = read("BENCHMARKS.md");
    let row = benchmarks
        .lines()
        .find(|l| l.starts_with("| resident memory (end / peak"))
        .expect("BENCHMARKS.md has the agent's resident memory row");
    let measured = row.split('|').nth(2).unwrap();
    let peak = measured.split('/').nth(1).unwrap().trim();
    bytes(peak.strip_suffix(" MiB").unwrap()) * 1024.0 * 1024.0
}

#[test]
fn the_daemonset_grants_ipc_lock_and_nothing_broader() {
    let ds = manifest("DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], true, "the RNICs are the host's");
    for shared in ["hostPID", "hostIPC"] {
        assert_ne!(pod[shared], true, "{shared} is not needed");
    }
    let security = &agent_container(&ds)["securityContext"];
    assert_ne!(security["privileged"], true, "never privileged");
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    let caps = |list: &str| -> Vec<&str> {
        security["capabilities"][list]
            .as_sequence()
            .map(|s| s.iter().map(|c| text(c, "a capability")).collect())
            .unwrap_or_default()
    };
    assert_eq!(caps("add"), ["IPC_LOCK"], "verbs memory registration only");
    assert_eq!(caps("drop"), ["ALL"]);
}

#[test]
fn devices_and_sysfs_are_mounted_read_only_and_the_database_lies_on_the_node() {
    let ds = manifest("DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    let volume = |name: &str| -> &Value {
        pod["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no volume {name}"))
    };
    let mounts = agent_container(&ds)["volumeMounts"].as_sequence().unwrap();
    let mount_of = |path: &str| -> &Value {
        mounts
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("nothing mounted at {path}"))
    };
    for host_path in ["/dev/infiniband", "/sys"] {
        let mount = mount_of(host_path);
        assert_eq!(mount["readOnly"], true, "{host_path} read-only");
        let v = volume(text(&mount["name"], "a volume name"));
        assert_eq!(v["hostPath"]["path"], host_path);
    }
    // The ConfigMap's database lies under a hostPath mount, writable.
    let config = agent_config();
    let db_dir = config.agent.database.parent().unwrap();
    let mount = mount_of(db_dir.to_str().unwrap());
    assert_ne!(mount["readOnly"], true);
    let v = volume(text(&mount["name"], "a volume name"));
    assert!(v["hostPath"]["path"].is_string(), "{v:?}");
}

#[test]
fn resources_cover_the_measured_footprint_within_the_systemd_limit() {
    let ds = manifest("DaemonSet");
    let resources = &agent_container(&ds)["resources"];
    let quantity = |kind: &str, what: &str| -> String {
        match &resources[kind][what] {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("resources.{kind}.{what}: {other:?}"),
        }
    };
    let peak = measured_peak_memory();
    let request = bytes(&quantity("requests", "memory"));
    let limit = bytes(&quantity("limits", "memory"));
    assert!(request >= 2.0 * peak, "request {request} vs peak {peak}");
    assert!(limit >= request);
    // No more than the systemd unit allows the same agent (MemoryMax=128M).
    let unit = read("packaging/hostping-agent.service");
    let memory_max = unit
        .lines()
        .find_map(|l| l.strip_prefix("MemoryMax="))
        .expect("the unit sets MemoryMax");
    assert!(
        limit <= bytes(memory_max.trim()) * 1.05,
        "{limit} vs {memory_max}"
    );
    let cpu_request = cores(&quantity("requests", "cpu"));
    assert!(cpu_request > 0.0 && cpu_request <= 0.1, "{cpu_request}");
    assert!(cores(&quantity("limits", "cpu")) >= cpu_request);
}

/// The ConfigMap's agent.toml, parsed as the agent parses it.
fn agent_config_text() -> String {
    let cm = manifest("ConfigMap");
    text(&cm["data"]["agent.toml"], "agent.toml").to_string()
}

fn agent_config() -> agent::config::AgentConfig {
    agent::config::AgentConfig::parse(&agent_config_text())
        .unwrap_or_else(|e| panic!("the ConfigMap's agent.toml: {e}"))
}

/// The container's arguments with `$(HOST_IP)` given, and the port of `--listen`.
fn listen_port(args: &[&str]) -> u16 {
    let at = args.iter().position(|a| *a == "--listen").unwrap();
    let addr: std::net::SocketAddr = args[at + 1]
        .replace("$(HOST_IP)", "192.0.2.1")
        .parse()
        .unwrap();
    addr.port()
}

#[test]
fn probes_and_scrape_annotations_name_what_the_agent_serves() {
    let ds = manifest("DaemonSet");
    let container = agent_container(&ds);
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| text(a, "an argument"))
        .collect();
    let port = listen_port(&args);
    let env = container["env"].as_sequence().unwrap();
    assert!(env
        .iter()
        .any(|e| e["name"] == "HOST_IP"
            && e["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"));
    let named = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|p| p["containerPort"].as_u64() == Some(port.into()))
        .expect("the listen port is declared");
    let annotations = &ds["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], port.to_string().as_str());
    let mut paths = vec![text(&annotations["prometheus.io/path"], "the scrape path")];
    for probe in ["livenessProbe", "readinessProbe"] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["port"], named["name"], "{probe} on the agent's port");
        paths.push(text(&get["path"], "a probe path"));
    }

    // A real agent with the ConfigMap's configuration and the container's arguments (less
    // its address: the test's agent listens on a free loopback port) answers every path.
    let dir = temp_dir("deploy-manifests");
    let config = dir.join("agent.toml");
    std::fs::write(&config, agent_config_text()).unwrap();
    let at = args.iter().position(|a| *a == "--listen").unwrap();
    let config_at = args.iter().position(|a| *a == "--config").unwrap();
    let mut run_args: Vec<&str> = Vec::new();
    for (i, a) in args.iter().enumerate().skip(1) {
        if i == at || i == at + 1 {
            continue;
        }
        run_args.push(if i == config_at + 1 {
            config.to_str().unwrap()
        } else {
            a
        });
    }
    assert_eq!(args[0], "agent");
    let mut a = agent(&dir.join("runs.db"), &run_args, &[("--time-scale", "600")]);
    a.wait_for_runs(1, Duration::from_secs(60));
    for path in paths {
        let (code, body) = http_get(a.addr, path);
        assert_eq!(code, 200, "{path}: {body}");
    }
    a.signal(libc::SIGTERM);
    assert!(a.wait_output().status.success());
}

#[test]
fn the_image_runs_the_agent_with_only_the_libraries_it_dlopens() {
    let file = read("packaging/container/Containerfile");
    let stages: Vec<&str> = file.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "builder and runtime: {stages:?}");
    assert!(stages[0].contains("rust:bookworm") && stages[0].ends_with(" AS builder"));
    assert!(stages[1].contains("debian:bookworm-slim"));
    assert!(file.contains("cargo build --release --locked -p hostping"));
    let runtime = file.split(stages[1]).nth(1).unwrap();
    let installed: Vec<&str> = runtime
        .split("--no-install-recommends")
        .nth(1)
        .unwrap()
        .split("&&")
        .next()
        .unwrap()
        .split_whitespace()
        .filter(|word| *word != "\\")
        .collect();
    assert_eq!(
        installed,
        ["libibverbs1", "libibumad3", "ibverbs-providers"],
        "only what the agent dlopens"
    );
    assert!(runtime.contains("\nUSER 65532"), "non-root by default");
    // The configuration it copies is one the agent accepts.
    agent::config::AgentConfig::parse(&read("packaging/hostping-agent.toml")).unwrap();
    let ignore = read(".dockerignore");
    assert!(ignore.lines().any(|l| l.trim() == "target/"));
}

/// The collector's Deployment and Service.
fn collector_manifest(kind: &str) -> Value {
    let text = read("packaging/kubernetes/collector-deployment.yaml");
    let found = serde_norway::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == kind);
    found.unwrap_or_else(|| panic!("collector-deployment.yaml has no {kind}"))
}

/// The collector's measured peak resident memory in bytes, from BENCHMARKS.md's fleet table
/// ("| collector peak resident memory (VmHWM) | 21.0 MiB | |").
fn measured_collector_peak_memory() -> f64 {
    let benchmarks = read("BENCHMARKS.md");
    let row = benchmarks
        .lines()
        .find(|l| l.starts_with("| collector peak resident memory"))
        .expect("BENCHMARKS.md has the collector's peak memory row");
    let measured = row.split('|').nth(2).unwrap().trim();
    bytes(measured.strip_suffix(" MiB").unwrap()) * 1024.0 * 1024.0
}

#[test]
fn the_collectors_memory_covers_its_measured_peak() {
    let deployment = collector_manifest("Deployment");
    let resources = &deployment["spec"]["template"]["spec"]["containers"][0]["resources"];
    let memory = |kind: &str| bytes(text(&resources[kind]["memory"], "a memory quantity"));
    let peak = measured_collector_peak_memory();
    assert!(peak > 1024.0 * 1024.0, "{peak}");
    assert!(
        memory("requests") >= 2.0 * peak,
        "request {} vs peak {peak}",
        memory("requests")
    );
    assert!(memory("limits") >= memory("requests"));
}

#[test]
fn the_collector_runs_unprivileged_with_its_secrets_read_only() {
    let deployment = collector_manifest("Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_ne!(
        pod["hostNetwork"], true,
        "the collector needs no host network"
    );
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let user = pod["securityContext"]["runAsUser"].as_u64().unwrap();
    assert_ne!(user, 0);
    // The Secrets' files are readable by the pod's group, which is the user's.
    assert_eq!(pod["securityContext"]["fsGroup"].as_u64(), Some(user));
    let containers = pod["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let security = &containers[0]["securityContext"];
    assert_ne!(security["privileged"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert!(security["capabilities"]["add"].is_null(), "no capability");
    for mount in containers[0]["volumeMounts"].as_sequence().unwrap() {
        assert_eq!(mount["readOnly"], true, "{mount:?}");
        let volume = pod["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        assert!(volume["secret"]["secretName"].is_string(), "{volume:?}");
    }
    // The database URL (it holds a password) comes from a Secret mounted as a file: no
    // argument holds it (`ps` would show it), and no manifest field does.
    let args: Vec<&str> = containers[0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| text(a, "an argument"))
        .collect();
    assert!(!args.contains(&"--database"), "{args:?}");
    assert!(args.iter().all(|a| !a.contains("postgres")), "{args:?}");
    let file = args[args.iter().position(|a| *a == "--database-file").unwrap() + 1];
    let mount = containers[0]["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| file.starts_with(text(&m["mountPath"], "a mount path")))
        .unwrap_or_else(|| panic!("{file} is in no mounted volume"));
    let volume = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert_eq!(volume["secret"]["secretName"], "hostping-collector-db");
    let service = collector_manifest("Service");
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"],
        containers[0]["ports"][0]["name"]
    );
}

#[test]
fn a_collector_started_with_the_deployments_arguments_answers_its_probes() {
    use common::postgres::{free_port, Collector, Postgres};
    let dir = temp_dir("deploy-collector");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let deployment = collector_manifest("Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    // The Secrets' mount points become folders of this test holding the same file names.
    let mounts: Vec<(String, PathBuf)> = container["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|m| {
            let at = text(&m["mountPath"], "a mount path").to_owned();
            let local = dir.join(text(&m["name"], "a volume name"));
            std::fs::create_dir_all(&local).unwrap();
            (at, local)
        })
        .collect();
    let local = |path: &str| -> String {
        let (at, folder) = mounts
            .iter()
            .find(|(at, _)| path.starts_with(at.as_str()))
            .unwrap_or_else(|| panic!("{path} is in no mounted volume"));
        folder
            .join(path[at.len()..].trim_start_matches('/'))
            .to_string_lossy()
            .into_owned()
    };
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| text(a, "an argument"))
        .collect();
    let value_of = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    let (_, cert, key) = common::tls::certificates(&dir, &["localhost", "127.0.0.1"]);
    std::fs::copy(&cert, local(value_of("--tls-cert"))).unwrap();
    std::fs::copy(&key, local(value_of("--tls-key"))).unwrap();
    std::fs::write(local(value_of("--tokens")), "node-1 tok-0123456789abcdef\n").unwrap();
    // The Secret's file as Kubernetes writes it (no newline).
    std::fs::write(local(value_of("--database-file")), pg.url()).unwrap();
    let port = free_port();
    let listen_port: u16 = value_of("--listen")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        container["ports"][0]["containerPort"].as_u64(),
        Some(listen_port.into())
    );
    let run_args: Vec<String> = args
        .iter()
        .map(|a| match *a {
            a if a == value_of("--listen") => format!("127.0.0.1:{port}"),
            a if a.starts_with("/etc/") => local(a),
            a => a.to_owned(),
        })
        .collect();
    let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
    let collector = Collector::spawn(&run_args);
    assert_eq!(collector.scheme, "https");

    // The readiness probe's request, as the kubelet makes it (HTTPS, the certificate not
    // checked), answers 200 while PostgreSQL is up and 503 within the probe's timeout
    // once it is gone; the liveness probe's TCP connect still succeeds.
    let probe = &container["readinessProbe"];
    assert_eq!(probe["httpGet"]["scheme"], "HTTPS");
    let path = text(&probe["httpGet"]["path"], "the probe path");
    let timeout = Duration::from_secs(probe["timeoutSeconds"].as_u64().unwrap());
    let kubelet: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .disable_verification(true)
                .build(),
        )
        .build()
        .into();
    let url = format!("https://127.0.0.1:{port}{path}");
    let mut ready = kubelet.get(&url).call().unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    let body: serde_json::Value =
        serde_json::from_str(&ready.body_mut().read_to_string().unwrap()).unwrap();
    assert!(body["schema_version"].as_i64().unwrap() >= 1, "{body}");
    pg.stop();
    let unready = kubelet.get(&url).call().unwrap();
    assert_eq!(unready.status().as_u16(), 503);
    assert!(container["livenessProbe"]["tcpSocket"]["port"] == container["ports"][0]["name"]);
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("the liveness probe's connect");
}

#[test]
fn the_collectors_systemd_unit_passes_the_database_as_a_credential_file() {
    let unit = read("packaging/hostping-collector.service");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[1], "collector", "{exec}");
    assert!(!args.contains(&"--database"), "{exec}");
    assert!(!exec.contains("postgres"), "{exec}");
    let file = args[args.iter().position(|a| *a == "--database-file").unwrap() + 1];
    let credential = file
        .strip_prefix("${CREDENTIALS_DIRECTORY}/")
        .unwrap_or_else(|| panic!("{file} is not a systemd credential"));
    assert!(
        unit.lines()
            .any(|l| l.starts_with(&format!("LoadCredential={credential}:"))),
        "{unit}"
    );
    // Every flag of the unit is one the collector takes.
    let help = common::stdout(&common::hostping(&["collector", "--help"]));
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(flag),
            "{flag} is no flag of hostping collector"
        );
    }
}
