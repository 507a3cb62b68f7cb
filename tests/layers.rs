//! The crate's layers, checked: reads every file of `src/` (the binary aside) and fails, naming
//! file:line, on a reference from a lower layer to a higher one, on `ocl` or `wgpu` inside
//! `backends/gpu/`, on one backend naming another outside `#[cfg(test)]`, on a file other than
//! `lib.rs` naming an item through the crate root (`crate::Hash` instead of its home), and on any
//! import circle between two top-level entries of `src/`.
//!
//! The layers, lowest first (see the crate docs): 1 `core/`, 2 `tree/`, 3 `backends/` (`cpu/`,
//! `gpu/`, `opencl/`, `wgpu/`), 4 `dispatch/`, 5 `api/` and `lib.rs`. Comments and string
//! literals are not code: doc links may name any item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A layer's number and name, from the first segment of a module path under the crate root.
fn layer_of(first: &str) -> (u8, &'static str) {
    match first {
        "core" => (1, "core"),
        "tree" => (2, "tree"),
        "backends" => (3, "backends"),
        "dispatch" => (4, "dispatch"),
        // `api/` and every item `lib.rs` defines or re-exports at the root.
        _ => (5, "api"),
    }
}

/// The source with comments and the contents of string and char literals blanked out (newlines
/// kept, so that line numbers stay).
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let next = c.get(i + 1).copied().unwrap_or('\0');
        if c[i] == '/' && next == '/' {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == '*' {
            let mut depth = 0;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (next == '"' || next == '#') && (i == 0 || !is_ident(c[i - 1])) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            out.push_str(&" ".repeat(j + 1 - i));
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|h| c.get(i + 1 + h) == Some(&'#')) {
                    out.push_str(&" ".repeat(1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (next == '\\' || c.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\''); a lifetime ('a) is code.
            out.push(' ');
            i += 1;
            if c.get(i) == Some(&'\\') {
                out.push_str("  ");
                i += 2;
            }
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// For each line, whether it lies in an item marked `#[cfg(test)]`.
fn test_lines(code: &str) -> Vec<bool> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            // The item that follows: up to its matching closing brace, or its semicolon.
            let mut depth = 0i32;
            let mut opened = false;
            let mut j = i;
            'item: while j < lines.len() {
                out[j] = true;
                for ch in lines[j].chars() {
                    match ch {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => {
                            depth -= 1;
                            if opened && depth == 0 {
                                break 'item;
                            }
                        }
                        ';' if !opened && j > i => break 'item,
                        _ => {}
                    }
                }
                j += 1;
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The module path of a file under `src/`: `backends/opencl/merkle.rs` is
/// `["backends", "opencl", "merkle"]`, `backends/opencl/mod.rs` is `["backends", "opencl"]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let file = parts.pop().expect("a file name");
    if file != "mod.rs" && file != "lib.rs" {
        parts.push(file.trim_end_matches(".rs").to_string());
    }
    parts
}

/// Identifiers of a path that starts at `at` (just after `crate::` or the `super::`s): the
/// segments up to the first non-identifier, or, for a group `{a::b, c}`, each member's segments.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let rest = &code[at..];
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 1;
        let mut end = 0;
        for (k, ch) in group.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inner = &group[..end];
        let mut members = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    members.push(&inner[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        members.push(&inner[start..]);
        return members
            .into_iter()
            .map(|m| m.trim())
            .filter(|m| !m.is_empty())
            .map(segments)
            .filter(|s| !s.is_empty())
            .collect();
    }
    vec![segments(rest)]
}

fn segments(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    loop {
        let len = rest.find(|ch: char| !is_ident(ch)).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        out.push(rest[..len].to_string());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(is_ident) => rest = r,
            _ => break,
        }
    }
    out
}

/// Every reference of `code` to a module path of the crate, as (line, absolute path).
fn references(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let before_ok =
        |at: usize| at == 0 || !(is_ident(bytes[at - 1] as char) || bytes[at - 1] == b':' || bytes[at - 1] == b'$');
    let mut at = 0;
    while let Some(k) = code[at..].find("crate::") {
        let pos = at + k;
        at = pos + 7;
        if before_ok(pos) {
            for p in paths_at(code, pos + 7) {
                out.push((line_of(pos), p));
            }
        }
    }
    let mut at = 0;
    while let Some(k) = code[at..].find("super::") {
        let pos = at + k;
        if !before_ok(pos) {
            at = pos + 7;
            continue;
        }
        let mut ups = 0;
        let mut end = pos;
        while code[end..].starts_with("super::") {
            ups += 1;
            end += 7;
        }
        at = end;
        if ups > module.len() {
            continue;
        }
        let base = &module[..module.len() - ups];
        for p in paths_at(code, end) {
            let mut abs = base.to_vec();
            abs.extend(p);
            out.push((line_of(pos), abs));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

const BACKENDS: [&str; 4] = ["cpu", "gpu", "opencl", "wgpu"];

/// The top-level entry of `src/` a module path lives in (`lib.rs` for root items).
fn top_entry(path: &[String]) -> String {
    match path.first().map(String::as_str) {
        Some(m @ ("core" | "tree" | "backends" | "dispatch" | "api")) => m.to_string(),
        _ => "lib.rs".to_string(),
    }
}

#[test]
fn layers_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut checked = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel.starts_with("bin") {
            // Layer 6: a crate of its own, which sees only the library's public API.
            continue;
        }
        checked += 1;
        let text = std::fs::read_to_string(file).expect("readable source");
        let code = code_only(&text);
        let in_test = test_lines(&code);
        let module = module_path(rel);
        let (layer, layer_name) = if module.is_empty() { (5, "api") } else { layer_of(&module[0]) };
        let unit = (module.first().map(String::as_str) == Some("backends")).then(|| module.get(1).cloned()).flatten();
        let here = format!("src/{}", rel.display());
        for (line, target) in references(&code, &module) {
            let test = in_test.get(line - 1).copied().unwrap_or(false);
            let Some(first) = target.first() else { continue };
            let (to_layer, to_name) = layer_of(first);
            let shown = target.join("::");
            if to_layer > layer {
                problems.push(format!(
                    "{here}:{line}: layer {layer} ({layer_name}) names {shown}, of layer {to_layer} ({to_name})"
                ));
            }
            if !module.is_empty() && to_name == "api" && first != "api" && !test {
                problems.push(format!("{here}:{line}: names {shown} through the crate root; name it where it lives"));
            }
            if first == "backends" {
                if let (Some(from), Some(to)) = (&unit, target.get(1)) {
                    let other_backend = from != to && BACKENDS.contains(&to.as_str()) && to != "gpu";
                    if other_backend && !test {
                        problems.push(format!("{here}:{line}: the {from} backend names the {to} backend ({shown})"));
                    }
                }
            }
            if !test {
                let (a, b) = (top_entry(&module), top_entry(&target));
                if a != b {
                    edges.entry(a).or_default().entry(b).or_insert_with(|| format!("{here}:{line}"));
                }
            }
        }
        if unit.as_deref() == Some("gpu") {
            for (n, l) in code.lines().enumerate() {
                for name in ["ocl", "wgpu"] {
                    let mut at = 0;
                    while let Some(k) = l[at..].find(name) {
                        let pos = at + k;
                        at = pos + name.len();
                        let before = l[..pos].chars().next_back();
                        let after = &l[pos + name.len()..];
                        let whole = !before.is_some_and(is_ident) && !after.starts_with(is_ident);
                        if whole && (after.starts_with("::") || l.trim_start().starts_with("use ")) {
                            problems.push(format!("{here}:{}: backends/gpu names `{name}`", n + 1));
                        }
                    }
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} source files found under {}", src.display());
    // Circles between top-level entries: any entry that reaches itself.
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((node, path)) = stack.pop() {
            for (next, at) in edges.get(&node).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.push(next.clone());
                    problems.push(format!("import circle {} (first reference: {at})", circle.join(" -> ")));
                } else if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{} layer problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_checker_finds_what_it_looks_for() {
    // A lower layer naming a higher one, a group import, super paths, a backend naming another,
    // and what must not count: comments, strings, test modules.
    let code = code_only(
        "use crate::{dispatch::backend, core::compress::Cv};\n\
         // crate::api::merkle in a comment\n\
         let s = \"crate::api in a string\";\n\
         use super::super::opencl::Worker;\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::backends::cpu::CpuBackend;\n}\n\
         fn f<'a>(x: &'a u8) -> char { '\"' }\n\
         use crate::Hash;\n",
    );
    let module: Vec<String> = ["backends", "wgpu", "merkle"].iter().map(|s| s.to_string()).collect();
    let refs = references(&code, &module);
    let shown: Vec<(usize, String)> = refs.iter().map(|(l, p)| (*l, p.join("::"))).collect();
    assert_eq!(
        shown,
        [
            (1, "dispatch::backend".to_string()),
            (1, "core::compress::Cv".to_string()),
            (7, "backends::cpu::CpuBackend".to_string()),
            (10, "Hash".to_string()),
            (4, "backends::opencl::Worker".to_string()),
        ]
    );
    let tests = test_lines(&code);
    assert!(!tests[3] && tests[4] && tests[6] && tests[7] && !tests[8]);
    assert_eq!(layer_of("dispatch").0, 4);
    assert_eq!(module_path(Path::new("backends/opencl/mod.rs")), ["backends", "opencl"]);
}

/// The files of backend folder `dir` that each file names (through `super::` or
/// `crate::backends::<dir>::`), outside its test items: `file -> {file}`.
fn sibling_imports(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backends").join(dir);
    let mut files = Vec::new();
    rust_files(&folder, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter(|p| p.parent() == Some(folder.as_path()))
        .map(|p| p.file_stem().expect("a file name").to_string_lossy().into_owned())
        .filter(|n| n != "mod")
        .collect();
    let mut graph = BTreeMap::new();
    for name in &names {
        let text = std::fs::read_to_string(folder.join(format!("{name}.rs"))).expect("a readable source file");
        let code = code_only(&text);
        let tests = test_lines(&code);
        let module = vec!["backends".to_string(), dir.to_string(), name.clone()];
        let uses: BTreeSet<String> = references(&code, &module)
            .into_iter()
            .filter(|(line, _)| !tests.get(line - 1).copied().unwrap_or(false))
            .filter_map(|(_, path)| match path.as_slice() {
                [b, d, file, ..] if b == "backends" && d == dir && names.contains(file) && file != name => {
                    Some(file.clone())
                }
                _ => None,
            })
            .collect();
        graph.insert(name.clone(), uses);
    }
    graph
}

/// A cycle of `graph` (its files in order, the first repeated at the end), if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search; 1 = on the current path, 2 = done.
    fn visit<'a>(
        n: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        path.push(n);
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let from = path.iter().position(|p| p == m).expect("on the path");
                    let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n.as_str()) {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Inside a GPU backend folder the files import one another without a circle: errors, program
/// building and scratch types are leaves the rest imports, never the other way round.
#[test]
fn gpu_backend_files_import_without_circles() {
    for dir in ["opencl", "wgpu"] {
        let graph = sibling_imports(dir);
        assert!(graph.len() > 3, "backends/{dir}: only {} files found", graph.len());
        if let Some(cycle) = find_cycle(&graph) {
            panic!("backends/{dir}: the files import one another in a circle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_circle_and_only_a_circle() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let c = find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])).expect("a circle");
    assert_eq!(c.first(), c.last(), "a circle ends where it starts: {c:?}");
    assert_eq!(c[..3].iter().map(String::as_str).collect::<BTreeSet<_>>(), BTreeSet::from(["a", "b", "c"]));
}
