//! The README's commands run from a fresh clone: it stays short, every command in its `sh` blocks
//! is one a fresh clone has (a script of scripts/, Node, npm, pip), every path it names inside the
//! repository exists and none points outside it, every `./scripts/leakscope` subcommand and flag
//! is one the CLI's `--help` lists, and every relative link leads to a file. (Its JavaScript and
//! Python snippets are run by tests/node/readme.test.mjs and python/tests/test_readme.py.)
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The README is for the people who use leakscope; the rest lives in docs/.
const MAX_LINES: usize = 250;
/// What a command in the README may start with, besides the repository's own scripts.
const PROGRAMS: [&str; 6] = ["npm", "pip", "python3", "cd", "git", "curl"];
/// Folders of the repository: a word starting with one of these names a file that must exist.
const TRACKED: [&str; 8] = ["data/", "tests/", "scripts/", "docs/", "python/", "www/", "js/", "src/"];

fn readme() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap()
}

/// The commands of the README's ```sh blocks: continuation lines joined, comments dropped.
fn sh_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let (mut inside, mut pending) = (false, String::new());
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            inside = !inside && trimmed == "```sh";
            continue;
        }
        if !inside || trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let code = trimmed.split(" # ").next().unwrap().trim();
        match code.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(code);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

/// The simple commands of a line (split at `&&`, `||`, `;`, `|`, `&`), each as its words.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for part in line
        .split("&&")
        .flat_map(|p| p.split("||"))
        .flat_map(|p| p.split([';', '|', '&']))
    {
        let words = shlex::split(part).unwrap_or_else(|| panic!("unbalanced quotes in the README: {line}"));
        // Leading VAR=value assignments are the command's environment.
        let words: Vec<String> = words
            .into_iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        if !words.is_empty() {
            out.push(words);
        }
    }
    out
}

/// `--flag`s of `leakscope <sub> --help`, by subcommand.
fn cli_flags(sub: &str, cache: &mut BTreeMap<String, String>) -> String {
    cache
        .entry(sub.to_string())
        .or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_leakscope"))
                .args([sub, "--help"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "the README runs `leakscope {sub}`, which the CLI does not have"
            );
            String::from_utf8(out.stdout).unwrap()
        })
        .clone()
}

#[test]
fn the_readme_is_short() {
    let lines = readme().lines().count();
    assert!(
        lines <= MAX_LINES,
        "README.md has {lines} lines: at most {MAX_LINES}, the rest belongs in docs/"
    );
}

#[test]
fn every_readme_command_runs_from_a_fresh_clone() {
    let text = readme();
    let commands = sh_commands(&text);
    assert!(
        commands.len() >= 5,
        "the README shows its commands in ```sh blocks ({} found)",
        commands.len()
    );
    let mut helps = BTreeMap::new();
    let mut problems = Vec::new();
    for line in &commands {
        for words in simple_commands(line) {
            let program = words[0].as_str();
            let script = program
                .strip_prefix("./")
                .filter(|p| p.starts_with("scripts/"))
                .or_else(|| {
                    matches!(program, "bash" | "node")
                        .then(|| words.get(1).map(String::as_str))
                        .flatten()
                });
            match script {
                Some(path) if Path::new(ROOT).join(path).is_file() => {}
                Some(path) => problems.push(format!("`{line}`: {path} is not in the repository")),
                None if PROGRAMS.contains(&program) => {}
                None => problems.push(format!(
                    "`{line}`: `{program}` is not a script of the repository or a program a fresh clone has"
                )),
            }
            for word in &words[1..] {
                let path = word.split_once('=').map_or(word.as_str(), |(_, v)| v);
                if path.starts_with("../") {
                    problems.push(format!("`{line}`: {path} is outside the repository"));
                } else if TRACKED.iter().any(|t| path.starts_with(t)) && !Path::new(ROOT).join(path).exists() {
                    problems.push(format!("`{line}`: {path} does not exist"));
                }
            }
            if program == "./scripts/leakscope" && words.len() > 1 && !words[1].starts_with('-') {
                let help = cli_flags(&words[1], &mut helps);
                for flag in words[2..].iter().filter(|w| w.starts_with("--")) {
                    let flag = flag.split('=').next().unwrap();
                    let listed = help.split(|c: char| c.is_whitespace() || c == ',').any(|w| w == flag);
                    if !listed {
                        problems.push(format!("`{line}`: `leakscope {}` has no {flag}", words[1]));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "the README's commands:\n{}", problems.join("\n"));
}

#[test]
fn every_relative_link_of_the_readme_and_docs_leads_to_a_file() {
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    let mut dirs = vec![Path::new(ROOT).join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (_, rest) in text.match_indices("](").map(|(i, _)| ((), &text[i + 2..])) {
            let target = rest.split(')').next().unwrap().split('#').next().unwrap().trim();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", page.strip_prefix(ROOT).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing:\n{}", broken.join("\n"));
}
