//! The layering rule as a test (docs/architecture.md): every file of `src/` imports only files of
//! its own layer or of a lower one, only the app imports a side floor ([`SIDE`]), and no chain
//! of imports between files comes back to where it started. A child module may use its ancestors' items (a parent re-exports its children),
//! so an import of an ancestor is neither an upward import nor part of a circle.
//!
//! The files are found as the compiler finds them, from `lib.rs` along `mod` declarations;
//! code under `#[cfg(test)]` is left out (tests may use anything). Imports are the `use`
//! declarations and every `crate::` and `super::` path in the code, with comments and string
//! literals blanked first so that neither hides nor fakes one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: the first segment of a module's path names its layer.
pub const LAYERS: &[&str] = &[
    "base", "vocab", "adapters", "sweep", "generate", "batch", "mock_llm", "analysis", "results",
    "output", "import", "app",
];

/// Side floors: programs that stand beside the pipeline, which only `app` imports. Their place
/// in [`LAYERS`] says what they may import; nothing but `app` (and the floor itself) may import
/// them, whatever its place.
pub const SIDE: &[&str] = &["mock_llm", "import"];

/// A module path below the crate root: `["output", "report", "html"]`.
type ModPath = Vec<String>;

struct Module {
    file: PathBuf,
    /// The code with comments, literals and `#[cfg(test)]` items blanked.
    code: String,
}

/// Every problem of the tree under `src`, one line each, naming the two files.
pub fn check(src: &Path) -> Vec<String> {
    let modules = modules(src);
    let name = |m: &ModPath| {
        modules[m]
            .file
            .strip_prefix(src)
            .unwrap()
            .display()
            .to_string()
    };
    let mut problems = Vec::new();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (path, module) in &modules {
        let targets = imports(path, &module.code, &modules);
        for target in targets {
            if target.is_empty() {
                if !path.is_empty() {
                    problems.push(format!(
                        "{} imports an item of lib.rs, which is above every layer",
                        name(path)
                    ));
                }
                continue;
            }
            if path.starts_with(&target) {
                continue; // an ancestor's items
            }
            if let (Some(from), Some(to)) = (layer(path), layer(&target)) {
                if from != to && SIDE.contains(&LAYERS[to]) && LAYERS[from] != "app" {
                    problems.push(format!(
                        "{} imports {}, which is on a side floor only app/ imports ({})",
                        name(path),
                        name(&target),
                        LAYERS[to]
                    ));
                } else if to > from {
                    problems.push(format!(
                        "{} imports {}, which is in a higher layer ({} above {})",
                        name(path),
                        name(&target),
                        LAYERS[to],
                        LAYERS[from]
                    ));
                }
            }
            edges.entry(path.clone()).or_default().insert(target);
        }
        if !path.is_empty() && layer(path).is_none() {
            problems.push(format!(
                "{} is in no layer: put it in a folder named in layering::LAYERS",
                name(path)
            ));
        }
    }
    for (a, b, via) in circles(&edges) {
        let via: Vec<String> = via.iter().map(&name).collect();
        problems.push(format!(
            "{} imports {}, which imports it back{}",
            name(&a),
            name(&b),
            if via.is_empty() {
                String::new()
            } else {
                format!(" through {}", via.join(", "))
            }
        ));
    }
    problems
}

fn layer(path: &ModPath) -> Option<usize> {
    LAYERS
        .iter()
        .position(|l| path.first().is_some_and(|p| p == l))
}

/// Every module of the crate, from lib.rs along its non-test `mod` declarations.
fn modules(src: &Path) -> BTreeMap<ModPath, Module> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(Vec::new(), src.join("lib.rs"))];
    while let Some((path, file)) = todo.pop() {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let code = without_test_items(&blank(&text));
        // Children of `a/mod.rs` and `lib.rs` are beside them; those of `a.rs` are in `a/`.
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for child in mod_declarations(&code) {
            let mut child_path = path.clone();
            child_path.push(child.clone());
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let child_file = if flat.exists() { flat } else { nested };
            todo.push((child_path, child_file));
        }
        out.insert(path, Module { file, code });
    }
    out
}

/// `mod name;` declarations (not inline `mod name { ... }`, whose code is in this file).
fn mod_declarations(code: &str) -> Vec<String> {
    let re = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    re.captures_iter(code).map(|c| c[1].to_string()).collect()
}

/// The modules `code` (of module `path`) imports: a `use` tree's or a path's longest prefix
/// that names a module, or the crate root (`[]`) for an item of lib.rs.
fn imports(path: &ModPath, code: &str, modules: &BTreeMap<ModPath, Module>) -> BTreeSet<ModPath> {
    let resolve = |segs: &[&str], in_use: bool| -> Option<ModPath> {
        let (mut base, mut rest) = match segs.first() {
            Some(&"crate") => (Vec::new(), &segs[1..]),
            Some(&"super") | Some(&"self") => (path.clone(), segs),
            Some(first) if in_use => {
                let mut child = path.clone();
                child.push(first.to_string());
                if !modules.contains_key(&child) {
                    return None; // another crate, or an item of this module
                }
                (path.clone(), segs)
            }
            _ => return None,
        };
        while let Some(&first) = rest.first() {
            match first {
                "super" => {
                    base.pop()?;
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        let mut target = base;
        for seg in rest {
            let mut next = target.clone();
            next.push(seg.to_string());
            if !modules.contains_key(&next) {
                break;
            }
            target = next;
        }
        Some(target)
    };
    let mut out = BTreeSet::new();
    let use_re = regex::Regex::new(r"\buse\s+([^;]+);").unwrap();
    let as_re = regex::Regex::new(r"\s+as\s+\w+").unwrap();
    for c in use_re.captures_iter(code) {
        let tree: String = as_re
            .replace_all(&c[1], "")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        for leaf in expand(&tree) {
            let segs: Vec<&str> = leaf.split("::").filter(|s| !s.is_empty()).collect();
            out.extend(resolve(&segs, true));
        }
    }
    let path_re = regex::Regex::new(r"\b(?:crate|super)(?:::\w+)+").unwrap();
    for m in path_re.find_iter(code) {
        let start = m.start();
        if start >= 2 && &code[start - 2..start] == "::" {
            continue; // `a::super::b` is written `super::super`, never this
        }
        let segs: Vec<&str> = m.as_str().split("::").collect();
        out.extend(resolve(&segs, false));
    }
    out.remove(path);
    out
}

/// The leaves of a `use` tree without whitespace: `a::{b,c::{d,e}}` is `a::b`, `a::c::d`,
/// `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_end_matches("::self").to_string()];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..]);
    let inner = inner.strip_suffix('}').unwrap_or(inner);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|i| !i.is_empty())
        .flat_map(|item| expand(&format!("{prefix}{item}")))
        .collect()
}

/// `text` with comments and the insides of string and char literals replaced by spaces, so
/// that a `{`, a `//` or a `crate::` in a literal means nothing.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            b'/' if next == Some(b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                clear(&mut out, i, end);
                i = end;
            }
            b'/' if next == Some(b'*') => {
                let (mut depth, mut j) = (0usize, i);
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                clear(&mut out, i, j);
                i = j;
            }
            b'r' if (i == 0 || !ident(b[i - 1]) || b[i - 1] == b'b')
                && matches!(next, Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                let end = text[body..].find(&close).map_or(b.len(), |n| body + n);
                clear(&mut out, body, end);
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                clear(&mut out, i + 1, j);
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{1F600}', 'é'), or a lifetime ('a).
                let end = if next == Some(b'\\') {
                    text[i + 2..].find('\'').map(|n| i + 2 + n)
                } else {
                    let c = text[i + 1..].chars().next();
                    c.map(|c| i + 1 + c.len_utf8())
                        .filter(|&e| b.get(e) == Some(&b'\''))
                };
                match end {
                    Some(end) => {
                        clear(&mut out, i + 1, end);
                        i = end + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced, by spaces")
}

/// `code` without the items under `#[cfg(test)]` (a `mod tests { ... }`, a `mod tests;`, a
/// helper function).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let semi = item.find(';');
        let open = item.find('{');
        let end = match (semi, open) {
            (Some(s), Some(o)) if s < o => s + 1,
            (Some(s), None) => s + 1,
            (_, Some(o)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (i, c) in item[o..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Edges that close a circle: for each strongly connected set of modules, one edge `a -> b`
/// inside it with the modules a path from `b` back to `a` passes through.
fn circles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<(ModPath, ModPath, Vec<ModPath>)> {
    let mut out = Vec::new();
    let mut reported: BTreeSet<ModPath> = BTreeSet::new();
    for (a, targets) in edges {
        if reported.contains(a) {
            continue;
        }
        for b in targets {
            if let Some(path) = route(edges, b, a) {
                // path runs b .. a; the modules strictly between are the detour.
                let via: Vec<ModPath> = path[1..path.len() - 1].to_vec();
                reported.extend(path.iter().cloned());
                out.push((a.clone(), b.clone(), via));
                break;
            }
        }
    }
    out
}

/// The shortest chain of imports from `from` to `to`, both included.
fn route(
    edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    from: &ModPath,
    to: &ModPath,
) -> Option<Vec<ModPath>> {
    let mut came_from: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from.clone()]);
    let mut seen = BTreeSet::from([from.clone()]);
    while let Some(m) = queue.pop_front() {
        if &m == to {
            let mut path = vec![m.clone()];
            let mut at = m;
            while let Some(prev) = came_from.get(&at) {
                path.push(prev.clone());
                at = prev.clone();
            }
            path.reverse();
            return Some(path);
        }
        for next in edges.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                came_from.insert(next.clone(), m.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_import_points_down_and_no_circle_remains() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let problems = check(&src);
        assert!(
            problems.is_empty(),
            "the layers must point one way (docs/architecture.md):\n{}",
            problems.join("\n")
        );
        // The check saw the whole crate, not an empty tree.
        let modules = modules(&src);
        assert!(modules.len() > 100, "only {} modules found", modules.len());
        for layer in LAYERS {
            assert!(
                modules
                    .keys()
                    .any(|m| m.first().is_some_and(|f| f == layer)),
                "no module in layer {layer}"
            );
        }
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn an_upward_import_and_a_circle_are_named_with_both_files() {
        let dir = tree(&[
            ("lib.rs", "pub mod base;\npub mod vocab;\npub mod app;\n"),
            ("base/mod.rs", "pub mod text;\npub mod term;\n"),
            // Upward, through a group and a rename: base names the app.
            (
                "base/text.rs",
                "use crate::{app::cli::{Cli as C}, base::term};\npub fn f() {}\n",
            ),
            // A circle inside one layer, one side written as an inline path.
            ("base/term.rs", "pub fn g() { crate::base::text::f() }\n"),
            ("vocab/mod.rs", "pub mod grid;\nuse self::grid::Setting;\n"),
            // A child may use its parent's items; a test module may use anything.
            (
                "vocab/grid.rs",
                "use super::*;\npub struct Setting;\n#[cfg(test)]\nmod tests { use crate::app::cli; }\n",
            ),
            ("app/mod.rs", "pub mod cli;\n"),
            // Comments and strings hide no import and fake none.
            (
                "app/cli.rs",
                "// use crate::nothing;\npub struct Cli; const S: &str = \"crate::base::x {\"; const C: char = '{';\nuse crate::vocab::grid::Setting;\n",
            ),
        ]);
        let problems = check(dir.path());
        assert_eq!(
            problems,
            [
                "base/text.rs imports app/cli.rs, which is in a higher layer (app above base)",
                "base/term.rs imports base/text.rs, which imports it back",
            ],
            "{problems:#?}"
        );
    }

    #[test]
    fn a_side_floor_imported_from_anywhere_but_the_app_fails() {
        let dir = tree(&[
            (
                "lib.rs",
                "pub mod base;\npub mod adapters;\npub mod mock_llm;\npub mod output;\npub mod app;\n",
            ),
            ("base/mod.rs", "pub fn f() {}\n"),
            (
                "adapters/mod.rs",
                "pub struct Model;\nfn f() { crate::mock_llm::serve() }\n",
            ),
            // A side floor may use the floors below it, and itself.
            (
                "mock_llm/mod.rs",
                "pub mod chat;\nuse crate::adapters::Model;\npub fn serve() {}\n",
            ),
            ("mock_llm/chat.rs", "use super::serve;\n"),
            // Below it or above it, no floor but the app may import it.
            ("output/mod.rs", "use crate::mock_llm::serve;\n"),
            ("app/mod.rs", "use crate::mock_llm::serve;\nuse crate::output;\n"),
        ]);
        assert_eq!(
            check(dir.path()),
            [
                "adapters/mod.rs imports mock_llm/mod.rs, which is on a side floor only app/ imports (mock_llm)",
                "output/mod.rs imports mock_llm/mod.rs, which is on a side floor only app/ imports (mock_llm)",
                "adapters/mod.rs imports mock_llm/mod.rs, which imports it back",
            ]
        );
    }

    #[test]
    fn a_longer_circle_names_the_files_between() {
        let dir = tree(&[
            ("lib.rs", "mod base;\n"),
            ("base/mod.rs", "mod a;\nmod b;\nmod c;\n"),
            ("base/a.rs", "use super::b::X;\n"),
            ("base/b.rs", "pub struct X; use super::c::Y;\n"),
            ("base/c.rs", "pub struct Y; fn f() { super::a::g() }\n"),
        ]);
        assert_eq!(
            check(dir.path()),
            ["base/a.rs imports base/b.rs, which imports it back through base/c.rs"]
        );
    }

    #[test]
    fn literals_and_comments_are_blanked_but_lifetimes_stay() {
        let code = "fn f<'a>(x: &'a str) { let c = '}'; let s = r#\"a\"b {\"#; /* { /* } */ */ }";
        let blanked = blank(code);
        assert_eq!(blanked.len(), code.len());
        assert_eq!(blanked.matches('{').count(), blanked.matches('}').count());
        assert!(blanked.contains("<'a>") && blanked.contains("&'a str"));
        assert!(!blanked.contains("a\"b"));
        assert_eq!(
            expand("crate::a::{b,c::{d,self},e}"),
            [
                "crate::a::b",
                "crate::a::c::d",
                "crate::a::c",
                "crate::a::e"
            ]
        );
    }
}
