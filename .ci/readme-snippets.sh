#!/usr/bin/env bash
# Builds every ```rust snippet of README.md as a user would paste it: in a fresh application
# (`cargo new`) that depends on this checkout by path, each snippet its own binary, one
# `cargo build`. The application takes the library as README.md's first `cargo add` line does
# (its default features; B3ACCEL_SNIPPET_FEATURES=a,b takes those features instead), so this
# build is also the check that the library compiles none of the command line's crates (clap,
# indicatif: cli/ is a crate of its own). Offline: it runs after the main build, whose crates are
# in Cargo's cache, and it takes this checkout's Cargo.lock so that no version is resolved anew.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
app="$repo/target/readme-snippets"
if [ -n "${B3ACCEL_SNIPPET_FEATURES+set}" ]; then
    features=", default-features = false, features = [$(echo "$B3ACCEL_SNIPPET_FEATURES" | sed -E 's/([^, ]+)/"\1"/g')]"
else
    features=""
fi
rm -rf "$app"
mkdir -p "$app/src/bin"
cat > "$app/Cargo.toml" <<TOML
[package]
name = "readme-snippets"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
b3accel = { path = "$repo"$features }

[workspace]

# The dev profile of this repository's Cargo.toml, so that b3accel builds as it does there.
[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false

[profile.dev.package.b3accel]
opt-level = 1

[profile.dev.package.blake3]
opt-level = 3
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

# The library pulls none of the command line's crates.
tree=$(cargo tree --offline -e normal --manifest-path "$app/Cargo.toml")
if grep -qE '^[^a-z]*(clap|indicatif) v' <<<"$tree"; then
    echo "readme-snippets: the library depends on the command line's crates:" >&2
    grep -E '(clap|indicatif) v' <<<"$tree" >&2
    exit 1
fi
