# Sourced by run.sh and test.sh: makes sure a C linker and a Rust toolchain (1.80 or newer)
# are present, installing Debian packages when they are missing.
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo >/dev/null 2>&1 || need+=(cargo rustc)
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]} (Debian packages)" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
rust_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
if [ "${rust_minor:-0}" -lt 80 ]; then
    echo "setup: $(rustc --version) is too old; hostping needs Rust 1.80 or newer (install it with rustup)" >&2
    exit 2
fi
