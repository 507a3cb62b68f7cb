//! The tables `b3accel bench` prints: one per measurement, sizes across, series down.

use super::row::{size_label, Row};
use b3accel::Device;
use std::fmt::Write as _;

/// The tables: GB/s by series and size for hashing, the GPU breakdown, then Merkle, hash_many and
/// bao.
pub(super) fn render(machine: &serde_json::Value, rows: &[Row]) -> String {
    let mut s = format!("b3accel bench on {}\n\n", describe(machine));
    let hash: Vec<&Row> = rows.iter().filter(|r| r.test == "hash").collect();
    let sizes = size_columns(&hash);
    let series = series_names(&hash);
    let width = series.iter().map(|n| n.len() + 2).max().unwrap_or(0).max(26);
    let _ = write!(s, "Hashing throughput, GB/s (median of repeated calls)\n{:<width$}", "series");
    for (_, l) in &sizes {
        let _ = write!(s, "{l:>9}");
    }
    s.push('\n');
    for name in &series {
        let _ = write!(s, "{name:<width$}");
        for (b, _) in &sizes {
            match hash.iter().find(|r| r.series == *name && r.bytes == *b) {
                Some(r) => {
                    let _ = write!(s, "{:>9.2}", r.gbps());
                }
                None => s.push_str(&format!("{:>9}", "-")),
            }
        }
        s.push('\n');
    }
    for l in machine["lists"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {}: {}, from host memory; inputs of {} or more are spread over its devices",
            l["series"].as_str().unwrap_or("?"),
            l["about"].as_str().unwrap_or("?"),
            size_label(l["spread_from_bytes"].as_u64().unwrap_or(0)),
        );
    }
    let spread: Vec<&&Row> = hash.iter().filter(|r| r.shares.is_some()).collect();
    if !spread.is_empty() {
        let _ = writeln!(
            s,
            "\nDevice lists: the list's speed over its best single device's (the CPU alone, or one \
             device's host row), and each device's share of the bytes of the last call\n\
             {:<width$}{:>9}{:>8}  {:<16}shares",
            "series", "size", "x best", "best"
        );
        for r in spread {
            let shares = r.shares.as_deref().unwrap_or_default();
            let total = shares.iter().map(|x| x.1).sum::<u64>().max(1) as f64;
            let each: Vec<String> =
                shares.iter().map(|(d, b)| format!("{d} {:.1}%", 100.0 * *b as f64 / total)).collect();
            let single = |d: &Device| if *d == Device::Cpu { "cpu".to_string() } else { format!("{d} host") };
            let best = shares
                .iter()
                .filter_map(|(d, _)| hash.iter().find(|b| b.bytes == r.bytes && b.series == single(d)))
                .max_by(|a, b| a.gbps().total_cmp(&b.gbps()));
            let (ratio, name) = best.map_or(("-".to_string(), "-"), |b| (format!("{:.2}", r.gbps() / b.gbps()), b.series.as_str()));
            let _ = writeln!(s, "{:<width$}{:>9}{:>8}  {:<16}{}", r.series, r.label, ratio, name, each.join(", "));
        }
    }
    let parts: Vec<&&Row> = hash.iter().filter(|r| r.parts.is_some()).collect();
    if !parts.is_empty() {
        let _ = writeln!(
            s,
            "\nGPU from host memory, one timed call: milliseconds\n{:<26}{:>9}{:>10}{:>10}{:>10}{:>10}{:>9}",
            "series", "size", "upload", "kernel", "download", "median", "GB/s"
        );
        for r in parts {
            let p = r.parts.unwrap_or_default();
            let _ = writeln!(
                s,
                "{:<26}{:>9}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>9.2}",
                r.series,
                r.label,
                p[0] * 1e3,
                p[1] * 1e3,
                p[2] * 1e3,
                r.seconds * 1e3,
                r.gbps()
            );
        }
    }
    for (test, title) in [("merkle", "Merkle roots"), ("hash_many", "hash_many")] {
        let t: Vec<&Row> = rows.iter().filter(|r| r.test == test).collect();
        if t.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{title}: milliseconds per call (speed-up over the upstream loop)");
        for r in &t {
            let base = t.iter().find(|b| b.label == r.label && b.series == "upstream loop").map(|b| b.seconds);
            let _ = writeln!(
                s,
                "{:<26}{:>16}{:>12.3}{}",
                r.series,
                r.label,
                r.seconds * 1e3,
                base.map_or(String::new(), |b| format!("   ({:.1}x)", b / r.seconds))
            );
        }
    }
    let bao: Vec<&Row> = rows.iter().filter(|r| r.test == "bao").collect();
    if !bao.is_empty() {
        let _ = writeln!(s, "\nbao: milliseconds per call, GB/s of content (share of the plain CPU hash)");
        for r in &bao {
            let base = bao.iter().find(|b| b.label == r.label && b.series == "hash cpu").map(|b| b.seconds);
            let _ = writeln!(
                s,
                "{:<30}{:>10}{:>12.3}{:>10.2}{}",
                r.series,
                r.label,
                r.seconds * 1e3,
                r.gbps(),
                base.map_or(String::new(), |b| format!("   ({:.2}x)", b / r.seconds))
            );
        }
    }
    s
}

/// The sizes of `rows`, smallest first, with their labels: the table's and the plot's columns.
pub(super) fn size_columns(rows: &[&Row]) -> Vec<(u64, String)> {
    let mut sizes: Vec<(u64, String)> = rows.iter().map(|r| (r.bytes, r.label.clone())).collect();
    sizes.sort();
    sizes.dedup();
    sizes
}

/// The series of `rows`, in the order first measured.
pub(super) fn series_names<'a>(rows: &[&'a Row]) -> Vec<&'a str> {
    let mut series: Vec<&str> = Vec::new();
    for r in rows {
        if !series.contains(&r.series.as_str()) {
            series.push(&r.series);
        }
    }
    series
}

pub(super) fn describe(machine: &serde_json::Value) -> String {
    let mut s = format!(
        "{} ({} threads, {}); b3accel {}",
        machine["cpu"].as_str().unwrap_or("?"),
        machine["threads"],
        machine["cpu_simd"].as_str().unwrap_or("?"),
        machine["version"].as_str().unwrap_or("?"),
    );
    for g in machine["gpus"].as_array().into_iter().flatten() {
        let _ = write!(
            s,
            "; {} {} ({}, {}{})",
            g["device"].as_str().unwrap_or("?"),
            g["name"].as_str().unwrap_or("?"),
            g["api"].as_str().unwrap_or("?"),
            g["driver"].as_str().unwrap_or("?"),
            if g["software"].as_bool() == Some(true) { ", software" } else { "" },
        );
    }
    s
}
