//! What the fixture tests share: a captured answer under `tests/data/`, read into its type
//! and written back.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The text of `tests/data/{name}`.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `name` read into `T` and written back: the same bytes. Equal bytes also show that no
/// field was left behind: the types hold every field served (what `deny_unknown_fields`
/// would check, without refusing the fields a newer server may add, as DESIGN 4.5 allows).
pub fn same_bytes<T: Serialize + DeserializeOwned>(name: &str) -> T {
    let text = fixture(name);
    let typed: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let written = serde_json::to_string(&typed).unwrap();
    if written != text {
        // The first difference, not 15 kB of both.
        let at = written
            .bytes()
            .zip(text.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let around = |s: &str| s[at.saturating_sub(80)..(at + 80).min(s.len())].to_owned();
        panic!(
            "{name}: written differs from read at byte {at}:\n written: {}\n    read: {}",
            around(&written),
            around(&text)
        );
    }
    typed
}
