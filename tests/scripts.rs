//! The scripts a new user runs find the Rust toolchain scripts/install.sh just installed, even from
//! a shell whose PATH does not have ~/.cargo/bin yet, and say plainly when the Rust they find is
//! older than Cargo.toml's rust-version.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The build directory this test was built in, so `scripts/leakscope` finds the CLI built and
/// does not start a second build elsewhere.
fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_leakscope"));
    bin.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/leakscope")
        .to_path_buf()
}

fn script(name: &str, args: &[&str], path: &str, home_env: Option<&Path>) -> Output {
    let mut cmd = Command::new("/bin/bash");
    cmd.arg(Path::new(ROOT).join("scripts").join(name))
        .args(args)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("LEAKSCOPE_SKIP_INSTALL", "1")
        .current_dir(std::env::temp_dir());
    if let Some(cargo_home) = home_env {
        cmd.env("CARGO_HOME", cargo_home);
    }
    cmd.output().expect("bash runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// PATH without every directory that holds a cargo: a shell that has not loaded ~/.cargo/env.
fn path_without_cargo() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let kept: Vec<&str> = path
        .split(':')
        .filter(|p| !p.is_empty() && !Path::new(p).join("cargo").exists())
        .collect();
    kept.join(":")
}

/// Where rustup keeps cargo and its `env` file.
fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").expect("HOME is set")).join(".cargo"))
}

/// A PATH of the few tools the scripts use before they look for Rust, and nothing else (a
/// Debian cargo in /usr/bin must not stand in for the toolchain under test).
fn bare_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leakscope-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for tool in [
        "dirname", "sed", "head", "sort", "awk", "grep", "cat", "printf", "env", "id", "mktemp", "chmod",
    ] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists());
        if let Some(found) = found {
            let link = dir.join(tool);
            if !link.exists() {
                std::os::unix::fs::symlink(found, link).unwrap();
            }
        }
    }
    dir
}

#[test]
fn the_cli_script_finds_rustups_cargo_when_path_lacks_it() {
    let cargo_home = cargo_home();
    let out = script("leakscope", &["--version"], &path_without_cargo(), Some(&cargo_home));
    if cargo_home.join("env").exists() {
        // rustup's cargo: found through $CARGO_HOME/env, as install.sh leaves it.
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("leakscope {}", env!("CARGO_PKG_VERSION"))
        );
    } else {
        // A cargo not from rustup, taken off PATH: nothing to find, and the script says so.
        assert!(!out.status.success());
        assert!(text(&out).contains("no Rust toolchain found"), "{}", text(&out));
    }
}

#[test]
fn every_script_that_builds_says_when_no_rust_is_found() {
    let bare = bare_path("no-cargo");
    let nowhere = bare.join("no-cargo-home");
    for name in ["leakscope", "build-wasm.sh", "test.sh"] {
        let out = script(name, &[], bare.to_str().unwrap(), Some(&nowhere));
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let said = text(&out);
        assert!(
            said.contains("no Rust toolchain found") && said.contains("./scripts/install.sh"),
            "{name}: {said}"
        );
    }
}

#[test]
fn a_rust_older_than_rust_version_is_named_with_what_to_do() {
    let dir = bare_path("old-rust");
    for (tool, says) in [
        ("rustc", "rustc 1.80.1 (3f5fd8dd4 2024-08-06)"),
        ("cargo", "cargo 1.80.1"),
    ] {
        let file = dir.join(tool);
        std::fs::write(&file, format!("#!/bin/sh\necho '{says}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The rust-version Cargo.toml asks for, as cargo read it.
    let wanted = env!("CARGO_PKG_RUST_VERSION");
    let path = dir.to_str().unwrap();
    for name in ["leakscope", "build-wasm.sh", "test.sh"] {
        let out = script(name, &[], path, Some(&dir));
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {said}");
        assert!(
            said.contains(&format!("needs Rust {wanted} or later")) && said.contains("found 1.80.1"),
            "{name}: {said}"
        );
        // Not rustup's: install.sh puts rustup's toolchain first on PATH.
        assert!(said.contains("does not come from rustup"), "{name}: {said}");
    }
}

#[test]
fn install_refuses_an_option_it_does_not_know() {
    let bare = bare_path("install");
    let out = script("install.sh", &["--test"], bare.to_str().unwrap(), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("unknown option '--test' (the only one is --tests)"),
        "{}",
        text(&out)
    );
}
