#!/usr/bin/env bash
# Builds every ```rust snippet of README.md as a user would paste it: in a fresh application
# (`cargo new`) that depends on this checkout by path, each snippet its own binary, one
# `cargo build`. Offline: it runs after the main build, whose crates are in Cargo's cache, and it
# takes this checkout's Cargo.lock so that no version is resolved anew.
# The snippets use only items of the default build. B3ACCEL_SNIPPET_FEATURES (default: opencl,
# which with the defaults is `.ci/run`'s --all-features set) and the crate's dev profile (kept equal
# to Cargo.toml's) let the build reuse the main build's artifacts where Cargo finds them the same.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
app="$repo/target/readme-snippets"
features=$(echo "${B3ACCEL_SNIPPET_FEATURES-opencl}" | sed -E 's/([^, ]+)/"\1"/g')
rm -rf "$app"
mkdir -p "$app/src/bin"
cat > "$app/Cargo.toml" <<TOML
[package]
name = "readme-snippets"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
b3accel = { path = "$repo", features = [$features] }

[workspace]

[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false

[profile.dev.package.b3accel]
opt-level = 1
TOML
cp "$repo/Cargo.lock" "$app/Cargo.lock"
echo 'fn main() {}' > "$app/src/main.rs"

# Each ```rust ... ``` block of README.md becomes src/bin/snippet_N.rs.
awk -v dir="$app/src/bin" '
    /^```rust[[:space:]]*$/ { n++; file = sprintf("%s/snippet_%d.rs", dir, n); inside = 1; next }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }
' "$repo/README.md"
count=$(ls "$app/src/bin" | wc -l)
if [ "$count" -eq 0 ]; then
    echo "readme-snippets: no rust snippet found in README.md" >&2
    exit 1
fi
echo "readme-snippets: building $count snippet(s) of README.md in $app"
CARGO_TARGET_DIR="$repo/target" cargo build --offline --quiet --manifest-path "$app/Cargo.toml" --bins
