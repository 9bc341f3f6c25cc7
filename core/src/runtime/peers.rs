//! The peers of a dialling endpoint: one slot per address it connected, each live with a link
//! or down while its redial task works (runtime/redial.rs), picked round-robin per message.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::events::EventSender;
use crate::address::Address;
use crate::connection::link::{LaneCache, Link};
use crate::error::{Error, LossCause, Result};

/// The slots of a dialling endpoint, picked round-robin per message.
#[derive(Default)]
pub(crate) struct PeerSet {
    links: Mutex<Links>,
    /// Wakes a pick that waits for a live link: a slot went live, was given up or removed.
    changed: Notify,
    /// The endpoint's [`crate::PeerEvent`]s.
    pub(crate) events: EventSender,
}

/// The slots and whose turn is next: one lock for both, so a pick is one lock and no other
/// atomic operation.
#[derive(Default)]
struct Links {
    all: Vec<Entry>,
    next: usize,
}

struct Entry {
    /// The address as the application connected it (what `disconnect` names).
    address: Address,
    /// The slot's current link: live, or the lost one until a redial replaces it; none before
    /// a slot recorded by `connect_later` first goes live.
    link: Option<Arc<Link>>,
    /// This endpoint's handle to the link's lane ([`Link::lane_try_send`]).
    lane: LaneCache,
    /// The slot's task, which watches its connection and redials it.
    redial: Option<AbortHandle>,
    /// The task may still bring the slot back (false once given up, and under
    /// `ReconnectPolicy::never()`): a pick waits for it.
    hopeful: bool,
    /// Why the slot was given up, when it was: what a pick then reports.
    given_up: Option<LossCause>,
}

impl Entry {
    /// Live: its link, with the set's handle to its lane. Down: why, if known.
    fn state(
        &mut self,
        fast: bool,
    ) -> std::result::Result<(&Arc<Link>, &mut LaneCache), Option<LossCause>> {
        if let Some(c) = &self.given_up {
            return Err(Some(c.clone()));
        }
        match &self.link {
            None => Err(None),
            Some(l) => {
                let ended = match fast {
                    true => l.ended(),
                    false => l.loss(),
                };
                match ended {
                    None => Ok((l, &mut self.lane)),
                    Some(c) => Err(Some(c)),
                }
            }
        }
    }
}

/// The first live slot of `l` from the turn `start` on, offered to `f` (`try_pick`, each
/// message of `try_deal`): its distance from `start` and what `f` made of it; with none live,
/// the last loss seen and whether some slot is being redialled.
fn first_live<R>(
    l: &mut [Entry],
    start: usize,
    f: impl FnOnce(&Arc<Link>, &mut LaneCache) -> R,
) -> std::result::Result<(usize, R), (Option<LossCause>, bool)> {
    let (mut last, mut redialling) = (None, false);
    let n = l.len();
    for i in 0..n {
        let e = &mut l[(start + i) % n];
        let hopeful = e.hopeful;
        match e.state(true) {
            Ok((link, lane)) => return Ok((i, f(link, lane))),
            Err(c) => {
                redialling |= hopeful;
                last = c.or(last);
            }
        }
    }
    Err((last, redialling))
}

/// What [`PeerSet::try_deal`]'s caller did with the link it was offered.
pub(crate) enum Deal {
    /// Took it for one message: the next is offered the next link in turn.
    Took,
    /// Took nothing: the run ends, the turn stays.
    Stop,
    /// The run ends with this error.
    Failed(Error),
}

/// What a pick found when no link is live.
pub(crate) enum Down {
    /// No slot at all: the endpoint never connected (or disconnected everything).
    Empty,
    /// Every slot is down and some redial may bring one back: the last loss (none when no
    /// slot has been live yet).
    Redialling(Option<LossCause>),
    /// Every slot is down and given up: the last loss.
    Lost(LossCause),
}

impl PeerSet {
    /// A slot for `address`, live on `link`, or down until its task (`connect_later`) dials it.
    pub(crate) fn add(
        &self,
        address: Address,
        link: Option<Arc<Link>>,
        redial: Option<AbortHandle>,
    ) {
        let l = &mut self.links.lock().unwrap().all;
        if let Some(i) = l.iter().position(|e| e.address == address) {
            if let Some(t) = l.swap_remove(i).redial {
                t.abort();
            }
        }
        let hopeful = redial.is_some() || link.is_none();
        l.push(Entry {
            address,
            link,
            lane: None,
            hopeful,
            redial,
            given_up: None,
        });
        self.changed.notify_waiters();
    }

    /// `task` watches the slot of `address` from now on, and redials it if `hopeful`.
    pub(crate) fn redialled_by(&self, address: &Address, task: AbortHandle, hopeful: bool) {
        let mut guard = self.links.lock().unwrap();
        match guard.all.iter_mut().find(|e| &e.address == address) {
            Some(e) => {
                e.redial = Some(task);
                e.hopeful = hopeful;
            }
            None => task.abort(),
        }
    }

    /// A redial brought `address` back on `link`; false if the slot is gone (disconnected).
    pub(crate) fn replace(&self, address: &Address, link: Arc<Link>) -> bool {
        let mut guard = self.links.lock().unwrap();
        let Some(e) = guard.all.iter_mut().find(|e| &e.address == address) else {
            return false;
        };
        e.link = Some(link);
        e.lane = None;
        drop(guard);
        self.changed.notify_waiters();
        true
    }

    /// The redial of `address` gave up for `cause`: its slot stays, down, and a pick no
    /// longer waits for it but reports `cause`.
    pub(crate) fn gave_up(&self, address: &Address, cause: LossCause) {
        let mut guard = self.links.lock().unwrap();
        if let Some(e) = guard.all.iter_mut().find(|e| &e.address == address) {
            e.hopeful = false;
            e.given_up = Some(cause);
        }
        drop(guard);
        self.changed.notify_waiters();
    }

    /// Removes the slot of `address` and stops its redial: None if there was no slot, else
    /// its current link, if it had one.
    pub(crate) fn remove(&self, address: &Address) -> Option<Option<Arc<Link>>> {
        let l = &mut self.links.lock().unwrap().all;
        let i = l.iter().position(|e| &e.address == address)?;
        let e = l.swap_remove(i);
        if let Some(t) = e.redial {
            t.abort();
        }
        self.changed.notify_waiters();
        Some(e.link)
    }

    /// Whether a slot for `address` exists.
    pub(crate) fn has(&self, address: &Address) -> bool {
        let guard = self.links.lock().unwrap();
        guard.all.iter().any(|e| &e.address == address)
    }

    /// Removes every slot and stops every redial (the endpoint is dropped).
    pub(crate) fn take_all(&self) -> Vec<Arc<Link>> {
        let all = std::mem::take(&mut self.links.lock().unwrap().all);
        self.changed.notify_waiters();
        all.into_iter()
            .filter_map(|e| {
                if let Some(t) = e.redial {
                    t.abort();
                }
                e.link
            })
            .collect()
    }

    /// Every live slot's link (a survey asks each).
    pub(crate) fn live_links(&self) -> Vec<Arc<Link>> {
        self.links
            .lock()
            .unwrap()
            .all
            .iter()
            .filter(|e| e.given_up.is_none())
            .filter_map(|e| e.link.clone())
            .filter(|l| l.loss().is_none())
            .collect()
    }

    /// Live slots.
    pub(crate) fn live(&self) -> usize {
        self.links
            .lock()
            .unwrap()
            .all
            .iter()
            .filter(|e| e.given_up.is_none() && e.link.as_ref().is_some_and(|l| l.loss().is_none()))
            .count()
    }

    /// Wakes on the next change of the slots (one went live, was given up or removed).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Offers the next live link, with this set's handle to its lane, round-robin, to `f`;
    /// the turn passes on only if `f` took it (returned Some), so a caller that then falls
    /// back to [`PeerSet::pick`] picks the same link. `Ok(None)` also when every slot is down
    /// and some is being redialled (`pick` waits for it); errors as `pick` does otherwise.
    pub(crate) fn try_pick<R>(
        &self,
        f: impl FnOnce(&Arc<Link>, &mut LaneCache) -> Option<R>,
    ) -> Result<Option<R>> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Error::NotConnected);
        }
        match first_live(l, *next, f) {
            Ok((i, r)) => {
                if r.is_some() {
                    *next = next.wrapping_add(i + 1);
                }
                Ok(r)
            }
            Err((_, true)) => Ok(None),
            Err((last, false)) => Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed))),
        }
    }

    /// [`PeerSet::try_pick`] for a run of messages under one lock: `f` is offered the next
    /// live link in turn, again and again, the turn passing on each time it took one
    /// ([`Deal::Took`]), until it stops ([`Deal::Stop`]: the turn stays, so a caller that then
    /// falls back to [`PeerSet::pick`] picks the same link) or fails (the turn passes on, as
    /// `try_pick`'s does). `f` runs under the lock: it must not block or call back into the
    /// peer set (`send_many` runs the caller's iterator before). How many it took, and
    /// the error that ended the run; with none taken, the errors of `try_pick`.
    pub(crate) fn try_deal(
        &self,
        mut f: impl FnMut(&Arc<Link>, &mut LaneCache) -> Deal,
    ) -> (usize, Result<()>) {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return (0, Err(Error::NotConnected));
        }
        let mut took = 0;
        loop {
            let start = *next;
            match first_live(l, start, &mut f) {
                Ok((i, Deal::Took)) => {
                    *next = start.wrapping_add(i + 1);
                    took += 1;
                }
                Ok((_, Deal::Stop)) => return (took, Ok(())),
                // As `try_pick`: a link that answered, even with an error, had its turn.
                Ok((i, Deal::Failed(e))) => {
                    *next = start.wrapping_add(i + 1);
                    return (took, Err(e));
                }
                // No link is live: what `try_pick` says, unless some were taken already.
                Err(_) if took > 0 => return (took, Ok(())),
                Err((_, true)) => return (0, Ok(())),
                Err((last, false)) => {
                    let cause = last.unwrap_or(LossCause::PeerClosed);
                    return (0, Err(Error::ConnectionLost(cause)));
                }
            }
        }
    }

    /// The next live link, round-robin, or what there is instead.
    pub(crate) fn pick_now(&self) -> std::result::Result<Arc<Link>, Down> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Down::Empty);
        }
        let start = *next;
        *next = start.wrapping_add(1);
        let mut last = None;
        let mut redialling = false;
        let n = l.len();
        for i in 0..n {
            let e = &mut l[(start + i) % n];
            let hopeful = e.hopeful;
            match e.state(false) {
                Ok((link, _)) => return Ok(link.clone()),
                Err(c) => {
                    redialling |= hopeful;
                    last = c.or(last);
                }
            }
        }
        Err(match redialling {
            true => Down::Redialling(last),
            false => Down::Lost(last.unwrap_or(LossCause::PeerClosed)),
        })
    }

    /// The next live link, round-robin. When every slot is down and some is being redialled,
    /// waits for one to come back, at most `within` (then `Timeout`). `NotConnected` when the
    /// endpoint has no slot; the last loss when every slot is down and given up. Cancel-safe.
    pub(crate) async fn pick(&self, within: Option<Duration>) -> Result<Arc<Link>> {
        let deadline = within.map(|d| tokio::time::Instant::now() + d);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let last = match self.pick_now() {
                Ok(link) => return Ok(link),
                Err(Down::Empty) => return Err(Error::NotConnected),
                Err(Down::Lost(c)) => return Err(Error::ConnectionLost(c)),
                Err(Down::Redialling(c)) => c,
            };
            match deadline {
                Some(at) => {
                    if tokio::time::timeout_at(at, changed).await.is_err() {
                        return Err(Error::Timeout { last_loss: last });
                    }
                }
                None => changed.await,
            }
        }
    }
}
