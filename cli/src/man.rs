//! `weida man`: the manual pages, rendered by clap_mangen from the same `Cli` definition as
//! `--help` and the completions, so they cannot drift from them. weida(1) adds the exit
//! statuses (`exit::STATUSES`) and the address forms as sections of their own.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Command, CommandFactory};
use clap_mangen::Man;
use roff::{bold, roman, Roff};

use crate::args::Cli;
use crate::exit::{self, Failure};

/// Prints weida(1) on stdout, or writes it and a page per command into `dir` and prints the
/// paths written.
pub(crate) fn run(dir: Option<&Path>) -> Result<(), Failure> {
    // No `help` command: it has no page (clap_mangen's own generate_to does the same).
    let mut cli = Cli::command().disable_help_subcommand(true);
    // Gives each command its display name (`weida-id-new`), which names its page.
    cli.build();
    let Some(dir) = dir else {
        let mut out = io::stdout().lock();
        return main_page(&cli, &mut out)
            .and_then(|()| out.flush())
            .map_err(Failure::output);
    };
    let written = (|| {
        std::fs::create_dir_all(dir)?;
        let mut written = vec![write_page(dir, &cli, main_page)?];
        for sub in pages(&cli) {
            written.push(write_page(dir, sub, command_page)?);
        }
        Ok::<_, io::Error>(written)
    })()
    .map_err(|e| Failure::from(e).context(format!("writing manual pages in {}", dir.display())))?;
    let mut out = io::stdout().lock();
    for path in written {
        writeln!(out, "{}", path.display()).map_err(Failure::output)?;
    }
    Ok(())
}

/// Every command below `cmd`: each subcommand, and theirs (`id new`).
fn pages(cmd: &Command) -> Vec<&Command> {
    let mut out = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push(sub);
        out.extend(pages(sub));
    }
    out
}

/// Renders `cmd`'s page with `render` into `dir`, named by clap_mangen (`weida-rep.1`).
fn write_page(
    dir: &Path,
    cmd: &Command,
    render: fn(&Command, &mut dyn Write) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let path = dir.join(Man::new(cmd.clone()).get_filename());
    let mut file = io::BufWriter::new(std::fs::File::create(&path)?);
    render(cmd, &mut file)?;
    file.flush()?;
    Ok(path)
}

/// weida(1): clap_mangen's sections, with EXIT STATUS and ADDRESSES in place of the
/// help's epilogue (which it would print as one paragraph).
fn main_page(cli: &Command, w: &mut dyn Write) -> io::Result<()> {
    let man = Man::new(cli.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    man.render_subcommands_section(w)?;
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (status, meaning) in exit::STATUSES {
        roff.control("TP", []);
        roff.text([bold(status.to_string())]);
        // Where the help wraps a meaning, the page fills it to its own width.
        roff.text([roman(meaning.replace('\n', " "))]);
    }
    roff.control("SH", ["ADDRESSES"]);
    // As the help breaks them: an address is not to be hyphenated.
    roff.control("nf", []);
    for line in exit::ADDRESSES.trim_start_matches("Addresses: ").lines() {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
    see_also(&mut roff, pages(cli).iter().map(|c| page_name(c)));
    roff.to_writer(w)?;
    man.render_version_section(w)
}

/// A command's page: clap_mangen's, pointing back at weida(1) for the exit statuses.
fn command_page(cmd: &Command, w: &mut dyn Write) -> io::Result<()> {
    Man::new(cmd.clone()).render(w)?;
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    roff.text([roman("As listed in weida(1).")]);
    see_also(&mut roff, ["weida".to_string()]);
    roff.to_writer(w)
}

fn see_also(roff: &mut Roff, names: impl IntoIterator<Item = String>) {
    let refs: Vec<String> = names.into_iter().map(|n| format!("{n}(1)")).collect();
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(refs.join(", "))]);
}

/// The page's name: the command's display name (`weida-id-new`).
fn page_name(cmd: &Command) -> String {
    cmd.get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string()
}
