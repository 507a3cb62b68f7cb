//! The log-log throughput plot `b3accel bench --plot FILE.svg` writes.

use super::report::{describe, series_names, size_columns};
use super::row::Row;
use std::fmt::Write as _;

/// Line colours and dash patterns: series `i` gets colour `i % 10` and pattern `i / 10`, so
/// every one of the first 40 series has a style of its own (the legend shows each).
pub(super) const COLORS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
pub(super) const DASHES: [&str; 4] = ["", "8 4", "2 3", "10 3 2 3"];

pub(super) fn line_style(i: usize) -> (&'static str, String) {
    let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
    (COLORS[i % COLORS.len()], if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") })
}

/// `text` cut at spaces into lines of at most `max` characters (a longer word gets a line of
/// its own).
pub(super) fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= max => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Throughput against size, log-log, one polyline per series, as a standalone SVG. The title
/// (the machine) is wrapped to the picture's width; the legend shows each series' line.
pub(super) fn plot(machine: &serde_json::Value, rows: &[Row]) -> String {
    let hash: Vec<&Row> = rows.iter().filter(|r| r.test == "hash").collect();
    let series = series_names(&hash);
    let w = 1000.0;
    // About 6.5 px per character at 11 px: the machine's description in lines that fit.
    let title = wrap(&describe(machine), ((w - 40.0) / 6.5) as usize);
    let (left, right, bottom) = (80.0, 290.0, 60.0);
    let top = 44.0 + 14.0 * title.len() as f64;
    let legend_end = top + 16.0 * series.len() as f64 + 10.0;
    let h = (top + 480.0 + bottom).max(legend_end + bottom);
    let xs: Vec<f64> = hash.iter().map(|r| (r.bytes as f64).log2()).collect();
    let ys: Vec<f64> = hash.iter().map(|r| r.gbps().max(1e-3).log10()).collect();
    let (x0, x1) = (xs.iter().cloned().fold(f64::MAX, f64::min), xs.iter().cloned().fold(f64::MIN, f64::max));
    let (y0, y1) =
        (ys.iter().cloned().fold(f64::MAX, f64::min).floor(), ys.iter().cloned().fold(f64::MIN, f64::max).ceil());
    let (x1, y1) = (if x1 > x0 { x1 } else { x0 + 1.0 }, if y1 > y0 { y1 } else { y0 + 1.0 });
    let px = |x: f64| left + (x - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"20\" y=\"22\" font-size=\"15\">BLAKE3 throughput (GB/s) by input size</text>\n"
    );
    for (i, line) in title.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"20\" y=\"{:.1}\" font-size=\"11\" fill=\"#444\">{}</text>",
            40.0 + 14.0 * i as f64,
            xml(line)
        );
    }
    let mut e = y0;
    while e <= y1 {
        let y = py(e);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 6.0,
            y + 4.0,
            xml(&format!("{}", 10f64.powf(e)))
        );
        e += 1.0;
    }
    for (b, l) in &size_columns(&hash) {
        let x = px((*b as f64).log2());
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            h - bottom,
            h - bottom + 18.0,
            xml(l)
        );
    }
    for (i, name) in series.iter().enumerate() {
        let (color, dash) = line_style(i);
        let pts: Vec<String> = hash
            .iter()
            .filter(|r| r.series == *name)
            .map(|r| format!("{:.1},{:.1}", px((r.bytes as f64).log2()), py(r.gbps().max(1e-3).log10())))
            .collect();
        let (lx, ly) = (w - right + 10.0, top + 16.0 * i as f64 + 6.0);
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>\n\
             <line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            pts.join(" "),
            lx + 28.0,
            lx + 34.0,
            ly + 4.0,
            xml(name)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">input size (log scale)</text>",
        left + (w - left - right) / 2.0,
        h - 15.0
    );
    s.push_str("</svg>\n");
    s
}

pub(super) fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
