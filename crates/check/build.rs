//! Embeds the repository's scenario suite (`scenarios/*.toml`) in the crate, so that
//! `hostping bench scenarios` runs it from any folder, not only from a checkout.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("../../scenarios");
    // A folder here makes cargo rebuild when any file in it changes or one is added.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("the scenarios folder is readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut code = String::from("&[\n");
    for file in &files {
        let name = file.file_name().expect("a file").to_string_lossy();
        let path = file.canonicalize().expect("the file exists");
        code += &format!("    ({name:?}, include_str!({path:?})),\n");
    }
    code += "]\n";
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("scenarios.rs"), code).expect("OUT_DIR is writable");
}
