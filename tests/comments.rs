//! Comments say what the code does and why; measurements live in docs/performance.md and
//! history in git. This test fails on a comment under `src/`, `cli/src/`, `shaders/`, `python/`
//! or `build.rs` that names a work session (`session 12`), a numbered run (`run 30`, `runs 36
//! and 37`) or a host (`h17`), naming file and line.

use std::path::{Path, PathBuf};

/// The sources to check: Rust, WGSL and OpenCL C, and the Python package's Python and shell
/// scripts (build output, virtual environments and caches left out).
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("build.rs")];
    let mut dirs = vec![root.join("src"), root.join("cli/src"), root.join("shaders"), root.join("python")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                let skip = name.starts_with('.') || name == "target" || name == "__pycache__";
                if !skip {
                    dirs.push(path);
                }
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("rs" | "wgsl" | "cl" | "py" | "pyi" | "sh")
            ) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether `file`'s comments start with `#` (Python, shell) rather than `//`.
fn hash_comments(file: &Path) -> bool {
    matches!(file.extension().and_then(|e| e.to_str()), Some("py" | "pyi" | "sh"))
}

/// The comment text of each line of a Python or shell source: what follows a `#` (one inside a
/// string literal counts too, which can only make the check stricter).
fn hash_comment_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| line.find('#').map(|at| (i + 1, line[at + 1..].to_string())))
        .collect()
}

/// The comment text of each line (1-based line numbers): what follows `//`, and the lines of
/// `/* ... */` blocks. A `//` inside a string literal counts as a comment too, which can only
/// make the check stricter.
fn comments(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if in_block {
            let end = line.find("*/");
            out.push((i + 1, line[..end.unwrap_or(line.len())].to_string()));
            in_block = end.is_none();
        } else if let Some(at) = line.find("//") {
            out.push((i + 1, line[at + 2..].to_string()));
        } else if let Some(at) = line.find("/*") {
            let rest = &line[at + 2..];
            let end = rest.find("*/");
            out.push((i + 1, rest[..end.unwrap_or(rest.len())].to_string()));
            in_block = end.is_none();
        }
    }
    out
}

/// What in `comment` names a session, a run or a host, if anything: `session`, `sessions`,
/// `run` or `runs` followed by a space and a number, or a host name.
fn lab_note(comment: &str) -> Option<String> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = comment;
    while let Some(start) = rest.find(|c: char| is_word(c)) {
        let tail = &rest[start..];
        let len = tail.find(|c: char| !is_word(c)).unwrap_or(tail.len());
        let (word, after) = tail.split_at(len);
        let lower = word.to_ascii_lowercase();
        if matches!(lower.as_str(), "session" | "sessions" | "run" | "runs") {
            let spaced = after.trim_start_matches(' ');
            if spaced.len() < after.len() && spaced.starts_with(|c: char| c.is_ascii_digit()) {
                let digits = spaced.find(|c: char| !c.is_ascii_digit()).unwrap_or(spaced.len());
                return Some(format!("{word} {}", &spaced[..digits]));
            }
        }
        // Host names of the measuring machines: `h` and two or three digits (a lowercase h, so
        // that GPU models such as H100 or H200 stay nameable).
        if (3..=4).contains(&word.len()) && word.starts_with('h') && word[1..].bytes().all(|b| b.is_ascii_digit()) {
            return Some(word.to_string());
        }
        rest = after;
    }
    None
}

#[test]
fn the_patterns_catch_lab_notes_and_nothing_else() {
    for note in ["session 12", "Session 3: tried", "run 30", "(runs 36 and 37)", "on h17, twice", "h200"] {
        assert!(lab_note(note).is_some(), "{note}");
    }
    for fine in
        ["runs of whole chunks", "run the tests", "an H200 GPU", "h0 and h1", "the 2 runs", "rerun 3", "runs): 8 KiB"]
    {
        assert_eq!(lab_note(fine), None, "{fine}");
    }
    let text = "let a = 1; // run 4 here\n/* session\n 5 */ let b = 2;\nlet url = \"x\";";
    let found: Vec<_> = comments(text).into_iter().filter_map(|(n, c)| lab_note(&c).map(|_| n)).collect();
    assert_eq!(found, [1]);
    let python = "x = 1  # measured in session 9\ny = 'run 4'\n# h12 again\n";
    let found: Vec<_> = hash_comment_lines(python).into_iter().filter_map(|(n, c)| lab_note(&c).map(|_| n)).collect();
    assert_eq!(found, [1, 3]);
    assert!(hash_comments(Path::new("python/b3accel/dask.py")) && !hash_comments(Path::new("src/lib.rs")));
}

#[test]
fn no_comment_names_a_session_a_run_or_a_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in sources(root) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let lines = if hash_comments(&file) { hash_comment_lines(&text) } else { comments(&text) };
        for (line, comment) in lines {
            if let Some(note) = lab_note(&comment) {
                let rel = file.strip_prefix(root).unwrap_or(&file).display();
                found.push(format!("{rel}:{line}: '{note}' in: {}", comment.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} comment line(s) read like a lab notebook; say what the code does and why, and move \
         measurements to docs/performance.md:\n{}",
        found.len(),
        found.join("\n")
    );
}
