//! Keeps `semantics::python` the one home of Python's behaviour (rust-analyzer's
//! `xtask/src/tidy.rs` style): walks the workspace's `.rs` sources and fails, naming the
//! file and line, where a second copy of a Python rule appears outside it.

use std::path::{Path, PathBuf};

/// What may not appear outside the Python layer, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    (
        concat!(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "abcdefghijklmnopqrstuvwxyz0123456789+/"
        ),
        "a hand-written base64 table: use the `base64` crate or `python::b64encode`/`b64decode`",
    ),
    (
        concat!(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "abcdefghijklmnopqrstuvwxyz0123456789-_"
        ),
        "a hand-written base64 table: use the `base64` crate",
    ),
    ("fn truthy(", "Python's truth: use `python::truthy`"),
    ("fn is_true(", "Salt's `is_true`: use `python::is_true`"),
    ("fn fnmatch(", "Python's fnmatch: use `python::fnmatch`"),
    (
        "fn py_repr(",
        "Python's repr: use `python::repr`/`str_repr`",
    ),
    (
        "fn py_str_repr(",
        "Python's repr of a str: use `python::str_repr`",
    ),
    (
        "fn py_float(",
        "Python's float repr: use `python::float_repr` (or `float_of` to parse)",
    ),
    ("fn py_pformat(", "pprint.pformat: use `python::pformat`"),
    (
        "fn python_json(",
        "json.dumps: use `python::dumps`/`salt_dumps`",
    ),
    ("fn py_json(", "json.dumps: use `python::dumps`"),
    ("fn json_dump(", "json.dumps: use `python::dumps`"),
    (
        "fn parse_kwarg(",
        "Salt's parse_kwarg: use `saltq_semantics::args::parse_kwarg`",
    ),
    ("fn py_type(", "type(v).__name__: use `python::type_name`"),
    (
        "fn python_type(",
        "type(v).__name__: use `python::type_name`",
    ),
    ("fn type_name(", "type(v).__name__: use `python::type_name`"),
    ("fn yamlify(", "Salt's yamlify_arg: use `python::yamlify`"),
    (
        "b'+' => 62",
        "a hand-written base64 decoder: use `python::b64decode` or the `base64` crate",
    ),
    (
        "ser::Formatter for",
        "a JSON formatter of its own: use `python::dumps`",
    ),
    ("\"NoneType\"", "type(v).__name__: use `python::type_name`"),
];

/// Files allowed to hold a pattern: the Python layer itself, and the one home of
/// Salt's argument rules (`parse_kwarg`).
fn allowed(rel: &str, pattern: &str) -> bool {
    rel.starts_with("semantics/src/python/")
        || rel == "semantics/tests/tidy.rs"
        || (rel == "semantics/src/args.rs" && pattern == "fn parse_kwarg(")
}

/// Every `.rs` file under `dir`, skipping build output and hidden folders.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            // Build output (`target/`, marked by Cargo's CACHEDIR.TAG), not `src/target/`.
            if !path.join("CACHEDIR.TAG").exists() && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `file:line: what was found (why)` for every forbidden pattern in the workspace at `root`.
fn violations(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for (pattern, why) in FORBIDDEN {
                if line.contains(pattern) && !allowed(&rel, pattern) {
                    found.push(format!("{rel}:{}: `{pattern}`: {why}", n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn one_python_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the semantics crate sits in the workspace");
    let found = violations(root);
    assert!(
        found.is_empty(),
        "copies of Python behaviour outside semantics/src/python/ (issue #26):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_walk_sees_the_workspace() {
    // A walk that found nothing would pass `one_python_layer` without checking anything.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    rust_files(root, &mut files);
    for must in [
        "states/src/render/filters.rs",
        "netapi/src/server.rs",
        "exec/src/args.rs",
        "semantics/src/target/compound.rs",
    ] {
        assert!(files.iter().any(|f| f.ends_with(must)), "{must} not walked");
    }
}
