//! A real headless browser for the web UI's tests: Debian's `chromium` driven by its
//! `chromedriver` (package `chromium-driver`) over WebDriver, from Rust with `fantoccini`.
//! chromedriver runs on a free port in a process group of its own, so the browsers it starts
//! die with it on drop, even when a test panics before closing its session.
//!
//! Skipped (with a message) when `chromium` or `chromedriver` is not on PATH, unless
//! `HOSTPING_REQUIRE_CHROMIUM` is set, as `./test.sh` does after installing them.

use fantoccini::{Client, ClientBuilder};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// A running chromedriver, killed with its browsers on drop.
pub struct ChromeDriver {
    child: Child,
    addr: SocketAddr,
    chromium: PathBuf,
}

impl ChromeDriver {
    /// Starts chromedriver, or says why the test is skipped.
    pub fn start() -> Option<ChromeDriver> {
        let (Some(chromium), Some(driver)) = (on_path("chromium"), on_path("chromedriver")) else {
            assert!(
                std::env::var_os("HOSTPING_REQUIRE_CHROMIUM").is_none(),
                "HOSTPING_REQUIRE_CHROMIUM is set but `chromium` or `chromedriver` is not on \
                 PATH (apt-get install chromium chromium-driver)"
            );
            eprintln!(
                "skipped: no chromium/chromedriver (apt-get install chromium chromium-driver)"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Owned from here, so that a panic below still kills it.
        let driver = ChromeDriver {
            child,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            chromium,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // (chromedriver resets HTTP/1.0 requests: ask in HTTP/1.1.)
            let ready = ureq::get(format!("http://{}/status", driver.addr))
                .call()
                .is_ok_and(|r| r.status() == 200);
            if ready {
                return Some(driver);
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A new headless browser session, `width` x `height` CSS pixels.
    pub async fn session(&self, width: u32, height: u32) -> Client {
        let options = serde_json::json!({
            "binary": self.chromium,
            // As root Chromium refuses to start without --no-sandbox; /dev/shm is small in
            // containers.
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", format!("--window-size={width},{height}")],
        });
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), "chrome".into());
        caps.insert("goog:chromeOptions".into(), options);
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://{}", self.addr))
            .await
            .expect("a chromium session")
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the group is chromedriver's own.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Where the UI tests leave their screenshots: `target/test-artifacts/ui/`.
pub fn artifacts_dir() -> PathBuf {
    let target = std::path::Path::new(env!("CARGO_BIN_EXE_hostping"))
        .ancestors()
        .nth(2)
        .expect("target/<profile>/hostping")
        .to_path_buf();
    let dir = target.join("test-artifacts").join("ui");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Saves a screenshot of the window as `name`.png under [`artifacts_dir`] and says where.
pub async fn screenshot(client: &Client, name: &str) -> PathBuf {
    let png = client.screenshot().await.expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let file = artifacts_dir().join(format!("{name}.png"));
    std::fs::write(&file, png).unwrap();
    eprintln!("screenshot: {}", file.display());
    file
}

/// Waits (10 s at most) until `script` (a JavaScript expression) is true in the page.
pub async fn wait_until(client: &Client, what: &str, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let value = client
            .execute(&format!("return Boolean({script});"), vec![])
            .await
            .expect("the script runs");
        if value == serde_json::Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What `script` returns, as JSON.
pub async fn js(client: &Client, script: &str) -> serde_json::Value {
    client
        .execute(script, vec![])
        .await
        .expect("the script runs")
}

/// A computed colour `rgb(r, g, b)` or `rgba(r, g, b, a)` as its red, green and blue.
pub fn rgb(css: &str) -> (u8, u8, u8) {
    let inner = css
        .trim_start_matches("rgba(")
        .trim_start_matches("rgb(")
        .trim_end_matches(')');
    let n: Vec<u8> = inner
        .split(',')
        .take(3)
        .map(|x| x.trim().parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

/// The UI's red (abnormal, failed, errored).
pub fn is_red((r, g, b): (u8, u8, u8)) -> bool {
    r > 180 && g < 90 && b < 90
}

/// The UI's green (normal, healthy).
pub fn is_green((r, g, b): (u8, u8, u8)) -> bool {
    g > 130 && r < 110 && b < 110
}

/// The UI's gray (not judged).
pub fn is_gray((r, g, b): (u8, u8, u8)) -> bool {
    r.abs_diff(g) < 8 && g.abs_diff(b) < 8 && (100..=200).contains(&r)
}
