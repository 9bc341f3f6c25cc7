//! `weida`, the command-line tool: serve (`rep`, `pull`), dial (`req`, `push`), deal work the
//! other way round (`push --bind`, `pull --connect`), publish and subscribe (`pub`, `sub`), be
//! one end of a pair (`pair`), measure (`bench`) and manage identities (`id`). Behaviour lives
//! in the core crate; this binary parses, prints, and maps errors to exit statuses
//! (cli/README.md).

mod args;
mod bench;
mod bound_push;
mod client;
mod events;
mod exit;
mod handlers;
mod identity;
mod input;
mod man;
mod output;
mod pair;
mod progress;
mod pubsub;
mod serve;
mod signal;

use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command};
use crate::exit::Failure;
use crate::signal::Stop;

fn main() -> ExitCode {
    // Parse errors exit here with clap's status 2; --help and --version with 0.
    let cli = Cli::parse();
    progress::init(cli.command.progress_forced());
    let result = match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "weida", &mut std::io::stdout());
            Ok(())
        }
        Command::Man { dir } => man::run(dir.as_deref()),
        Command::Id(cmd) => identity::run(cmd),
        other => run_async(other),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprint!("{}", failure.report());
            ExitCode::from(failure.status())
        }
    }
}

/// Runs a networked command on one current-thread tokio runtime: the flavour the core is
/// measured fastest on (docs/ARCHITECTURE.md §5), and enough for one tool doing one thing.
fn run_async(command: Command) -> Result<(), Failure> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = tokio.block_on(async move {
        let mut stop = Stop::new()?;
        match command {
            Command::Rep(a) => serve::rep(a, &mut stop).await,
            Command::Pull(a) => serve::pull(a, &mut stop).await,
            Command::Serve(a) => handlers::serve(a, &mut stop).await,
            Command::Req(a) => client::req(a, &mut stop).await,
            Command::Respond(a) => serve::rep(a, &mut stop).await,
            Command::Bus(a) => serve::bus(a, &mut stop).await,
            Command::Pair(a) => pair::run(a, &mut stop).await,
            Command::Survey(a) => client::survey(a, &mut stop).await,
            Command::Push(a) => client::push(a, &mut stop).await,
            Command::Pub(a) => pubsub::publish(a, &mut stop).await,
            Command::Sub(a) => pubsub::subscribe(a, &mut stop).await,
            Command::Bench(a) => stop.interrupt(bench::run(a)).await,
            Command::Id(_) | Command::Completions { .. } | Command::Man { .. } => {
                unreachable!("run without tokio")
            }
        }
    });
    // A read of stdin parked on tokio's blocking pool would keep a plain drop waiting for
    // input that may never come (an error ended the command before its input did).
    tokio.shutdown_timeout(Duration::from_millis(100));
    result
}
