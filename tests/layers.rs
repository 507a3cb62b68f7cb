//! The crate's layers, checked: reads every file of `src/` and fails, naming file:line, on a
//! reference from a lower layer to a higher one, on `ocl` or `wgpu` inside `backends/gpu/`, on
//! one backend naming another outside `#[cfg(test)]`, on a file other than `lib.rs` naming an
//! item through the crate root (`crate::Hash` instead of its home), and on any import circle:
//! between the entries (files and folders) of any folder, the top level included, in the library,
//! the command line's crate (`cli/src/`) and the Python extension's (`python/src/`). The command
//! line (layer 6) is a crate of its own that uses the library's public API only: it includes none
//! of the library's files.
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
    if file != "mod.rs" && !(parts.is_empty() && (file == "lib.rs" || file == "main.rs")) {
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

#[test]
fn layers_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
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

/// Import circles that other work is removing, each as its folder and the entries of the circle.
/// The test fails on any other circle, and on one of these once it is gone (then delete its line).
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[];

/// One source file of a crate, for the import graph.
struct SourceFile {
    /// The path shown in messages, such as `src/tree/stack.rs`.
    shown: String,
    /// The folders from the crate's root folder down to the file's own, then the file name.
    entries: Vec<String>,
    module: Vec<String>,
    code: String,
    tests: Vec<bool>,
}

/// The `.rs` files of a crate whose root file (`lib.rs` or `main.rs`) lies in `dir`, leaving out
/// the folders `skip` names (relative to `dir`).
fn crate_files(dir: &Path, skip: &[&str]) -> Vec<SourceFile> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    rust_files(dir, &mut paths);
    paths.sort();
    let mut files: Vec<SourceFile> = paths
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(dir).expect("under the crate's folder").to_path_buf();
            if skip.iter().any(|s| rel.starts_with(s)) {
                return None;
            }
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let code = code_only(&text);
            Some(SourceFile {
                shown: path.strip_prefix(root).unwrap_or(&path).display().to_string(),
                entries: rel.iter().map(|p| p.to_string_lossy().into_owned()).collect(),
                module: module_path(&rel),
                tests: test_lines(&code),
                code,
            })
        })
        .collect();
    // A module file its parent declares under `#[cfg(test)]` (`mod tests;`) is test code whole.
    for i in 0..files.len() {
        let Some((name, parent)) = files[i].module.split_last() else { continue };
        let declared_for_tests = files.iter().filter(|p| p.module == parent).any(|p| {
            p.code.lines().enumerate().any(|(n, l)| {
                let l = l.trim();
                let decl = l.strip_prefix("pub(super) ").or(l.strip_prefix("pub(crate) ")).unwrap_or(l);
                decl == format!("mod {name};") && p.tests.get(n).copied().unwrap_or(false)
            })
        });
        if declared_for_tests {
            files[i].tests.iter_mut().for_each(|t| *t = true);
        }
    }
    files
}

/// The `use` declarations of `code` outside test items: (first line, last line, public, text
/// between `use` and `;`).
fn use_declarations(code: &str, tests: &[bool]) -> Vec<(usize, usize, bool, String)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(k) = code[at..].find("use ") {
        let pos = at + k;
        at = pos + 4;
        if pos > 0 && is_ident(bytes[pos - 1] as char) {
            continue;
        }
        let line_start = code[..pos].rfind('\n').map_or(0, |n| n + 1);
        let before = code[line_start..pos].trim();
        let public = before.starts_with("pub");
        if !(before.is_empty() || public || before.starts_with('#') || before.ends_with(']')) {
            continue;
        }
        let Some(end) = code[pos..].find(';') else { break };
        let (first, last) = (line_of(pos), line_of(pos + end));
        if tests.get(first - 1).copied().unwrap_or(false) {
            continue;
        }
        out.push((first, last, public, code[pos + 4..pos + end].to_string()));
        at = pos + end;
    }
    out
}

/// The paths a `use` tree names, each with the name it takes: `a::{b, c::d as e}` gives
/// `(a::b, b)` and `(a::c::d, e)`. Glob imports give none.
fn use_tree(prefix: &[String], tree: &str) -> Vec<(Vec<String>, String)> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut base = prefix.to_vec();
        base.extend(tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start, mut out) = (0, 0, Vec::new());
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(use_tree(&base, &inner[start..k]));
                    start = k + 1;
                }
                _ => {}
            }
        }
        out.extend(use_tree(&base, &inner[start..]));
        return out;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    if full.last().is_some_and(|l| l == "self") {
        full.pop();
    }
    match full.last() {
        Some(last) if last != "*" && !last.is_empty() => {
            let name = alias.unwrap_or_else(|| last.clone());
            vec![(full, name)]
        }
        _ => Vec::new(),
    }
}

/// A path written in module `module` (with child modules `children`) as a path from the crate
/// root, or `None` for one outside the crate (`std::`, other crates).
fn absolute(path: &[String], module: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some(module.iter().chain(&path[1..]).cloned().collect()),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = module.get(..module.len().checked_sub(ups)?)?;
            Some(base.iter().chain(&path[ups..]).cloned().collect())
        }
        _ if children.contains(first) => Some(module.iter().chain(path).cloned().collect()),
        _ => None,
    }
}

/// The module paths of `files`' child modules, by parent.
fn children_of(files: &[SourceFile]) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        if let Some((last, parent)) = f.module.split_last() {
            children.entry(parent.to_vec()).or_default().insert(last.clone());
        }
    }
    children
}

/// The import graph of one crate, between files: `from -> {to -> where}`. A reference counts
/// outside test items and outside the crate's root file; a folder's module file (`mod.rs`)
/// re-exporting its own descendants (`pub use child::Item`) is its front, not an import; a path
/// through an import (`super::Item` where the parent imports `Item`) counts as a reference to
/// the file the item comes from.
fn file_graph(files: &[SourceFile]) -> BTreeMap<usize, BTreeMap<usize, String>> {
    let by_module: BTreeMap<&[String], usize> =
        files.iter().enumerate().map(|(i, f)| (f.module.as_slice(), i)).collect();
    let children = children_of(files);
    let none = BTreeSet::new();
    let kids = |m: &[String]| children.get(m).unwrap_or(&none);
    // Each file's imports, which its children may name through it (`super::Item`): name -> the
    // absolute path it stands for.
    let mut reexports: Vec<BTreeMap<String, Vec<String>>> = vec![BTreeMap::new(); files.len()];
    // Each file's lines that belong to a public `use`.
    let mut public_lines: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); files.len()];
    for (i, f) in files.iter().enumerate() {
        for (first, last, public, tree) in use_declarations(&f.code, &f.tests) {
            if public {
                public_lines[i].extend(first..=last);
            }
            for (path, name) in use_tree(&[], &tree) {
                if let Some(abs) = absolute(&path, &f.module, kids(&f.module)) {
                    reexports[i].insert(name, abs);
                }
            }
        }
    }
    let resolve = |mut path: Vec<String>| -> Option<usize> {
        for _ in 0..8 {
            let (len, &file) = (0..=path.len()).rev().find_map(|n| by_module.get(&path[..n]).map(|f| (n, f)))?;
            match path.get(len).and_then(|name| reexports[file].get(name)) {
                Some(target) if target != &path[..=len] => {
                    let mut next = target.clone();
                    next.extend_from_slice(&path[len + 1..]);
                    path = next;
                }
                _ => return Some(file),
            }
        }
        None
    };
    let mut graph: BTreeMap<usize, BTreeMap<usize, String>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        if f.module.is_empty() {
            // The crate's root file (`lib.rs`, `main.rs`) declares the modules and wires them
            // together (re-exports, the command line's subcommands): the one file allowed to
            // name what names it.
            continue;
        }
        let mut refs = references(&f.code, &f.module);
        // Paths relative to the module itself: `self::x`, and `child::x` in a folder's module file.
        let bytes = f.code.as_bytes();
        let line_of = |at: usize| f.code[..at].matches('\n').count() + 1;
        for start in std::iter::once("self".to_string()).chain(kids(&f.module).iter().cloned()) {
            let needle = format!("{start}::");
            let mut at = 0;
            while let Some(k) = f.code[at..].find(&needle) {
                let pos = at + k;
                at = pos + needle.len();
                let prev = pos.checked_sub(1).map(|p| bytes[p] as char);
                if prev.is_some_and(|c| is_ident(c) || c == ':' || c == '$') {
                    continue;
                }
                for p in paths_at(&f.code, pos + needle.len()) {
                    let mut rel = vec![start.clone()];
                    rel.extend(p);
                    if let Some(abs) = absolute(&rel, &f.module, kids(&f.module)) {
                        refs.push((line_of(pos), abs));
                    }
                }
            }
        }
        for (line, path) in refs {
            if f.tests.get(line - 1).copied().unwrap_or(false) {
                continue;
            }
            let front = public_lines[i].contains(&line) && path.starts_with(&f.module);
            let Some(to) = resolve(path) else { continue };
            if to != i && !(front && files[to].module.starts_with(&f.module)) {
                graph.entry(i).or_default().entry(to).or_insert_with(|| format!("{}:{line}", f.shown));
            }
        }
    }
    graph
}

/// The circles of a graph: its strongly connected parts of more than one node.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (n, r) in &reached {
        if !r.contains(*n) {
            continue;
        }
        let part: BTreeSet<String> =
            r.iter().filter(|m| reached.get(m).is_some_and(|back| back.contains(*n))).cloned().collect();
        if part.len() > 1 && !out.contains(&part) {
            out.push(part);
        }
    }
    out
}

/// Every import circle of a crate's files, folder by folder: in each folder, its entries (files,
/// and subfolders taken whole) import one another without a circle. A circle between files is
/// one between the entries of the folder that holds them all, so none goes unseen.
fn folder_circles(folder: &str, files: &[SourceFile]) -> Vec<(String, BTreeSet<String>, String)> {
    let graph = file_graph(files);
    let mut folders: BTreeSet<Vec<String>> = BTreeSet::new();
    for f in files {
        for n in 0..f.entries.len() {
            folders.insert(f.entries[..n].to_vec());
        }
    }
    let mut out = Vec::new();
    for dir in folders {
        let entry = |f: &SourceFile| -> Option<String> {
            if !f.entries.starts_with(&dir) {
                return None;
            }
            let e = &f.entries[dir.len()];
            Some(if f.entries.len() > dir.len() + 1 { format!("{e}/") } else { e.clone() })
        };
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut at: BTreeMap<(String, String), String> = BTreeMap::new();
        for (from, tos) in &graph {
            for (to, place) in tos {
                if let (Some(a), Some(b)) = (entry(&files[*from]), entry(&files[*to])) {
                    if a != b {
                        g.entry(a.clone()).or_default().insert(b.clone());
                        at.entry((a, b)).or_insert_with(|| place.clone());
                    }
                }
            }
        }
        let name = std::iter::once(folder.to_string()).chain(dir.iter().cloned()).collect::<Vec<_>>().join("/");
        for part in circles(&g) {
            let sub: BTreeMap<String, BTreeSet<String>> = part
                .iter()
                .map(|n| (n.clone(), g[n].iter().filter(|m| part.contains(*m)).cloned().collect()))
                .collect();
            let cycle = find_cycle(&sub).expect("a strongly connected part has a cycle");
            let places: Vec<String> = cycle.windows(2).map(|w| at[&(w[0].clone(), w[1].clone())].clone()).collect();
            let shown = format!("{} ({}; all of {part:?})", cycle.join(" -> "), places.join(", "));
            out.push((name.clone(), part, shown));
        }
    }
    out
}

/// No import circles: inside every folder of the library, the command line and the Python
/// extension, the files and subfolders import one another in one direction (the top level
/// included).
#[test]
fn no_import_circles_in_any_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let library = crate_files(&root.join("src"), &[]);
    let cli = crate_files(&root.join("cli/src"), &[]);
    let python = crate_files(&root.join("python/src"), &[]);
    assert!(library.len() >= 20 && cli.len() >= 5, "only {} + {} source files found", library.len(), cli.len());
    assert!(python.len() >= 5, "only {} source files found under python/src", python.len());
    let mut found = folder_circles("src", &library);
    found.extend(folder_circles("cli/src", &cli));
    found.extend(folder_circles("python/src", &python));
    let mut problems = Vec::new();
    for (folder, part, shown) in &found {
        let known = KNOWN_CIRCLES
            .iter()
            .any(|(f, names)| f == folder && names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>() == *part);
        if !known {
            problems.push(format!("{folder}: import circle {shown}"));
        }
    }
    for (folder, names) in KNOWN_CIRCLES {
        let set: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        if !found.iter().any(|(f, part, _)| f == folder && *part == set) {
            problems.push(format!("{folder}: the known circle {names:?} is gone: delete it from KNOWN_CIRCLES"));
        }
    }
    assert!(problems.is_empty(), "{} import circle problem(s):\n{}", problems.len(), problems.join("\n"));
}

/// The command line sees the library through its public API only: being a crate of its own, it
/// cannot name the library's private items, so what is left to check is that none of its files
/// takes source from elsewhere (`#[path]`, `include!`), such as a module of the library.
#[test]
fn the_command_line_uses_only_the_librarys_public_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cli = crate_files(&root.join("cli/src"), &[]);
    assert!(cli.len() >= 5, "only {} source files found under cli/src", cli.len());
    let mut problems = Vec::new();
    for f in &cli {
        for (n, line) in f.code.lines().enumerate() {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            let includes = ["#[path", "include!(", "include_str!(", "include_bytes!("];
            if let Some(what) = includes.iter().find(|w| compact.contains(*w)) {
                problems.push(format!("{}:{}: `{what}` takes source from outside the crate's modules", f.shown, n + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_circle_check_reads_use_trees_and_relative_paths() {
    let module: Vec<String> = vec!["tree".into()];
    let kids: BTreeSet<String> = ["backend".to_string()].into();
    let names: Vec<(String, String)> = use_tree(&[], "backend::{Backend, Timed as T, x::{self, y}}")
        .into_iter()
        .map(|(p, n)| (p.join("::"), n))
        .collect();
    let want = [("backend::Backend", "Backend"), ("backend::Timed", "T"), ("backend::x", "x"), ("backend::x::y", "y")];
    assert_eq!(names, want.map(|(p, n)| (p.to_string(), n.to_string())));
    let abs = |p: &str| absolute(&p.split("::").map(String::from).collect::<Vec<_>>(), &module, &kids);
    assert_eq!(abs("backend::Backend"), Some(vec!["tree".into(), "backend".into(), "Backend".into()]));
    assert_eq!(abs("super::core::X"), Some(vec!["core".into(), "X".into()]));
    assert_eq!(abs("std::mem"), None);
    // Two files of one folder naming each other, one through the folder's re-export: a circle.
    let file = |entries: &[&str], code: &str| {
        let code = code_only(code);
        SourceFile {
            shown: entries.join("/"),
            entries: entries.iter().map(|s| s.to_string()).collect(),
            module: module_path(&entries.iter().collect::<PathBuf>()),
            tests: test_lines(&code),
            code,
        }
    };
    let files = |b: &str| {
        [
            file(&["lib.rs"], "mod t;\n"),
            file(&["t", "mod.rs"], "mod a;\nmod b;\npub use a::A;\npub use b::B;\n"),
            file(&["t", "a.rs"], "use super::B;\n"),
            file(&["t", "b.rs"], b),
        ]
    };
    let found =
        folder_circles("src", &files("use crate::t::a;\n#[cfg(test)]\nmod tests { use super::super::a::A; }\n"));
    assert_eq!(found.len(), 1, "{:?}", found.iter().map(|c| &c.2).collect::<Vec<_>>());
    assert_eq!(found[0].0, "src/t");
    assert_eq!(found[0].1, BTreeSet::from(["a.rs".to_string(), "b.rs".to_string()]));
    // Without b's import, no circle: the folder's re-exports are its front, not imports; nor
    // does an import inside a test item count.
    let files = files("#[cfg(test)]\nmod tests { use super::a::A; }\n");
    assert!(folder_circles("src", &files).is_empty());
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
