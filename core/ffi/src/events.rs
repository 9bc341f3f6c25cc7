//! A dialling endpoint's `PeerEvent`s as every binding hands them out: one flat record per
//! event, its kind a name, a fall-behind a `missed` event of its own, so a language iterates
//! one type and switches on `kind`.

use std::time::Duration;

use weida::{Missed, PeerEvent, PeerEvents};

/// The kinds of [`Event`], as every binding spells them.
pub const KINDS: [&str; 5] = ["connected", "lost", "retrying", "gave_up", "missed"];

/// One event of a dialling endpoint's addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// One of [`KINDS`].
    pub kind: &'static str,
    /// The address it is about (empty for `missed`).
    pub url: String,
    /// `connected`: the key the peer proved (None over a local transport).
    pub fingerprint: Option<String>,
    /// `lost`, `gave_up`: the loss cause's name (`weida::LossCause::NAMES`).
    pub cause: Option<&'static str>,
    /// `lost`, `gave_up`: the cause as a sentence.
    pub reason: Option<String>,
    /// `retrying`: which attempt since the loss, from 1.
    pub attempt: Option<u32>,
    /// `retrying`: how long it waits first.
    pub delay: Option<Duration>,
    /// `missed`: how many events this reader fell behind by.
    pub missed: Option<u64>,
}

impl Event {
    fn blank(kind: &'static str, url: String) -> Self {
        Self {
            kind,
            url,
            fingerprint: None,
            cause: None,
            reason: None,
            attempt: None,
            delay: None,
            missed: None,
        }
    }

    fn of(e: Result<PeerEvent, Missed>) -> Self {
        let e = match e {
            Ok(e) => e,
            Err(Missed(n)) => {
                return Self {
                    missed: Some(n),
                    ..Self::blank("missed", String::new())
                }
            }
        };
        let kind = e.name();
        let url = e.url().to_string();
        match e {
            PeerEvent::Connected { fingerprint, .. } => Self {
                fingerprint: fingerprint.map(|f| f.to_string()),
                ..Self::blank(kind, url)
            },
            PeerEvent::Lost { cause, .. } | PeerEvent::GaveUp { cause, .. } => Self {
                cause: Some(cause.name()),
                reason: Some(cause.to_string()),
                ..Self::blank(kind, url)
            },
            PeerEvent::Retrying { attempt, delay, .. } => Self {
                attempt: Some(attempt),
                delay: Some(delay),
                ..Self::blank(kind, url)
            },
            _ => Self::blank(kind, url),
        }
    }
}

/// A binding's reader of an endpoint's events.
pub struct Events(tokio::sync::Mutex<PeerEvents>);

impl Events {
    /// Reads `events`.
    pub fn new(events: PeerEvents) -> Self {
        Self(tokio::sync::Mutex::new(events))
    }

    /// The next event; None once the endpoint is gone. Cancel-safe.
    pub async fn next(&self) -> Option<Event> {
        self.0.lock().await.next().await.map(Event::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_one_record_whose_kind_is_listed() {
        let all = [
            Ok(PeerEvent::Connected {
                url: "u".into(),
                fingerprint: None,
            }),
            Ok(PeerEvent::Lost {
                url: "u".into(),
                cause: weida::LossCause::Reset,
            }),
            Ok(PeerEvent::Retrying {
                url: "u".into(),
                attempt: 2,
                delay: Duration::from_millis(200),
            }),
            Ok(PeerEvent::GaveUp {
                url: "u".into(),
                cause: weida::LossCause::PeerChanged,
            }),
            Err(Missed(7)),
        ];
        let kinds: Vec<_> = all.into_iter().map(Event::of).collect();
        assert_eq!(kinds.iter().map(|e| e.kind).collect::<Vec<_>>(), KINDS);
        assert_eq!(kinds[1].cause, Some("reset"));
        assert_eq!(kinds[2].attempt, Some(2));
        assert_eq!(kinds[3].cause, Some("peer_changed"));
        assert_eq!(kinds[4].missed, Some(7));
    }
}
