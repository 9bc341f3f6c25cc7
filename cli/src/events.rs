//! `--reconnect` and `--events` of the client roles (`req`, `push`, `sub`): whether a lost
//! peer is redialled, and each `PeerEvent` as one JSON line on stderr, for a script to follow.

use clap::{Args, ValueEnum};
use serde_json::json;
use weida::{PeerEvent, PeerEvents, ReconnectPolicy};

/// What the client roles take about a peer that goes away.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReconnectArgs {
    /// Redial a peer whose connection was lost (`always`: from 100 ms, doubling to 30 s, until
    /// it is back; `never`: the next operation fails with status 5, as a peer restart did
    /// before redial).
    #[arg(long, value_enum, default_value_t = Reconnect::Always)]
    pub(crate) reconnect: Reconnect,
    /// Print each connection event (connected, lost, retrying, gave_up) as a JSON line on
    /// stderr.
    #[arg(long)]
    pub(crate) events: bool,
    /// Do not wait for the peer to be there: record its address and dial it in the
    /// background, so this command may start before the listener (ZeroMQ's
    /// connect-before-bind). The first message then waits for the peer, bounded by --timeout.
    #[arg(long)]
    pub(crate) later: bool,
}

/// `--reconnect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Reconnect {
    Always,
    Never,
}

impl ReconnectArgs {
    /// The runtime's policy.
    pub(crate) fn policy(&self) -> ReconnectPolicy {
        match self.reconnect {
            Reconnect::Always => ReconnectPolicy::default(),
            Reconnect::Never => ReconnectPolicy::never(),
        }
    }

    /// With `--events`, prints `events` on stderr until the endpoint is gone.
    pub(crate) fn follow(&self, events: PeerEvents) {
        if self.events {
            tokio::spawn(print(events));
        }
    }
}

async fn print(mut events: PeerEvents) {
    while let Some(e) = events.next().await {
        eprintln!("{}", line(e));
    }
}

/// One event as the JSON line `--events` prints.
fn line(e: Result<PeerEvent, weida::Missed>) -> serde_json::Value {
    let e = match e {
        Ok(e) => e,
        Err(m) => return json!({ "event": "missed", "missed": m.0 }),
    };
    let mut v = json!({ "event": e.name(), "url": e.url() });
    match e {
        PeerEvent::Connected { fingerprint, .. } => {
            v["fingerprint"] = json!(fingerprint.map(|f| f.to_string()));
        }
        PeerEvent::Lost { cause, .. } | PeerEvent::GaveUp { cause, .. } => {
            v["cause"] = json!(cause.name());
            v["reason"] = json!(cause.to_string());
        }
        PeerEvent::Retrying { attempt, delay, .. } => {
            v["attempt"] = json!(attempt);
            v["delay_ms"] = json!(delay.as_millis() as u64);
        }
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_json_object_naming_its_kind() {
        let l = line(Ok(PeerEvent::Retrying {
            url: "weida://x/y".into(),
            attempt: 2,
            delay: std::time::Duration::from_millis(200),
        }));
        assert_eq!(
            l,
            json!({"event": "retrying", "url": "weida://x/y", "attempt": 2, "delay_ms": 200})
        );
        assert_eq!(
            line(Err(weida::Missed(3))),
            json!({"event": "missed", "missed": 3})
        );
    }
}
