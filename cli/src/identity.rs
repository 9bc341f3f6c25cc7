//! `weida id new|show`, and the identity every other role presents. Keys are made, kept and
//! checked (owner-only modes) by the core's `Identity`; this file only chooses the directory
//! and refuses to overwrite one.

use std::path::{Path, PathBuf};

use weida::Identity;

use crate::args::IdCommand;
use crate::exit::Failure;

/// Runs `weida id ...`: the fingerprint goes to stdout alone, so `$(weida id show)` is a pin.
pub(crate) fn run(cmd: IdCommand) -> Result<(), Failure> {
    match cmd {
        IdCommand::New { dir, force } => {
            let dir = dir.map_or_else(default_dir, Ok)?;
            let id = create(&dir, force)?;
            eprintln!("created identity in {}", dir.display());
            println!("{}", id.fingerprint());
        }
        IdCommand::Show { dir } => {
            let dir = dir.map_or_else(default_dir, Ok)?;
            let id = load(&dir)?;
            eprintln!("identity in {}", dir.display());
            println!("{}", id.fingerprint());
        }
    }
    Ok(())
}

/// A fresh key saved in `dir`. Without `force`, a directory that holds anything is refused:
/// replacing a key changes the fingerprint every peer pins, and cannot be undone.
fn create(dir: &Path, force: bool) -> Result<Identity, Failure> {
    if !force && !is_empty_or_missing(dir)? {
        let what = match Identity::load(dir) {
            Ok(existing) => format!("holds the identity {}", existing.fingerprint()),
            Err(_) => "is not empty".to_string(),
        };
        return Err(Failure::msg(format!(
            "{} {what}; pass --force to replace it (peers that pin the old key will refuse the new one)",
            dir.display()
        )));
    }
    let id = Identity::ephemeral();
    id.save(dir).map_err(|e| {
        Failure::from(e).context(format!("saving an identity in {}", dir.display()))
    })?;
    Ok(id)
}

/// The identity in `dir`, with the directory named in the error (the core's `Io` error for a
/// missing directory does not name it) and the command that makes one.
pub(crate) fn load(dir: &Path) -> Result<Identity, Failure> {
    Identity::load(dir).map_err(|e| {
        let f = Failure::from(e).context(format!("loading the identity in {}", dir.display()));
        if dir.exists() {
            f
        } else {
            f.hint(format!("create one with `weida id new {}`", dir.display()))
        }
    })
}

/// `--identity DIR`, or a new ephemeral key.
pub(crate) fn load_or_ephemeral(dir: Option<&Path>) -> Result<Identity, Failure> {
    match dir {
        Some(d) => load(d),
        None => Ok(Identity::ephemeral()),
    }
}

fn is_empty_or_missing(dir: &Path) -> Result<bool, Failure> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Failure::from(e).context(format!("reading {}", dir.display()))),
    }
}

/// `$XDG_CONFIG_HOME/weida/identity`, else `$HOME/.config/weida/identity`.
fn default_dir() -> Result<PathBuf, Failure> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".config"),
            None => {
                return Err(Failure::msg(
                    "neither XDG_CONFIG_HOME nor HOME is set: name the directory",
                ))
            }
        },
    };
    Ok(base.join("weida").join("identity"))
}
