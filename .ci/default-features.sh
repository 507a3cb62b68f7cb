#!/usr/bin/env bash
# The default features, as a user gets them: `cargo run --release -- FILE` builds the command line
# with them, and `cargo add b3accel` takes the library with them, while `cargo test --all-features`
# compiles neither. So: type-check both with their default features, and fail if the library
# pulls the command line's crates (clap, indicatif: cli/ is a crate of its own). The README's Rust
# snippets run as doc tests (src/lib.rs). Offline: it runs after the main build, whose crates are
# in Cargo's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo check --offline --quiet -p b3accel -p b3accel-cli

tree=$(cargo tree --offline -e normal -p b3accel)
if grep -qE '(clap|indicatif) v' <<<"$tree"; then
    echo "default-features: the library depends on the command line's crates:" >&2
    grep -E '(clap|indicatif) v' <<<"$tree" >&2
    exit 1
fi
